#include "roberta/fill_mask.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "pipelines/pipeline_util.h"
#include "roberta/error.h"

namespace roberta {

std::string clean_up_tokenization_spaces(std::string text) {
  static const std::pair<const char*, const char*> kRules[] = {
      {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
      {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) {
    const std::string f = from, t = to;
    for (size_t pos = 0; (pos = text.find(f, pos)) != std::string::npos; pos += t.size()) text.replace(pos, f.size(), t);
  }
  return text;
}

FillMask::FillMask(Model model, Tokenizer tokenizer) : model_(std::move(model)), tokenizer_(std::move(tokenizer)) {
  const std::string dir = model_.dir().string();
  if (!model_.has_lm_head())
    throw Error(dir + ": the model has no MLM head (no lm_head.* tensors), so it cannot fill masks",
                ErrorKind::kInvalidModel);
  if (!tokenizer_.mask_id())
    throw Error(dir + ": the tokenizer has no mask token (<mask> or [MASK])", ErrorKind::kInvalidModel);
  if (static_cast<int64_t>(tokenizer_.vocab_size()) > model_.config().vocab_size)
    throw Error(dir + ": the tokenizer has " + std::to_string(tokenizer_.vocab_size()) +
                    " ids but the model's vocab_size is " + std::to_string(model_.config().vocab_size),
                ErrorKind::kInvalidModel);
}

FillMask FillMask::load(const std::filesystem::path& dir, const LoadOptions& options) {
  auto [model, tokenizer] = pipeline::load_model_and_tokenizer(dir, options);
  return FillMask(std::move(model), std::move(tokenizer));
}

std::vector<int32_t> FillMask::target_ids(const std::vector<std::string>& targets,
                                          std::vector<std::string>* notes) const {
  std::vector<int32_t> ids;
  for (const std::string& target : targets) {
    if (auto id = tokenizer_.token_to_id(target)) {
      ids.push_back(*id);
      continue;
    }
    EncodeOptions no_specials;
    no_specials.add_special_tokens = false;
    const Encoding e = tokenizer_.encode(target, no_specials);
    if (e.ids.empty()) {
      if (notes) notes->push_back("target \"" + target + "\" gives no token; ignored");
      continue;
    }
    if (notes)
      notes->push_back("target \"" + target + "\" is not one token of the vocabulary; using \"" +
                       tokenizer_.id_to_token(e.ids[0]) + "\"");
    ids.push_back(e.ids[0]);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

FillMask::Prepared FillMask::prepare(std::string_view text, const FillMaskOptions& options) const {
  const int64_t max_len = model_.config().max_sequence_length();
  EncodeOptions eo;
  if (options.truncation) {
    eo.max_length = pipeline::truncation_length(model_.config(), tokenizer_);
    eo.truncation = TruncationStrategy::kLongestFirst;
  }
  Prepared p;
  p.encoding = tokenizer_.encode(text, eo);
  const int32_t mask = *tokenizer_.mask_id();
  for (size_t i = 0; i < p.encoding.ids.size(); ++i)
    if (p.encoding.ids[i] == mask) p.mask_positions.push_back(i);
  if (p.mask_positions.empty()) {
    const std::string& name = tokenizer_.id_to_token(mask);  // <mask> ([MASK] for a WordPiece tokenizer)
    throw Error(options.truncation && p.encoding.size() == eo.max_length
                    ? "no " + name + " in the text's first " + std::to_string(eo.max_length) +
                          " tokens (the rest is truncated)"
                    : "no " + name + " in the text");
  }
  if (static_cast<int64_t>(p.encoding.size()) > max_len)
    throw Error("the text has " + std::to_string(p.encoding.size()) + " tokens; the model allows at most " +
                std::to_string(max_len));
  return p;
}

Matrix FillMask::run(std::span<const Prepared> texts) const {
  Batch batch;
  for (const Prepared& p : texts) batch.add_sequence(p.encoding.ids);
  return run(batch);
}

Matrix FillMask::run(const Batch& batch) const {
  const int32_t mask = *tokenizer_.mask_id();
  ForwardOptions fo;
  fo.logits = true;
  for (size_t i = 0; i < batch.ids.size(); ++i)
    if (batch.ids[i] == mask) fo.logit_rows.push_back(i);
  // (empty logit_rows would ask for every token's logits)
  if (fo.logit_rows.empty()) return Matrix(0, static_cast<size_t>(model_.config().vocab_size));
  Outputs out = model_.forward(batch, fo);
  return std::move(out.logits);
}

std::vector<Result<std::vector<std::vector<FillMaskCandidate>>>> FillMask::run_batched(
    std::span<const std::string> texts, const FillMaskOptions& options) const {
  return pipeline::run_batched<std::vector<std::vector<FillMaskCandidate>>, Prepared>(
      texts.size(), [&](size_t i) { return prepare(texts[i], options); },
      [&](std::span<const Prepared> prepared) {  // rows: every <mask> of every text, in passes
        std::vector<Encoding> encodings;
        for (const Prepared& p : prepared) encodings.push_back(p.encoding);
        Matrix rows(0, static_cast<size_t>(model_.config().vocab_size));
        pipeline::in_passes(encodings, [&](const Batch& batch, size_t) {
          const Matrix pass = run(batch);
          rows.data.insert(rows.data.end(), pass.data.begin(), pass.data.end());
          rows.rows += pass.rows;
        });
        return rows;
      },
      [](const Prepared& p) { return p.mask_positions.size(); },
      [&](const Prepared& p, const Matrix& rows) { return finish(p, rows, options); });
}

std::vector<std::vector<FillMaskCandidate>> FillMask::operator()(std::string_view text,
                                                                 const FillMaskOptions& options) const {
  const Prepared p = prepare(text, options);
  return finish(p, run(std::span(&p, 1)), options);
}

std::vector<std::vector<FillMaskCandidate>> FillMask::finish(const Prepared& text, const Matrix& logits_rows,
                                                             const FillMaskOptions& options) const {
  const std::vector<size_t>& mask_rows = text.mask_positions;
  const Encoding& enc = text.encoding;
  if (logits_rows.rows != mask_rows.size() || logits_rows.cols != static_cast<size_t>(model_.config().vocab_size))
    throw Error("FillMask::finish: logits are " + std::to_string(logits_rows.rows) + "x" +
                std::to_string(logits_rows.cols) + ", expected " + std::to_string(mask_rows.size()) + "x" +
                std::to_string(model_.config().vocab_size));
  std::vector<int32_t> allowed;
  if (!options.targets.empty()) {
    allowed = target_ids(options.targets, nullptr);
    if (allowed.empty()) throw Error("none of the targets is a token of the vocabulary");
  }
  const bool single_mask = mask_rows.size() == 1;
  // As transformers' decode: cleaned up unless tokenizer_config.json turns it off. (When the file
  // does not say, transformers before 4.45 cleaned up; 4.45 made an unset value false,
  // huggingface/transformers#31938. We keep cleaning up then.)
  const bool clean_up = tokenizer_.clean_up_tokenization_spaces().value_or(true);
  const size_t V = logits_rows.cols;
  std::vector<std::vector<FillMaskCandidate>> results;
  for (size_t m = 0; m < mask_rows.size(); ++m) {
    const float* logits = logits_rows.row(m);
    // softmax over the whole vocabulary, in double for the normaliser
    const float max = *std::max_element(logits, logits + V);
    double sum = 0;
    for (size_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(logits[v]) - max);
    std::vector<int32_t> candidates = allowed;
    if (candidates.empty()) {
      candidates.resize(V);
      std::iota(candidates.begin(), candidates.end(), 0);
    }
    const size_t k = std::min(options.top_k, candidates.size());
    // Highest logit first; ties by lower id (as torch.topk gives on CPU for equal values).
    std::partial_sort(candidates.begin(), candidates.begin() + static_cast<ptrdiff_t>(k), candidates.end(),
                      [&](int32_t a, int32_t b) {
                        return pipeline::higher_score(logits[a], logits[b]) ||
                               (!pipeline::higher_score(logits[b], logits[a]) && a < b);
                      });
    std::vector<FillMaskCandidate> list;
    for (size_t i = 0; i < k; ++i) {
      FillMaskCandidate c;
      c.token = candidates[i];
      c.score = static_cast<float>(std::exp(static_cast<double>(logits[c.token]) - max) / sum);
      const int32_t one[1] = {c.token};
      c.token_str = clean_up ? clean_up_tokenization_spaces(tokenizer_.decode(one)) : tokenizer_.decode(one);
      std::vector<int32_t> filled = enc.ids;
      filled[mask_rows[m]] = c.token;
      // As transformers: <pad> tokens (written in the text, or the prediction) are left out.
      std::erase(filled, tokenizer_.pad_id());
      c.sequence = clean_up ? clean_up_tokenization_spaces(tokenizer_.decode(filled, single_mask))
                            : tokenizer_.decode(filled, single_mask);
      list.push_back(std::move(c));
    }
    results.push_back(std::move(list));
  }
  return results;
}

}  // namespace roberta
