// roberta dump and roberta compare: the engine's outputs for given ids, and their comparison with
// a PyTorch reference dump (tools/dump_reference.py), layer by layer.
#include "parity.h"

#include <cmath>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include "common.h"
#include "roberta/dev/npy.h"

namespace roberta::cli {
namespace {

struct PaddedInput {
  std::vector<int64_t> ids, mask, type_ids;  // (B, L); type_ids empty: all 0
  size_t B = 0, L = 0;
};

// token_type_ids (B, L), the shape of the ids, each in [0, type_vocab_size).
void read_type_ids(PaddedInput& in, const std::filesystem::path& path, int64_t type_vocab_size) {
  const NpyArray t = read_npy(path);
  if (t.shape != std::vector<int64_t>{static_cast<int64_t>(in.B), static_cast<int64_t>(in.L)})
    throw Error(path.string() + ": shape differs from the input ids");
  in.type_ids = t.as_int64();
  for (size_t i = 0; i < in.type_ids.size(); ++i)
    if (in.type_ids[i] < 0 || in.type_ids[i] >= type_vocab_size)
      throw Error(path.string() + ": element [" + std::to_string(i / in.L) + ", " + std::to_string(i % in.L) + "] = " +
                  std::to_string(in.type_ids[i]) + " is outside [0, type_vocab_size = " +
                  std::to_string(type_vocab_size) + ")");
}

PaddedInput read_inputs(const std::filesystem::path& ids_path, const std::optional<std::filesystem::path>& mask_path,
                        int32_t pad_id) {
  const NpyArray ids = read_npy(ids_path);
  if (ids.shape.size() != 2) throw Error(ids_path.string() + ": expected a (batch, length) array");
  PaddedInput in;
  in.B = static_cast<size_t>(ids.shape[0]), in.L = static_cast<size_t>(ids.shape[1]);
  in.ids = ids.as_int64();
  for (size_t i = 0; i < in.ids.size(); ++i)
    if (in.ids[i] < 0 || in.ids[i] > INT32_MAX)
      throw Error(ids_path.string() + ": id at element " + std::to_string(i) + " is out of range");
  if (!mask_path) {
    in.mask.resize(in.ids.size());
    for (size_t i = 0; i < in.ids.size(); ++i) in.mask[i] = in.ids[i] != pad_id;
    return in;
  }
  const NpyArray mask = read_npy(*mask_path);
  if (mask.shape != ids.shape) throw Error(mask_path->string() + ": shape differs from the input ids");
  in.mask = mask.as_int64();
  for (size_t i = 0; i < in.mask.size(); ++i) {
    if (in.mask[i] != 0 && in.mask[i] != 1)
      throw Error(mask_path->string() + ": element " + std::to_string(i) + " is not 0 or 1");
    // The engine packs the mask-1 tokens and numbers positions by counting non-pad ids, as Hugging
    // Face does over the whole row: a masked non-pad token would shift the positions after it in
    // one and not the other.
    if (in.mask[i] == 0 && in.ids[i] != pad_id)
      throw Error(mask_path->string() + ": element [" + std::to_string(i / in.L) + ", " + std::to_string(i % in.L) +
                  "] is 0 but input id " + std::to_string(in.ids[i]) + " is not pad_token_id " +
                  std::to_string(pad_id) +
                  "; roberta.cpp computes positions from the ids as Hugging Face does, so masked non-pad tokens "
                  "are not supported");
  }
  return in;
}

using Tensors = std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>>;

// The outputs a dump holds besides the hidden states, in the order compare reports them.
const char* const kHeadOutputs[] = {"logits", "pooler_output", "sequence_logits", "token_logits", "start_logits",
                                    "end_logits"};

// Which head outputs the model can give (dump writes all of them).
std::set<std::string> outputs_of(const Model& model) {
  std::set<std::string> names;
  if (model.has_head(Head::kMaskedLm)) names.insert("logits");
  if (model.has_head(Head::kPooler)) names.insert("pooler_output");
  if (model.has_head(Head::kSequenceClassification)) names.insert("sequence_logits");
  if (model.has_head(Head::kTokenClassification)) names.insert("token_logits");
  if (model.has_head(Head::kQuestionAnswering)) names.insert("start_logits"), names.insert("end_logits");
  return names;
}

// pooler_output and sequence_logits have one row per sequence, read at position 0 by HF.
bool per_sequence(const std::string& name) { return name == "pooler_output" || name == "sequence_logits"; }

// Runs the model on the real (mask = 1) tokens of each row; returns the hidden states and the
// `wanted` head outputs named as in a dump, scattered back to (B, L, ...) with zeros at padding.
Tensors run_padded(const Model& model, const PaddedInput& in, const std::set<std::string>& wanted) {
  std::vector<size_t> where;  // flat (b * L + l) of each packed token
  const Batch batch = Batch::from_padded(in.ids, in.mask, in.type_ids, in.B, in.L, &where);
  ForwardOptions fo;
  fo.all_hidden_states = true;
  fo.logits = wanted.count("logits") > 0;
  fo.pooler = wanted.count("pooler_output") > 0;
  fo.sequence_logits = wanted.count("sequence_logits") > 0;
  fo.token_logits = wanted.count("token_logits") > 0;
  fo.span_logits = wanted.count("start_logits") || wanted.count("end_logits");
  const Outputs out = model.forward(batch, fo);
  Tensors result;
  const auto B = static_cast<int64_t>(in.B), L = static_cast<int64_t>(in.L);
  const auto scatter = [&](const float* data, size_t cols, const std::string& name) {
    std::vector<float> full(in.B * in.L * cols, 0.0f);
    for (size_t t = 0; t < where.size(); ++t)
      std::copy_n(data + t * cols, cols, full.begin() + static_cast<ptrdiff_t>(where[t] * cols));
    std::vector<int64_t> shape{B, L};
    if (cols > 1 || name.find("hidden") == 0 || name == "logits" || name == "token_logits")
      shape.push_back(static_cast<int64_t>(cols));
    result[name] = {shape, std::move(full)};
  };
  for (size_t i = 0; i < out.hidden_states.size(); ++i)
    scatter(out.hidden_states[i].data.data(), out.hidden_states[i].cols, "hidden_states_" + std::to_string(i));
  if (fo.logits) scatter(out.logits.data.data(), out.logits.cols, "logits");
  if (fo.token_logits) scatter(out.token_logits.data.data(), out.token_logits.cols, "token_logits");
  if (fo.span_logits) {
    scatter(out.start_logits.data(), 1, "start_logits");
    scatter(out.end_logits.data(), 1, "end_logits");
  }
  if (fo.pooler) result["pooler_output"] = {{B, static_cast<int64_t>(out.pooler_output.cols)}, out.pooler_output.data};
  if (fo.sequence_logits)
    result["sequence_logits"] = {{B, static_cast<int64_t>(out.sequence_logits.cols)}, out.sequence_logits.data};
  return result;
}

// The engine's tensor against the reference over the real positions.
TensorDiff diff(const std::string& name, const std::vector<int64_t>& shape, const std::vector<float>& mine,
                const std::vector<float>& theirs, const PaddedInput& in, double atol, double rtol) {
  const bool pooler = per_sequence(name);
  const size_t per_token = static_cast<size_t>(pooler ? shape[1] : shape.size() > 2 ? shape[2] : 1);
  TensorDiff t;
  t.name = name, t.shape = shape;
  double sum_diff = 0;
  size_t worst = 0, finite_pairs = 0;
  for (size_t i = 0; i < theirs.size(); ++i) {
    const size_t token = i / per_token;
    if (!pooler && !in.mask[token]) continue;
    // HF pools (and classifies) position 0 whatever it holds; in a left-padded row that is padding,
    // which the engine does not compute (it reads the row's first real token, <s>).
    if (pooler && !in.mask[token * in.L]) continue;
    ++t.elements;
    if (!std::isfinite(mine[i]) || !std::isfinite(theirs[i])) {
      // NaN in both, or the same infinity, agree (as numpy's allclose and torch's assert_close with
      // equal_nan): a reference that is not finite there, matched. One side only: a failure.
      if ((std::isnan(mine[i]) && std::isnan(theirs[i])) || mine[i] == theirs[i]) {
        ++t.non_finite_in_both;
        continue;
      }
      ++t.failing;
      if (t.max_abs_diff != INFINITY) t.max_abs_diff = INFINITY, worst = i;  // (the first such element)
      continue;
    }
    const double d = std::abs(static_cast<double>(mine[i]) - theirs[i]);
    if (d > atol + rtol * std::abs(static_cast<double>(theirs[i]))) ++t.failing;
    if (d > t.max_abs_diff) t.max_abs_diff = d, worst = i;
    sum_diff += d;
    ++finite_pairs;
  }
  t.mean_abs_diff = finite_pairs ? sum_diff / static_cast<double>(finite_pairs) : 0.0;
  t.ok = t.failing == 0;
  if (pooler)
    t.worst_at = {worst / per_token, worst % per_token};
  else if (shape.size() == 2)
    t.worst_at = {worst / in.L, worst % in.L};
  else
    t.worst_at = {worst / per_token / in.L, worst / per_token % in.L, worst % per_token};
  return t;
}

void print_table(const std::vector<TensorDiff>& tensors) {
  std::cout << std::left << std::setw(18) << "tensor" << std::setw(18) << "shape" << std::right << std::setw(14)
            << "max abs diff" << std::setw(14) << "mean abs diff" << "  worst at        status\n";
  for (const auto& t : tensors) {
    std::string shape;
    for (const auto d : t.shape) shape += (shape.empty() ? "" : "x") + std::to_string(d);
    std::ostringstream max_s, mean_s;
    max_s << std::scientific << std::setprecision(2) << t.max_abs_diff;
    mean_s << std::scientific << std::setprecision(2) << t.mean_abs_diff;
    std::cout << std::left << std::setw(18) << t.name << std::setw(18) << shape << std::right << std::setw(14)
              << max_s.str() << std::setw(14) << mean_s.str() << "  " << std::left << std::setw(16)
              << json(t.worst_at).dump() << (t.ok ? "ok" : "FAIL (" + std::to_string(t.failing) + " elements)")
              << (t.non_finite_in_both ? " (" + std::to_string(t.non_finite_in_both) + " NaN or inf in both)" : "")
              << std::right << "\n";
  }
}

}  // namespace

int run_dump(const Args& args) {
  const Model model = Model::load(model_dir(args), load_options(args));
  const std::filesystem::path out_dir = args.require("out");
  std::error_code ec;
  if (std::filesystem::exists(out_dir, ec) && !std::filesystem::is_directory(out_dir, ec))
    throw Error(out_dir.string() + ": is a file, not a folder (--out names the dump's folder)", ErrorKind::kIo);
  if (std::filesystem::exists(out_dir, ec) && !std::filesystem::is_empty(out_dir, ec) && !args.flag("force"))
    throw Error(out_dir.string() + ": exists and is not empty (use --force)");
  const auto mask_path = args.get("attention-mask");
  PaddedInput in = read_inputs(args.require("input-ids"),
                               mask_path ? std::optional<std::filesystem::path>(*mask_path) : std::nullopt,
                               static_cast<int32_t>(model.config().pad_token_id));
  if (const auto types = args.get("type-ids")) read_type_ids(in, *types, model.config().type_vocab_size);
  const auto outputs = run_padded(model, in, outputs_of(model));
  std::filesystem::create_directories(out_dir);
  const std::vector<int64_t> shape{static_cast<int64_t>(in.B), static_cast<int64_t>(in.L)};
  write_npy(out_dir / "input_ids.npy", shape, in.ids);
  write_npy(out_dir / "attention_mask.npy", shape, in.mask);
  size_t files = outputs.size() + 2;
  if (!in.type_ids.empty()) write_npy(out_dir / "token_type_ids.npy", shape, in.type_ids), ++files;
  for (const auto& [name, tensor] : outputs) write_npy(out_dir / (name + ".npy"), tensor.first, tensor.second);
  std::cerr << "wrote " << files << " files to " << out_dir.string() << "\n";
  return 0;
}

int run_compare(const Args& args) {
  const double atol = args.number("atol").value_or(1e-4), rtol = args.number("rtol").value_or(1e-3);
  const std::optional<std::string> plot = args.get("plot");
  const bool html = plot && plot->ends_with(".html");
  if (plot && !html && !plot->ends_with(".svg")) throw UsageError("--plot must name a .svg or .html file");
  if (plot) {
    check_can_write(*plot, args.flag("force"));
    std::error_code ec;  // (before the comparison runs: its folder must be there)
    const std::filesystem::path parent = std::filesystem::absolute(*plot, ec).parent_path();
    if (!std::filesystem::is_directory(parent, ec))
      throw Error(*plot + ": its folder " + parent.string() + " does not exist", ErrorKind::kIo);
  }
  const std::string model_folder = model_dir(args);
  const Model model = Model::load(model_folder, load_options(args));
  const std::filesystem::path ref = args.require("reference");
  if (!std::filesystem::is_directory(ref))
    throw Error(ref.string() + (std::filesystem::exists(ref) ? ": is a file, not a reference dump folder"
                                                              : ": reference dump folder not found"),
                ErrorKind::kIo);
  PaddedInput in = read_inputs(ref / "input_ids.npy", ref / "attention_mask.npy",
                               static_cast<int32_t>(model.config().pad_token_id));
  if (std::filesystem::exists(ref / "token_type_ids.npy"))
    read_type_ids(in, ref / "token_type_ids.npy", model.config().type_vocab_size);
  // Every head output the reference holds is compared; the model must have the head.
  const std::set<std::string> available = outputs_of(model);
  std::set<std::string> wanted;
  for (const char* name : kHeadOutputs)
    if (std::filesystem::exists(ref / (std::string(name) + ".npy"))) {
      if (!available.count(name))
        throw Error(ref.string() + ": holds " + name + ".npy but the model has no head that computes it",
                    ErrorKind::kInvalidModel);
      wanted.insert(name);
    }
  const auto outputs = run_padded(model, in, wanted);

  std::vector<std::string> names;
  for (int64_t i = 0; i <= model.config().num_hidden_layers; ++i) names.push_back("hidden_states_" + std::to_string(i));
  for (const char* name : kHeadOutputs) names.push_back(name);
  std::vector<TensorDiff> tensors;
  for (const std::string& name : names) {
    const auto path = ref / (name + ".npy");
    if (!std::filesystem::exists(path)) continue;
    const NpyArray r = read_npy(path);
    const auto& [shape, mine] = outputs.at(name);
    if (r.shape != shape) {
      std::string s;
      for (auto d : r.shape) s += std::to_string(d) + " ";
      throw Error(path.string() + ": shape (" + s + ") differs from the engine's output");
    }
    tensors.push_back(diff(name, shape, mine, r.as_float(), in, atol, rtol));
  }
  if (tensors.empty())
    throw Error(ref.string() + ": nothing to compare (no hidden_states_*.npy, logits.npy, pooler_output.npy, "
                               "sequence_logits.npy, token_logits.npy, start_logits.npy or end_logits.npy)");
  const auto first_bad = std::find_if(tensors.begin(), tensors.end(), [](const TensorDiff& t) { return !t.ok; });
  const bool all_ok = first_bad == tensors.end();
  if (plot) {
    const PlotLabels labels{model_folder, ref.string(), atol, rtol, load_options(args).weights == WeightType::kBF16};
    const std::string text = html ? compare_plot_html(tensors, labels) : compare_plot_svg(tensors, labels);
    write_file_atomically(*plot, args.flag("force"), [&](const std::filesystem::path& tmp) {
      std::ofstream os(tmp, std::ios::binary);
      os << text;
      os.close();
      if (!os) throw Error(tmp.string() + ": write failed", ErrorKind::kIo);
    });
  }
  if (args.flag("json")) {
    json rows = json::array();
    for (const auto& t : tensors)
      rows.push_back({{"name", t.name}, {"shape", t.shape}, {"max_abs_diff", t.max_abs_diff},
                      {"mean_abs_diff", t.mean_abs_diff}, {"worst_at", t.worst_at}, {"elements", t.elements},
                      {"failing", t.failing}, {"non_finite_in_both", t.non_finite_in_both}, {"ok", t.ok}});
    std::cout << json{{"ok", all_ok}, {"atol", atol}, {"rtol", rtol},
                      {"first_mismatch", all_ok ? json() : json(first_bad->name)}, {"tensors", rows}}
                     .dump()
              << "\n";
  } else {
    print_table(tensors);
    std::string both;
    for (const TensorDiff& t : tensors)
      if (t.non_finite_in_both) both += (both.empty() ? "" : ", ") + t.name;
    if (!both.empty())
      std::cout << "NaN or inf in both the engine and the reference (counted as agreeing: the reference is not "
                   "finite there either) in "
                << both << "\n";
    if (all_ok)
      std::cout << "all " << tensors.size() << " tensors within atol " << atol << ", rtol " << rtol << "\n";
    else
      std::cout << "first mismatch: " << first_bad->name << "\n";
  }
  return all_ok ? 0 : 1;
}

}  // namespace roberta::cli
