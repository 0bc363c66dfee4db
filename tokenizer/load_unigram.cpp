// Loading a SentencePiece tokenizer.json: model Unigram, its normalizer (a Sequence of
// Precompiled, Replace, Strip, Prepend) and pre-tokenizer (Metaspace, or WhitespaceSplit then
// Metaspace), as transformers' converters write them for XLM-RoBERTa, CamemBERT and others.
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "json_fields.h"
#include "tokenizer_impl.h"
#include "unicode.h"

namespace roberta {

using json = nlohmann::json;
using enum ErrorKind;
using json_fields::field;
using json_fields::get_or;

namespace {

// A single character, as a JSON string must hold it for Metaspace's replacement (a Rust char).
std::string one_char(const json& v, const std::string& where) {
  if (!v.is_string()) throw Error(where + ": expected a string of one character", kInvalidModel);
  const std::string s = v.get<std::string>();
  size_t i = 0;
  if (s.empty() || unicode::find_invalid_utf8(s) || (unicode::next_code_point(s, i), i != s.size()))
    throw Error(where + ": expected one character, got \"" + s + "\"", kInvalidModel);
  return s;
}

// Replace's pattern: {"String": s}, or {"Regex": r} for the regexes transformers' converters
// write: a plain string, or one character repeated ("X{n,}", "X+", as " {2,}").
void parse_replace_pattern(const json& pattern, SpmNormalizerStep& step, const std::string& where) {
  // (an empty pattern matches between every two characters in HF: content inserted everywhere)
  const auto empty = [&] { return Error(where + ".pattern: an empty pattern is not supported", kInvalidModel); };
  if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string()) {
    step.pattern = pattern["String"].get<std::string>();
    if (step.pattern.empty()) throw empty();
    return;
  }
  if (!(pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()))
    throw Error(where + ".pattern: expected {\"String\": ...} or {\"Regex\": ...}", kInvalidModel);
  const std::string r = pattern["Regex"].get<std::string>();
  const auto unsupported = [&] {
    return Error(where + ".pattern: the regex \"" + r +
                     "\" is not supported (a plain string, or one character repeated: \"X{n,}\", \"X+\")",
                 kInvalidModel);
  };
  static const std::string kMeta = "\\.^$|?*+()[]{}";
  size_t i = 0;
  std::string literal;
  while (i < r.size() && kMeta.find(r[i]) == std::string::npos) literal += r[i++];
  if (i == r.size()) {
    if (literal.empty()) throw empty();
    step.pattern = literal;
    return;
  }
  // one character (maybe escaped) then a quantifier (none: the escaped character alone)
  std::string unit;
  if (r[0] == '\\' && r.size() >= 2 && kMeta.find(r[1]) != std::string::npos) {
    unit = std::string(1, r[1]);
    i = 2;
  } else if (!literal.empty()) {
    size_t k = 0;
    unicode::next_code_point(literal, k);
    if (k != literal.size() || unicode::find_invalid_utf8(literal)) throw unsupported();
    unit = literal;
  } else {
    throw unsupported();
  }
  const std::string quantifier = r.substr(i);
  if (quantifier.empty() && i == 2) {
    step.pattern = unit;
    return;
  }
  if (quantifier == "+") {
    step.min_repeat = 1;
  } else if (quantifier.size() >= 4 && quantifier.front() == '{' && quantifier.ends_with(",}")) {
    const std::string n = quantifier.substr(1, quantifier.size() - 3);
    // (X{0,} would match the empty string between characters too)
    if (n.empty() || n.size() > 4 || n.find_first_not_of("0123456789") != std::string::npos || std::stoul(n) == 0)
      throw unsupported();
    step.min_repeat = std::stoul(n);
  } else {
    throw unsupported();
  }
  step.pattern = unit;
}

void parse_normalizer(const json& n, const std::string& where, std::vector<SpmNormalizerStep>& steps,
                      int depth = 0) {
  const std::string type = get_or<std::string>(n, "type", "", where);
  if (type == "Sequence") {
    if (depth >= 8) throw Error(where + ": Sequences nested more than 8 deep are not supported", kInvalidModel);
    const json& list = field(n, "normalizers", where);
    if (!list.is_array()) throw Error(where + ".normalizers must be an array", kInvalidModel);
    for (size_t i = 0; i < list.size(); ++i)
      parse_normalizer(list[i], where + ".normalizers[" + std::to_string(i) + "]", steps, depth + 1);
    return;
  }
  SpmNormalizerStep step{.kind = SpmNormalizerStep::kPrecompiled};
  if (type == "Precompiled") {
    const json& charsmap = field(n, "precompiled_charsmap", where);
    if (!charsmap.is_string()) throw Error(where + ".precompiled_charsmap must be a base64 string", kInvalidModel);
    try {
      step.precompiled = std::make_shared<Precompiled>(decode_base64(charsmap.get<std::string>()));
    } catch (const std::invalid_argument& e) {
      throw Error(where + ".precompiled_charsmap: " + e.what(), kInvalidModel);
    }
  } else if (type == "Replace") {
    step.kind = SpmNormalizerStep::kReplace;
    parse_replace_pattern(field(n, "pattern", where), step, where);
    const json& content = field(n, "content", where);
    if (!content.is_string()) throw Error(where + ".content must be a string", kInvalidModel);
    step.content = content.get<std::string>();
  } else if (type == "Strip") {
    step.kind = SpmNormalizerStep::kStrip;
    step.left = get_or<bool>(n, "strip_left", false, where);
    step.right = get_or<bool>(n, "strip_right", false, where);
  } else if (type == "Prepend") {
    step.kind = SpmNormalizerStep::kPrepend;
    const json& prepend = field(n, "prepend", where);
    if (!prepend.is_string()) throw Error(where + ".prepend must be a string", kInvalidModel);
    step.content = prepend.get<std::string>();
    // (HF's prepend of nothing still moves the first character's span to the string's start)
    if (step.content.empty()) throw Error(where + ".prepend: an empty string is not supported", kInvalidModel);
  } else {
    throw Error(where + " \"" + type +
                    "\" is not supported (a Unigram tokenizer's: Precompiled, Replace, Strip, Prepend, Sequence)",
                kInvalidModel);
  }
  steps.push_back(std::move(step));
}

}  // namespace

MetaspaceSettings parse_metaspace(const json& m, const std::string& where) {
  MetaspaceSettings s{.replacement = one_char(field(m, "replacement", where), where + ".replacement"),
                      .prepend_scheme = UnigramModel::Prepend::kAlways,
                      .split = get_or<bool>(m, "split", true, where)};
  const std::string scheme = get_or<std::string>(m, "prepend_scheme", "always", where);
  if (scheme == "first")
    s.prepend_scheme = UnigramModel::Prepend::kFirst;
  else if (scheme == "never")
    s.prepend_scheme = UnigramModel::Prepend::kNever;
  else if (scheme != "always")
    throw Error(where + ".prepend_scheme \"" + scheme + "\" is not one of always, first, never", kInvalidModel);
  // The older add_prefix_space: false means never, and HF refuses it beside another scheme (the
  // default, always, included).
  if (!get_or<bool>(m, "add_prefix_space", true, where)) {
    if (s.prepend_scheme != UnigramModel::Prepend::kNever)
      throw Error(where + ": add_prefix_space false does not match prepend_scheme \"" + scheme + "\"", kInvalidModel);
  }
  return s;
}

void parse_decoder_steps(const json& d, const std::string& where, std::vector<DecoderStep>& steps) {
  const std::string type = get_or<std::string>(d, "type", "", where);
  DecoderStep step{.kind = DecoderStep::kMetaspace};
  if (type == "Sequence") {
    const json& list = field(d, "decoders", where);
    if (!list.is_array()) throw Error(where + ".decoders must be an array", kInvalidModel);
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string at = where + ".decoders[" + std::to_string(i) + "]";
      if (get_or<std::string>(list[i], "type", "", at) == "Sequence")
        throw Error(at + ": a Sequence inside a Sequence is not supported", kInvalidModel);
      parse_decoder_steps(list[i], at, steps);
    }
    return;
  }
  if (type == "Metaspace") {
    const MetaspaceSettings m = parse_metaspace(d, where);
    step.pattern = m.replacement;
    step.drop_first = m.prepend_scheme != UnigramModel::Prepend::kNever;
  } else if (type == "Replace") {
    SpmNormalizerStep pattern{.kind = SpmNormalizerStep::kReplace};
    parse_replace_pattern(field(d, "pattern", where), pattern, where);
    if (pattern.min_repeat > 0 || pattern.pattern.empty())
      throw Error(where + ": only a Replace of a plain string is supported", kInvalidModel);
    step.kind = DecoderStep::kReplace;
    step.pattern = pattern.pattern;
    const json& content = field(d, "content", where);
    if (!content.is_string()) throw Error(where + ".content must be a string", kInvalidModel);
    step.content = content.get<std::string>();
  } else if (type == "ByteFallback") {
    step.kind = DecoderStep::kByteFallback;
  } else if (type == "Fuse") {
    step.kind = DecoderStep::kFuse;
  } else if (type == "Strip") {
    step.kind = DecoderStep::kStrip;
    step.pattern = one_char(field(d, "content", where), where + ".content");
    const auto count = [&](const char* key) {
      const json& v = field(d, key, where);
      if (!v.is_number_unsigned()) throw Error(where + "." + key + " must be a non-negative integer", kInvalidModel);
      return v.get<size_t>();
    };
    step.start = count("start");
    step.stop = count("stop");
  } else {
    throw Error(where + " \"" + type +
                    "\" is not supported (ByteLevel, WordPiece, Metaspace, or a Sequence of Replace, ByteFallback, "
                    "Fuse, Strip, Metaspace)",
                kInvalidModel);
  }
  steps.push_back(std::move(step));
}

void Tokenizer::Impl::load_unigram(const json& doc, const std::string& name) {
  const json& model = field(doc, "model", name);
  const std::string where = name + ": model";
  auto u = std::make_unique<UnigramModel>();
  const json& vocab = field(model, "vocab", where);
  if (!vocab.is_array()) throw Error(where + ".vocab: expected an array of [piece, score]", kInvalidModel);
  u->pieces.reserve(vocab.size());
  u->scores.reserve(vocab.size());
  for (size_t i = 0; i < vocab.size(); ++i) {
    const json& e = vocab[i];
    if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number())
      throw Error(where + ".vocab[" + std::to_string(i) + "]: expected [piece, score]", kInvalidModel);
    u->pieces.push_back(e[0].get<std::string>());
    u->scores.push_back(e[1].get<double>());
    if (unicode::find_invalid_utf8(u->pieces.back()))
      throw Error(where + ".vocab[" + std::to_string(i) + "]: the piece is not valid UTF-8", kInvalidModel);
  }
  if (model.contains("unk_id") && !model["unk_id"].is_null()) {
    const json& id = model["unk_id"];
    if (!id.is_number_integer() || id.get<int64_t>() < 0)
      throw Error(where + ".unk_id must be a non-negative integer or null", kInvalidModel);
    if (vocab.empty()) throw Error(where + ".vocab is empty but unk_id needs a piece", kInvalidModel);
    if (id.get<uint64_t>() >= vocab.size())
      throw Error(where + ".unk_id " + id.dump() + " is not below the vocabulary's size " +
                      std::to_string(vocab.size()), kInvalidModel);
    u->unk_id = id.get<int32_t>();
    unk_id = u->unk_id;
  }
  u->byte_fallback = get_or<bool>(model, "byte_fallback", false, where);
  u->finish();
  has_id.assign(u->pieces.size(), 1);
  tokens_by_id = u->pieces;
  ids_by_token.reserve(u->pieces.size());
  for (size_t id = 0; id < u->pieces.size(); ++id) ids_by_token[u->pieces[id]] = static_cast<int32_t>(id);

  if (doc.contains("normalizer") && !doc["normalizer"].is_null())
    parse_normalizer(doc["normalizer"], name + ": normalizer", u->normalizer);

  // The pre-tokenizer: Metaspace, alone or after WhitespaceSplit in a Sequence.
  const std::string pt_where = name + ": pre_tokenizer";
  if (!doc.contains("pre_tokenizer") || doc["pre_tokenizer"].is_null())
    throw Error(pt_where + " is missing (a Unigram tokenizer needs Metaspace)", kInvalidModel);
  const json* metaspace = &doc["pre_tokenizer"];
  std::string ms_where = pt_where;
  const std::string type = get_or<std::string>(*metaspace, "type", "", pt_where);
  if (type == "Sequence") {
    const json& list = field(*metaspace, "pretokenizers", pt_where);
    const auto type_of = [&](size_t i) { return get_or<std::string>(list[i], "type", "", pt_where); };
    if (list.is_array() && list.size() == 1 && type_of(0) == "Metaspace") {
      metaspace = &list[0];
    } else if (list.is_array() && list.size() == 2 && type_of(0) == "WhitespaceSplit" && type_of(1) == "Metaspace") {
      u->whitespace_split = true;
      metaspace = &list[1];
    } else {
      throw Error(pt_where + ": a Sequence is supported only as [Metaspace] or [WhitespaceSplit, Metaspace]",
                  kInvalidModel);
    }
    ms_where += ".pretokenizers[" + std::to_string(u->whitespace_split ? 1 : 0) + "]";
  } else if (type != "Metaspace") {
    throw Error(pt_where + " \"" + type + "\" is not supported (a Unigram tokenizer's: Metaspace)", kInvalidModel);
  }
  const MetaspaceSettings m = parse_metaspace(*metaspace, ms_where);
  u->replacement = m.replacement;
  u->prepend_scheme = m.prepend_scheme;
  u->split = m.split;
  unigram = std::move(u);
}

}  // namespace roberta
