// roberta eval-mlm: masked-LM top-1/top-5 accuracy on prepared masked inputs.
#include <algorithm>
#include <cmath>
#include <iostream>

#include "common.h"

namespace roberta::cli {

namespace {

// cos(a, b) of two rows of H floats, in double.
double cosine(const float* a, const float* b, size_t H) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t h = 0; h < H; ++h) ab += double(a[h]) * b[h], aa += double(a[h]) * a[h], bb += double(b[h]) * b[h];
  return ab / std::max(std::sqrt(aa * bb), 1e-30);
}

// How many tokens of z (V logits) rank above id; ties count for the lower id, as torch.topk orders them.
size_t rank_of(const float* z, size_t V, int64_t id) {
  size_t higher = 0;
  for (size_t v = 0; v < V; ++v) higher += z[v] > z[id] || (z[v] == z[id] && static_cast<int64_t>(v) < id);
  return higher;
}

// --agreement: how far this precision's outputs are from the fp32 model's on the same batches.
struct Agreement {
  size_t same_top1 = 0, ref_top1_in_top5 = 0;
  double max_logit_diff = 0, max_hidden_diff = 0;
  double cosine_sum = 0, cosine_min = 1, mean_pool_cosine_sum = 0, mean_pool_cosine_min = 1;
  size_t cosine_tokens = 0, cosine_sequences = 0;

  void add(const Outputs& out, const Outputs& ref, const Batch& batch, size_t logit_rows) {
    for (size_t i = 0; i < ref.last_hidden_state.data.size(); ++i)
      max_hidden_diff =
          std::max<double>(max_hidden_diff, std::abs(ref.last_hidden_state.data[i] - out.last_hidden_state.data[i]));
    // Per token, and per sequence for mean-pooled embeddings.
    const size_t H = ref.last_hidden_state.cols;
    for (size_t t = 0; t < ref.last_hidden_state.rows; ++t) {
      const double c = cosine(out.last_hidden_state.row(t), ref.last_hidden_state.row(t), H);
      cosine_sum += c, cosine_min = std::min(cosine_min, c), ++cosine_tokens;
    }
    for (size_t b = 0; b < batch.num_sequences(); ++b) {
      std::vector<float> mo(H, 0.0f), mr(H, 0.0f);
      for (size_t t = batch.offsets[b]; t < batch.offsets[b + 1]; ++t)
        for (size_t h = 0; h < H; ++h)
          mo[h] += out.last_hidden_state.row(t)[h], mr[h] += ref.last_hidden_state.row(t)[h];
      const double c = cosine(mo.data(), mr.data(), H);
      mean_pool_cosine_sum += c, mean_pool_cosine_min = std::min(mean_pool_cosine_min, c), ++cosine_sequences;
    }
    for (size_t r = 0; r < logit_rows; ++r) {
      const float* z = out.logits.row(r);
      const float* zr = ref.logits.row(r);
      const size_t V = out.logits.cols;
      for (size_t v = 0; v < V; ++v) max_logit_diff = std::max<double>(max_logit_diff, std::abs(z[v] - zr[v]));
      const auto top = static_cast<int64_t>(std::max_element(zr, zr + V) - zr);
      const size_t rank = rank_of(z, V, top);
      same_top1 += rank == 0;
      ref_top1_in_top5 += rank < 5;
    }
  }

  void report(json& result, size_t masked) const {
    result["top1_agreement_with_fp32"] = static_cast<double>(same_top1) / masked;
    result["fp32_top1_in_top5"] = static_cast<double>(ref_top1_in_top5) / masked;
    result["max_abs_logit_diff"] = max_logit_diff;
    result["max_abs_last_hidden_diff"] = max_hidden_diff;
    result["last_hidden_cosine_mean"] = cosine_tokens ? cosine_sum / static_cast<double>(cosine_tokens) : 0.0;
    result["last_hidden_cosine_min"] = cosine_min;
    result["mean_pooled_cosine_mean"] =
        cosine_sequences ? mean_pool_cosine_sum / static_cast<double>(cosine_sequences) : 0.0;
    result["mean_pooled_cosine_min"] = mean_pool_cosine_min;
  }
};

// One line of the masks file ({"ids", "positions", "labels"}) added to the batch: its ids, the
// logit rows of its positions and their labels. Errors name the file and line (`where`).
void add_record(const std::string& line, const std::string& where, const Model& model, Batch& batch,
                std::vector<size_t>& rows, std::vector<int64_t>& labels) {
  json rec;
  try {
    rec = json::parse(line);
  } catch (const json::exception&) {
    throw Error(where + ": invalid JSON");
  }
  if (!rec.contains("ids") || !rec.contains("positions") || !rec.contains("labels") ||
      rec["positions"].size() != rec["labels"].size())
    throw Error(where + ": expected ids, positions and labels of the same length");
  std::vector<int32_t> ids;
  try {
    ids = rec["ids"].get<std::vector<int32_t>>();
    for (const auto& p : rec["positions"]) {
      const size_t pos = p.get<size_t>();
      if (pos >= ids.size()) throw Error(where + ": position " + std::to_string(pos) + " is past the sequence");
      rows.push_back(batch.num_tokens() + pos);
    }
    for (const auto& l : rec["labels"]) {
      const int64_t label = l.get<int64_t>();
      if (label < 0 || label >= model.config().vocab_size) throw Error(where + ": label out of range");
      labels.push_back(label);
    }
  } catch (const json::exception&) {
    throw Error(where + ": ids, positions and labels must be integers");
  }
  batch.add_sequence(ids);
}

}  // namespace

int run_eval_mlm(const Args& args) {
  const Model model = Model::load(model_dir(args), load_options(args));
  if (!model.has_lm_head()) throw Error(model.dir().string() + ": the model has no MLM head");
  const std::string path = args.require("masks");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open file");
  const size_t batch_size = static_cast<size_t>(args.integer("batch-size", 1, 100000).value_or(16));
  size_t masked = 0, top1 = 0, top5 = 0, sequences = 0, line_no = 0;
  Batch batch;
  std::vector<size_t> rows;
  std::vector<int64_t> labels;
  const bool agreement = args.flag("agreement");
  std::optional<Model> reference;
  if (agreement) reference = Model::load(model_dir(args));
  Agreement agree;
  const auto flush = [&] {
    if (batch.num_sequences() == 0) return;
    ForwardOptions fo;
    fo.logits = true;
    fo.logit_rows = rows;
    const Outputs out = model.forward(batch, fo);
    if (reference) agree.add(out, reference->forward(batch, fo), batch, rows.size());
    for (size_t r = 0; r < rows.size(); ++r) {
      const size_t higher = rank_of(out.logits.row(r), out.logits.cols, labels[r]);
      top1 += higher == 0;
      top5 += higher < 5;
      ++masked;
    }
    batch = Batch();
    rows.clear();
    labels.clear();
  };
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty()) continue;
    add_record(line, path + ": line " + std::to_string(line_no), model, batch, rows, labels);
    ++sequences;
    if (batch.num_sequences() >= batch_size) flush();
  }
  flush();
  if (masked == 0) throw Error(path + ": no masked positions");
  json result{{"top1", static_cast<double>(top1) / masked}, {"top5", static_cast<double>(top5) / masked},
              {"masked", masked}, {"sequences", sequences}};
  if (agreement) agree.report(result, masked);
  std::cout << result.dump() << "\n";
  return 0;
}

}  // namespace roberta::cli
