// CrossEncoder's long documents (RankOptions::long_documents): a (query, document) pair longer
// than max_length read in windows of the document's tokens, each window paired with the whole
// query, as HF's tokenizer(query, document, truncation="only_second", max_length,
// stride, return_overflowing_tokens=True) cuts it.
#include "pipelines/pipeline_util.h"
#include "roberta/cross_encoder.h"

namespace roberta {

LongDocuments parse_long_documents(const std::string& name) {
  if (name == "truncate") return LongDocuments::kTruncate;
  if (name == "max") return LongDocuments::kMax;
  if (name == "mean") return LongDocuments::kMean;
  throw Error("long documents \"" + name + "\" is not one of truncate, max, mean");
}

std::vector<Encoding> CrossEncoder::windows(const std::string& query, const std::string& document,
                                            const RankOptions& options) const {
  pipeline::require_utf8(query, "query");
  pipeline::require_utf8(document, "document");  // (checked by prepare_rank, naming the document)
  const size_t max_len = options.scoring.max_length
                             ? std::min(options.scoring.max_length, pipeline::model_max_length(model_config_))
                             : max_length();
  const Encoding full = tokenizer_.encode_pair(query, document);
  if (full.size() <= max_len) return {full};
  // <s> Q </s> </s> D </s> (BERT's layout: [CLS] Q [SEP] D [SEP]): the document's tokens are those
  // of sequence 1, the last token closes the pair.
  size_t q_len = 0, d_len = 0, d_begin = full.size() - 1;
  for (size_t i = 0; i < full.size(); ++i) {
    if (full.sequence_ids[i] == 0) ++q_len;
    if (full.sequence_ids[i] == 1 && d_len++ == 0) d_begin = i;
  }
  const size_t specials = full.size() - q_len - d_len;
  if (q_len + specials >= max_len || max_len - q_len - specials <= options.stride)
    throw Error("the query has " + std::to_string(q_len) + " tokens: with max_length " + std::to_string(max_len) +
                " its windows hold " + std::to_string(max_len > q_len + specials ? max_len - q_len - specials : 0) +
                " document tokens, not more than the stride " + std::to_string(options.stride));
  const size_t window = max_len - q_len - specials;
  std::vector<Encoding> out;
  for (size_t start = 0;; start += window - options.stride) {
    const size_t stop = std::min(start + window, d_len);
    Encoding w;
    w.n_sequences = 2;
    const auto take = [&](auto& dst, const auto& src) {
      if (src.empty()) return;
      dst.assign(src.begin(), src.begin() + static_cast<ptrdiff_t>(d_begin));
      dst.insert(dst.end(), src.begin() + static_cast<ptrdiff_t>(d_begin + start),
                 src.begin() + static_cast<ptrdiff_t>(d_begin + stop));
      dst.push_back(src.back());
    };
    take(w.ids, full.ids), take(w.type_ids, full.type_ids), take(w.sequence_ids, full.sequence_ids);
    take(w.attention_mask, full.attention_mask), take(w.special_tokens_mask, full.special_tokens_mask);
    out.push_back(std::move(w));
    if (stop == d_len) break;
  }
  return out;
}

}  // namespace roberta
