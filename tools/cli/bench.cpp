// roberta bench: time forward passes on random token ids.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>

#include "common.h"
#include "roberta/m3_embedder.h"
#include "roberta/sparse_encoder.h"

namespace roberta::cli {

int run_bench(const Args& args) {
  const auto load_start = std::chrono::steady_clock::now();
  const Model model = Model::load(model_dir(args), load_options(args));
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start).count();
  const ModelConfig& c = model.config();
  const size_t B = static_cast<size_t>(args.integer("batch", 1, 1'000'000).value_or(1));
  const size_t runs = static_cast<size_t>(args.integer("runs", 1, 1'000'000).value_or(5));
  const size_t warmup = static_cast<size_t>(args.integer("warmup", 0, 1'000'000).value_or(1));
  const uint64_t seed = static_cast<uint64_t>(args.integer("seed", 0, INT64_MAX).value_or(0));
  const std::string outputs = args.get("outputs").value_or("hidden");
  const bool m3 = outputs == "m3" || outputs.starts_with("m3:");
  if (outputs != "hidden" && outputs != "logits" && outputs != "sparse" && !m3)
    throw UsageError("--outputs must be hidden, logits, sparse, m3 or m3:LIST");
  if ((outputs == "logits" || outputs == "sparse") && !model.has_lm_head())
    throw Error(model.dir().string() + ": the model has no MLM head");
  const auto m3_has = [&](const char* kind) { return outputs == "m3" || (m3 && outputs.find(kind) != std::string::npos); };
  const M3Options m3_options{.dense = m3_has("dense"), .sparse = m3_has("sparse"), .colbert = m3_has("colbert")};
  const int64_t max_len = c.max_sequence_length();
  std::vector<size_t> lengths(B, static_cast<size_t>(args.integer("seq", 2, max_len).value_or(std::min<int64_t>(128, max_len))));
  std::mt19937_64 rng(seed);
  if (auto spec = args.get("lengths")) {
    size_t lo = 0, hi = 0;
    if (std::sscanf(spec->c_str(), "uniform:%zu:%zu", &lo, &hi) != 2 || lo < 2 || hi < lo || static_cast<int64_t>(hi) > max_len)
      throw UsageError("--lengths must be uniform:MIN:MAX with 2 <= MIN <= MAX <= " + std::to_string(max_len));
    std::uniform_int_distribution<size_t> dist(lo, hi);
    for (auto& l : lengths) l = dist(rng);
  }
  Batch batch;
  std::uniform_int_distribution<int32_t> token(4, static_cast<int32_t>(c.vocab_size) - 1);
  for (size_t l : lengths) {
    std::vector<int32_t> ids(l);
    for (auto& id : ids) id = token(rng);
    ids.front() = 0, ids.back() = 2;
    batch.add_sequence(ids);
  }
  ForwardOptions fo;
  fo.logits = outputs == "logits" || outputs == "sparse";
  // sparse: SparseEncoder::run, the MLM logits reduced chunk by chunk (logits: all of them kept).
  // m3: M3Embedder::run, bge-m3's three outputs from one pass (m3:LIST: those of dense, sparse,
  // colbert), the heads of the model's folder beside the model loaded above.
  std::optional<SparseEncoder> sparse;
  std::optional<M3Embedder> m3_embedder;
  std::vector<PreparedText> texts;
  if (outputs == "sparse") sparse.emplace(model, Tokenizer::from_dir(model.dir()));
  if (m3) m3_embedder.emplace(M3Embedder::with_heads(Embedder(model, Tokenizer::from_dir(model.dir())), model.dir()));
  for (size_t b = 0; b < B && (sparse || m3); ++b)
    texts.push_back({.ids = std::vector<int32_t>(batch.ids.begin() + static_cast<ptrdiff_t>(batch.offsets[b]),
                                                 batch.ids.begin() + static_cast<ptrdiff_t>(batch.offsets[b + 1]))});
  const auto run_once = [&] {
    if (sparse) (void)sparse->run(texts);
    else if (m3_embedder) (void)m3_embedder->run(texts, m3_options);
    else model.forward(batch, fo);
  };
  for (size_t i = 0; i < warmup; ++i) run_once();
  std::vector<double> ms;
  for (size_t i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run_once();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                          : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
  // FLOPs: 2 per multiply-add of every matrix product, attention included.
  const double H = static_cast<double>(c.hidden_size), I = static_cast<double>(c.intermediate_size);
  const double layers = static_cast<double>(c.num_hidden_layers), V = static_cast<double>(c.vocab_size);
  double flops = 0;
  const double tokens = static_cast<double>(batch.num_tokens());
  for (size_t l : lengths) flops += layers * 4.0 * static_cast<double>(l) * static_cast<double>(l) * H;
  flops += tokens * layers * (8.0 * H * H + 4.0 * H * I);
  if (fo.logits) flops += tokens * (2.0 * H * H + 2.0 * H * V);
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  const double peak_mb = static_cast<double>(usage.ru_maxrss) / 1024.0;
  const double tokens_per_s = tokens / (median / 1000.0);
  const double gflops = flops / (median / 1000.0) / 1e9;
  if (args.flag("json")) {
    std::cout << json{{"model", model.dir().string()}, {"batch", B}, {"tokens", batch.num_tokens()},
                      {"threads", num_threads()},
                      {"outputs", outputs}, {"runs", runs}, {"median_ms", median}, {"min_ms", sorted.front()},
                      {"max_ms", sorted.back()}, {"tokens_per_s", tokens_per_s}, {"gflops", gflops},
                      {"peak_rss_mb", peak_mb}, {"load_ms", load_ms}, {"all_ms", ms}, {"lengths", lengths}}
                     .dump()
              << "\n";
  } else {
    std::printf("batch %zu, %zu real tokens, %zu runs: median %.2f ms (min %.2f, max %.2f)\n", B, batch.num_tokens(), runs,
                median, sorted.front(), sorted.back());
    std::printf("%.0f tokens/s, %.1f GFLOP/s, peak memory %.0f MB; the model loaded in %.0f ms\n", tokens_per_s, gflops,
                peak_mb, load_ms);
  }
  return 0;
}

}  // namespace roberta::cli
