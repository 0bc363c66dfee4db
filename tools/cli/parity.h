#pragma once
// What `roberta compare` found for one tensor, and its plot (parity_plot.cpp).
#include <cstdint>
#include <string>
#include <vector>

namespace roberta::cli {

struct TensorDiff {
  std::string name;  // hidden_states_3, logits, pooler_output
  std::vector<int64_t> shape;
  double max_abs_diff = 0, mean_abs_diff = 0;  // max is +inf where one side only is not finite
  std::vector<size_t> worst_at;                // index of the largest difference
  size_t elements = 0, failing = 0;
  size_t non_finite_in_both = 0;  // NaN in both, or the same infinity: agreeing (not in the diffs)
  bool ok = true;
};

struct PlotLabels {
  std::string model, reference;
  double atol = 0, rtol = 0;
  bool bf16 = false;  // --dtype bf16
};

// The max and mean absolute difference of every tensor in order on a log scale, atol as a line,
// the first failing tensor marked: a standalone SVG document, or an HTML page holding it.
std::string compare_plot_svg(const std::vector<TensorDiff>& tensors, const PlotLabels& labels);
std::string compare_plot_html(const std::vector<TensorDiff>& tensors, const PlotLabels& labels);

}  // namespace roberta::cli
