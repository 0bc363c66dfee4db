// roberta::Tokenizer and roberta::Encoding for Python, with the names of Hugging Face's
// `tokenizers` package (Encoding.ids/tokens/offsets/attention_mask/..., encode, encode_batch,
// decode). The GIL is released while encoding and decoding.
#include <limits>
#include <optional>

#include "common.h"
#include "roberta/threads.h"
#include "roberta/tokenizer.h"

namespace roberta::python {
namespace {

TruncationStrategy parse_strategy(const std::string& s) {
  if (s == "longest_first") return TruncationStrategy::kLongestFirst;
  if (s == "only_first") return TruncationStrategy::kOnlyFirst;
  if (s == "only_second") return TruncationStrategy::kOnlySecond;
  throw Error("truncation strategy \"" + s + "\" is not one of longest_first, only_first, only_second");
}

Side parse_side(const std::string& s, const char* what) {
  if (s == "right") return Side::kRight;
  if (s == "left") return Side::kLeft;
  throw Error(std::string(what) + " \"" + s + "\" is not one of right, left");
}

EncodeOptions encode_options(bool add_special_tokens, std::optional<size_t> max_length, const std::string& strategy,
                             const std::string& side) {
  EncodeOptions o;
  o.add_special_tokens = add_special_tokens;
  if (max_length) {
    if (*max_length == 0) throw Error("max_length must be at least 1");
    o.max_length = *max_length;
  }
  o.truncation = parse_strategy(strategy);
  o.truncation_side = parse_side(side, "truncation side");
  return o;
}

// -1 (no word / no sequence) as None, as Hugging Face's Encoding gives them.
template <class T>
py::list ids_or_none(const std::vector<T>& v) {
  py::list out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = v[i] < 0 ? py::none() : py::object(py::int_(v[i]));
  return out;
}

// An index argument of the alignment queries, as tokenizers takes it (a usize): a negative one is
// an OverflowError naming the argument; one past any size answers None.
size_t index(const py::int_& value, const char* name) {
  const auto v = value.cast<long long>();
  if (v < 0) {
    const std::string message = std::string(name) + " must not be negative, got " + std::to_string(v);
    PyErr_SetString(PyExc_OverflowError, message.c_str());
    throw py::error_already_set();
  }
  return static_cast<size_t>(v);
}

int32_t word_index(const py::int_& value) {
  return static_cast<int32_t>(std::min<size_t>(index(value, "word_index"), std::numeric_limits<int32_t>::max()));
}

int sequence_index(const py::int_& value) {
  return static_cast<int>(std::min<size_t>(index(value, "sequence_index"), 1000));
}

const char* kEncodeDoc =
    "encode(sequence, pair=None, add_special_tokens=True, max_length=None,\n"
    "       truncation_strategy='longest_first', truncation_side='right') -> Encoding\n\n"
    "Tokenizes one text (or a pair: <s> A </s></s> B </s>). max_length truncates to that many tokens\n"
    "including the special ones. Raises InvalidInputError (a ValueError) for invalid UTF-8.";

// Encoding: one tokenized text.
void register_encoding(py::module_& m) {
  py::class_<Encoding>(m, "Encoding", "One tokenized text, as Hugging Face tokenizers' Encoding.")
      .def_property_readonly("ids", [](const Encoding& e) { return e.ids; }, "Token ids.")
      .def_property_readonly("type_ids", [](const Encoding& e) { return e.type_ids; }, "Token type ids.")
      .def_property_readonly("tokens", [](const Encoding& e) { return e.tokens; }, "Tokens as strings (byte-level, e.g. 'Ġworld').")
      .def_property_readonly("offsets", [](const Encoding& e) { return e.offsets; },
                             "(start, end) of each token in the text, in code points (Python string indices).")
      .def_property_readonly("byte_offsets", [](const Encoding& e) { return e.byte_offsets; },
                             "(start, end) of each token in the UTF-8 bytes of the text.")
      .def_property_readonly("attention_mask", [](const Encoding& e) { return e.attention_mask; }, "1 for tokens, 0 for padding.")
      .def_property_readonly("special_tokens_mask", [](const Encoding& e) { return e.special_tokens_mask; },
                             "1 for special tokens (<s>, </s>, padding).")
      .def_property_readonly("word_ids", [](const Encoding& e) { return ids_or_none(e.word_ids); },
                             "The word of each token (None for special tokens).")
      .def_property_readonly("sequence_ids", [](const Encoding& e) { return ids_or_none(e.sequence_ids); },
                             "0 or 1 for tokens of the first or second text of a pair, None for special tokens.")
      .def_readonly("n_sequences", &Encoding::n_sequences, "1 for one text, 2 for a pair.")
      // HF's alignment queries, with tokenizers' names and defaults (None where HF gives None)
      .def(
          "token_to_sequence",
          [](const Encoding& e, py::int_ t) { return e.token_to_sequence(index(t, "token_index")); },
          py::arg("token_index"), "The sequence (0 or 1) of a token, None for special tokens.")
      .def("token_to_word", [](const Encoding& e, py::int_ t) { return e.token_to_word(index(t, "token_index")); },
           py::arg("token_index"), "The word of a token in its text.")
      .def("token_to_chars", [](const Encoding& e, py::int_ t) { return e.token_to_chars(index(t, "token_index")); },
           py::arg("token_index"), "(start, end) of a token in its text, in characters.")
      .def(
          "word_to_tokens",
          [](const Encoding& e, py::int_ w, py::int_ s) {
            return e.word_to_tokens(word_index(w), sequence_index(s));
          },
          py::arg("word_index"), py::arg("sequence_index") = 0,
          "(first, last + 1) tokens of a word of text `sequence_index`.")
      .def(
          "word_to_chars",
          [](const Encoding& e, py::int_ w, py::int_ s) { return e.word_to_chars(word_index(w), sequence_index(s)); },
          py::arg("word_index"), py::arg("sequence_index") = 0,
          "(start, end) of a word of text `sequence_index`, in characters.")
      .def(
          "char_to_token",
          [](const Encoding& e, py::int_ c, py::int_ s) {
            return e.char_to_token(static_cast<int64_t>(index(c, "char_pos")), sequence_index(s));
          },
          py::arg("char_pos"), py::arg("sequence_index") = 0,
          "The token that covers a character of text `sequence_index`.")
      .def(
          "char_to_word",
          [](const Encoding& e, py::int_ c, py::int_ s) {
            return e.char_to_word(static_cast<int64_t>(index(c, "char_pos")), sequence_index(s));
          },
          py::arg("char_pos"), py::arg("sequence_index") = 0,
          "The word that covers a character of text `sequence_index`.")
      .def("__len__", [](const Encoding& e) { return e.size(); })
      .def("__repr__", [](const Encoding& e) {
        return "Encoding(num_tokens=" + std::to_string(e.size()) +
               ", attributes=[ids, type_ids, tokens, offsets, attention_mask, special_tokens_mask])";
      });
}

// Tokenizer's constructors, encode and its batch and padding helpers.
void def_tokenizer_encoding(py::class_<Tokenizer>& tokenizer) {
  tokenizer
      .def(py::init([](const std::string& path) {
             py::gil_scoped_release nogil;
             return Tokenizer::from_dir(path);
           }),
           py::arg("path"), "Loads tokenizer.json (else vocab.json + merges.txt) from a model folder.")
      .def(py::init([](const Tokenizer& other) { return other; }), py::arg("other"),
           "A tokenizer sharing the data of another (cheap).")
      .def_static(
          "from_file",
          [](const std::string& path) {
            py::gil_scoped_release nogil;
            return Tokenizer::from_tokenizer_json(path);
          },
          py::arg("path"), "Loads a tokenizer.json file.")
      .def(
          "encode",
          [](const Tokenizer& t, const std::string& text, std::optional<std::string> pair, bool add_special_tokens,
             std::optional<size_t> max_length, const std::string& strategy, const std::string& side) {
            const EncodeOptions o = encode_options(add_special_tokens, max_length, strategy, side);
            py::gil_scoped_release nogil;
            return pair ? t.encode_pair(text, *pair, o) : t.encode(text, o);
          },
          py::arg("sequence"), py::arg("pair") = py::none(), py::arg("add_special_tokens") = true,
          py::arg("max_length") = py::none(), py::arg("truncation_strategy") = "longest_first",
          py::arg("truncation_side") = "right", kEncodeDoc)
      .def(
          "encode_words",
          [](const Tokenizer& t, const std::vector<std::string>& words, std::optional<std::vector<std::string>> pair,
             bool add_special_tokens, std::optional<size_t> max_length, const std::string& strategy,
             const std::string& side) {
            const EncodeOptions o = encode_options(add_special_tokens, max_length, strategy, side);
            py::gil_scoped_release nogil;
            return pair ? t.encode_words_pair(words, *pair, o) : t.encode_words(words, o);
          },
          py::arg("words"), py::arg("pair") = py::none(), py::arg("add_special_tokens") = true,
          py::arg("max_length") = py::none(), py::arg("truncation_strategy") = "longest_first",
          py::arg("truncation_side") = "right",
          "encode_words(words, pair=None, ...) -> Encoding\n\n"
          "A pre-tokenized input (tokenizers' is_pretokenized=True): each word tokenized on its own; word_ids\n"
          "are the words' indices, offsets are into each word.")
      .def(
          "encode_words_batch",
          [](const Tokenizer& t,
             const std::vector<std::pair<std::vector<std::string>, std::optional<std::vector<std::string>>>>& inputs,
             bool add_special_tokens, std::optional<size_t> max_length, const std::string& strategy,
             const std::string& side) {
            const EncodeOptions o = encode_options(add_special_tokens, max_length, strategy, side);
            std::vector<Tokenizer::WordsInput> in;
            in.reserve(inputs.size());
            for (const auto& [words, pair] : inputs) in.push_back({words, pair});
            py::gil_scoped_release nogil;
            return t.encode_words_batch(in, o, roberta::num_threads());
          },
          py::arg("inputs"), py::arg("add_special_tokens") = true, py::arg("max_length") = py::none(),
          py::arg("truncation_strategy") = "longest_first", py::arg("truncation_side") = "right",
          "encode_words_batch(inputs, ...) -> list[Encoding]\n\n"
          "encode_words of each (words, pair words or None) on the engine's threads; results in input order.")
      .def(
          "encode_batch",
          [](const Tokenizer& t, const std::vector<std::variant<std::string, std::pair<std::string, std::string>>>& inputs,
             bool add_special_tokens, std::optional<size_t> max_length, const std::string& strategy,
             const std::string& side) {
            const EncodeOptions o = encode_options(add_special_tokens, max_length, strategy, side);
            std::vector<std::string> singles;
            bool all_single = true;
            for (const auto& in : inputs) all_single = all_single && in.index() == 0;
            py::gil_scoped_release nogil;
            if (all_single) {
              for (const auto& in : inputs) singles.push_back(std::get<0>(in));
              return t.encode_batch(singles, o, roberta::num_threads());
            }
            std::vector<Encoding> out;
            out.reserve(inputs.size());
            for (size_t i = 0; i < inputs.size(); ++i) {
              try {
                if (inputs[i].index() == 0)
                  out.push_back(t.encode(std::get<0>(inputs[i]), o));
                else
                  out.push_back(t.encode_pair(std::get<1>(inputs[i]).first, std::get<1>(inputs[i]).second, o));
              } catch (const Error& e) {
                throw Error("input " + std::to_string(i + 1) + ": " + e.what(), e.kind());
              }
            }
            return out;
          },
          py::arg("inputs"), py::arg("add_special_tokens") = true, py::arg("max_length") = py::none(),
          py::arg("truncation_strategy") = "longest_first", py::arg("truncation_side") = "right",
          "encode_batch(inputs, add_special_tokens=True, max_length=None, ...) -> list[Encoding]\n\n"
          "Tokenizes texts (str) or pairs ((str, str)) on the engine's threads; results in input order.")
      .def(
          "pad",
          [](const Tokenizer& t, std::vector<Encoding> batch, std::optional<size_t> length,
             std::optional<size_t> pad_to_multiple_of, const std::string& direction) {
            PaddingOptions o;
            o.length = length.value_or(0);
            o.multiple_of = pad_to_multiple_of.value_or(0);
            o.side = parse_side(direction, "padding direction");
            t.pad(batch, o);
            return batch;
          },
          py::arg("encodings"), py::arg("length") = py::none(), py::arg("pad_to_multiple_of") = py::none(),
          py::arg("direction") = "right",
          "Padded copies of the encodings: to `length`, else to the longest (rounded up to a multiple of\n"
          "pad_to_multiple_of), with <pad> and attention_mask 0.");
}

// Tokenizer's decoding, vocabulary and special tokens.
void def_tokenizer_vocabulary(py::class_<Tokenizer>& tokenizer) {
  tokenizer
      .def(
          "decode",
          [](const Tokenizer& t, const std::vector<int32_t>& ids, bool skip_special_tokens) {
            py::gil_scoped_release nogil;
            return t.decode(ids, skip_special_tokens);
          },
          py::arg("ids"), py::arg("skip_special_tokens") = true,
          "The text of token ids (as tokenizers' decode: special tokens skipped by default).")
      .def(
          "decode_batch",
          [](const Tokenizer& t, const std::vector<std::vector<int32_t>>& sequences, bool skip_special_tokens) {
            py::gil_scoped_release nogil;
            std::vector<std::string> out;
            for (const auto& ids : sequences) out.push_back(t.decode(ids, skip_special_tokens));
            return out;
          },
          py::arg("sequences"), py::arg("skip_special_tokens") = true)
      .def("token_to_id", &Tokenizer::token_to_id, py::arg("token"), "The id of a token string, or None.")
      .def("id_to_token", [](const Tokenizer& t, int32_t id) -> std::optional<std::string> {
        if (id < 0 || static_cast<size_t>(id) >= t.vocab_size()) return std::nullopt;
        try {
          return t.id_to_token(id);
        } catch (const Error&) {
          return std::nullopt;
        }
      }, py::arg("id"), "The token string of an id, or None.")
      .def("get_vocab_size", [](const Tokenizer& t, bool) { return t.vocab_size(); },
           py::arg("with_added_tokens") = true, "One more than the largest id.")
      .def("get_vocab", [](const Tokenizer& t, bool) {
        py::dict d;
        for (size_t i = 0; i < t.vocab_size(); ++i) {
          try {
            d[py::str(t.id_to_token(static_cast<int32_t>(i)))] = i;
          } catch (const Error&) {
          }
        }
        return d;
      }, py::arg("with_added_tokens") = true, "{token: id} for every id.")
      .def("num_special_tokens_to_add", &Tokenizer::num_special_tokens_to_add, py::arg("is_pair"))
      .def_property_readonly("is_wordpiece", &Tokenizer::is_wordpiece,
                             "True for a BERT-style WordPiece tokenizer, False for RoBERTa's byte-level BPE.")
      .def_property_readonly("is_unigram", &Tokenizer::is_unigram,
                             "True for a SentencePiece (Unigram) tokenizer, XLM-RoBERTa's and CamemBERT's.")
      .def_property_readonly("do_lower_case", &Tokenizer::lowercases,
                             "True for a WordPiece tokenizer that lowercases (an uncased vocabulary), as "
                             "transformers' BertTokenizer.do_lower_case.")
      .def("is_special", &Tokenizer::is_special, py::arg("id"))
      .def_property_readonly("bos_token_id", &Tokenizer::bos_id)
      .def_property_readonly("eos_token_id", &Tokenizer::eos_id)
      .def_property_readonly("pad_token_id", &Tokenizer::pad_id)
      .def_property_readonly("mask_token_id", &Tokenizer::mask_id)
      .def_property_readonly("unk_token_id", &Tokenizer::unk_id);
}

}  // namespace

void register_tokenizer(py::module_& m) {
  register_encoding(m);
  py::class_<Tokenizer> tokenizer(m, "Tokenizer", "roberta.cpp's byte-level BPE tokenizer (Hugging Face's results).");
  def_tokenizer_encoding(tokenizer);
  def_tokenizer_vocabulary(tokenizer);
}

}  // namespace roberta::python
