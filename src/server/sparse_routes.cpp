// TEI's POST /embed_sparse: sparse (SPLADE) embeddings from the model's MLM head
// (roberta/sparse_encoder.h), or a bge-m3 folder's lexical weights (roberta/m3_embedder.h); and
// POST /embed_multivector, a bge-m3 folder's ColBERT vectors. Batched with every other request's
// texts.
#include <charconv>
#include <cmath>

#include "server/handlers.h"

namespace roberta::server {

// Body: TEI's inputs, truncate, truncation_direction, prompt_name; and max_active_dims (ours,
// sentence-transformers' name): keep each text's K largest weights. Answer, as TEI's:
// [[{"index": id, "value": weight}, ...], ...], one list per input, ids ascending, non-zero
// weights only. A model without an MLM head answers 424, as TEI does for a model not pooled by
// SPLADE.
Reply embed_sparse(State& s, const Call& call) {
  if (!s.m3 && !s.sparse_encoder)
    throw ApiError(424, ErrorType::kBackend,
                   s.m3_error.empty() ? "the model has no MLM head (lm_head.*) nor bge-m3's sparse_linear, so it gives "
                                        "no sparse embeddings"
                                      : s.m3_error,
                   "inference");
  const json body = parse_body(call.body);
  EmbedRequest req{parse_inputs(body, "inputs", s.options.max_client_batch_size), embed_options(s, body), true, {}};
  const std::optional<size_t> k = get_size(body, "max_active_dims");
  if (k && *k == 0) throw ApiError(422, ErrorType::kValidation, "`max_active_dims` should be positive");
  s.metrics->count("te_request_count", "method", method_label(req.inputs));
  Queued q = run_job(s, call, req, s.m3 ? Job::Kind::kM3 : Job::Kind::kSparse);
  Reply r;
  r.body = "[";
  char buf[32];
  for (size_t i = 0; i < q.job->sparse.size(); ++i) {
    const SparseVector v = keep_largest(std::move(q.job->sparse[i]), k.value_or(0));
    r.body += i ? ",[" : "[";
    for (size_t j = 0; j < v.indices.size(); ++j) {
      r.body += j ? ",{\"index\":" : "{\"index\":";
      r.body += std::to_string(v.indices[j]);
      r.body += ",\"value\":";
      if (std::isfinite(v.values[j]))
        r.body.append(buf, std::to_chars(buf, buf + sizeof buf, v.values[j]).ptr);
      else
        r.body += "null";
      r.body += '}';
    }
    r.body += ']';
  }
  r.body += "]";
  timing_headers(s, call, q, r);
  s.metrics->count("te_request_success", "method", method_label(req.inputs));
  return r;
}

// Ours (TEI has no multi-vector route): {"inputs", "truncate", "truncation_direction",
// "prompt_name"} gives [[[float]]], each input's ColBERT vectors (one per token after <s>,
// normalised), as BGEM3FlagModel's colbert_vecs.
Reply embed_multivector(State& s, const Call& call) {
  if (!s.m3)
    throw ApiError(424, ErrorType::kBackend,
                   s.m3_error.empty() ? "the model has no bge-m3 heads (colbert_linear, sparse_linear beside it), so it "
                                        "gives no multi-vector embeddings"
                                      : s.m3_error,
                   "inference");
  const json body = parse_body(call.body);
  EmbedRequest req{parse_inputs(body, "inputs", s.options.max_client_batch_size), embed_options(s, body), true, {}};
  s.metrics->count("te_request_count", "method", method_label(req.inputs));
  Queued q = run_job(s, call, req, Job::Kind::kM3);
  Reply r;
  append_matrices(r.body, q.job->colbert);
  timing_headers(s, call, q, r);
  s.metrics->count("te_request_success", "method", method_label(req.inputs));
  return r;
}

}  // namespace roberta::server
