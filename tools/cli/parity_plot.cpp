// The plot of `roberta compare --plot`: hand-written SVG, no dependency.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "parity.h"

namespace roberta::cli {
namespace {

constexpr double kWidth = 960, kHeight = 560;
constexpr double kLeft = 90, kRight = 110, kTop = 96, kBottom = 130;  // margins around the plot area
constexpr const char* kMaxColor = "#1f5fa8";
constexpr const char* kMeanColor = "#6a8f3a";
constexpr const char* kAtolColor = "#b8860b";
constexpr const char* kFailColor = "#d62728";

std::string escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t') out += c;  // XML has no other control characters
    }
  }
  return out;
}

std::string fmt(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

std::string num(double v) { return fmt("%.1f", v); }

std::string sci(double v) { return std::isfinite(v) ? fmt("%.2e", v) : "inf"; }

// log10 y axis over whole decades [lo, hi]; 0 is drawn on the floor, inf on the ceiling.
struct LogAxis {
  int lo = -8, hi = 0;
  double top = kTop, bottom = kHeight - kBottom;
  double y(double v) const {
    if (!(v > 0)) return bottom;
    if (!std::isfinite(v)) return top;
    const double t = (std::log10(v) - lo) / (hi - lo);
    return bottom - std::clamp(t, 0.0, 1.0) * (bottom - top);
  }
};

LogAxis axis_for(const std::vector<TensorDiff>& tensors, double atol) {
  double lo = INFINITY, hi = 0;
  const auto see = [&](double v) {
    if (v > 0 && std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  };
  for (const auto& t : tensors) see(t.max_abs_diff), see(t.mean_abs_diff);
  see(atol);
  LogAxis a;
  if (hi > 0) {
    a.lo = static_cast<int>(std::floor(std::log10(lo))), a.hi = static_cast<int>(std::ceil(std::log10(hi)));
    if (a.hi <= a.lo) a.hi = a.lo + 1;
  }
  return a;
}

std::string text(double x, double y, const std::string& s, const std::string& attrs = "") {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\"" + (attrs.empty() ? "" : " " + attrs) + ">" + escape(s) +
         "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2, const std::string& attrs) {
  return "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) + "\" " +
         attrs + "/>\n";
}

std::string marker_max(double x, double y, const std::string& cls, const char* fill, const std::string& tip) {
  return "<circle class=\"" + cls + "\" cx=\"" + num(x) + "\" cy=\"" + num(y) + "\" r=\"4.5\" fill=\"" + fill +
         "\"><title>" + escape(tip) + "</title></circle>\n";
}

std::string marker_mean(double x, double y, const std::string& cls, const std::string& tip) {
  return "<rect class=\"" + cls + "\" x=\"" + num(x - 3.5) + "\" y=\"" + num(y - 3.5) +
         "\" width=\"7\" height=\"7\" fill=\"" + kMeanColor + "\"><title>" + escape(tip) + "</title></rect>\n";
}

}  // namespace

std::string compare_plot_svg(const std::vector<TensorDiff>& tensors, const PlotLabels& labels) {
  const LogAxis a = axis_for(tensors, labels.atol);
  const double x0 = kLeft, x1 = kWidth - kRight, n = static_cast<double>(tensors.size());
  const auto x = [&](size_t i) { return x0 + (static_cast<double>(i) + 0.5) * (x1 - x0) / n; };
  const auto first_bad = std::find_if(tensors.begin(), tensors.end(), [](const TensorDiff& t) { return !t.ok; });
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(kWidth) + "\" height=\"" + num(kHeight) +
                  "\" viewBox=\"0 0 " + num(kWidth) + " " + num(kHeight) +
                  "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  // Title, what was compared, the verdict.
  s += text(kWidth / 2, 26, "roberta compare: " + labels.model + (labels.bf16 ? " (--dtype bf16)" : ""), "text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\"");
  const size_t failing = static_cast<size_t>(std::count_if(tensors.begin(), tensors.end(), [](const TensorDiff& t) { return !t.ok; }));
  s += text(kWidth / 2, 46, "reference " + labels.reference + ", atol " + sci(labels.atol) + ", rtol " + sci(labels.rtol) + ": " +
                                (failing ? std::to_string(failing) + " of " + std::to_string(tensors.size()) + " tensors fail"
                                         : "all " + std::to_string(tensors.size()) + " tensors pass"),
            "text-anchor=\"middle\" fill=\"#444\"");
  // Legend, in a row above the plot (text widths estimated at 7 px a character).
  double lx = x0;
  const auto legend_text = [&](const std::string& label) {
    s += text(lx + 16, 78, label);
    lx += 16 + 7.0 * static_cast<double>(label.size()) + 24;
  };
  s += "<g class=\"legend\">\n";
  s += marker_max(lx + 6, 74, "legend-max", kMaxColor, "max");
  legend_text("max |engine - reference|");
  s += marker_mean(lx + 6, 74, "legend-mean", "mean");
  legend_text("mean |engine - reference|");
  s += line(lx - 6, 74, lx + 12, 74, "stroke=\"" + std::string(kAtolColor) + "\" stroke-width=\"2\" stroke-dasharray=\"6 4\"");
  legend_text("atol");
  if (first_bad != tensors.end()) {
    s += "<circle cx=\"" + num(lx + 6) + "\" cy=\"74\" r=\"7\" fill=\"none\" stroke=\"" + kFailColor + "\" stroke-width=\"2\"/>\n";
    legend_text("failing: some element beyond atol + rtol |reference|");
  }
  s += "</g>\n";
  // Axes: a gridline and label at every decade.
  for (int e = a.lo; e <= a.hi; ++e) {
    const double y = a.y(std::pow(10.0, e));
    s += line(x0, y, x1, y, "stroke=\"#e3e3e3\"");
    s += text(x0 - 8, y + 4, e == 0 ? "1" : "1e" + std::to_string(e), "text-anchor=\"end\"");
  }
  s += line(x0, a.top, x0, a.bottom, "stroke=\"#333\"") + line(x0, a.bottom, x1, a.bottom, "stroke=\"#333\"");
  s += text(24, (a.top + a.bottom) / 2, "absolute difference (log scale)",
            "text-anchor=\"middle\" transform=\"rotate(-90 24 " + num((a.top + a.bottom) / 2) + ")\"");
  s += text((x0 + x1) / 2, kHeight - 20, "tensor, in forward order (hidden_states_0 is the embeddings' output)",
            "text-anchor=\"middle\"");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const double y = a.bottom + 14;
    s += line(x(i), a.bottom, x(i), a.bottom + 5, "stroke=\"#333\"");
    s += text(x(i), y, tensors[i].name,
              "text-anchor=\"end\" transform=\"rotate(-40 " + num(x(i)) + " " + num(y) + ")\"" +
                  (tensors[i].ok ? "" : " fill=\"" + std::string(kFailColor) + "\""));
  }
  // The tolerance.
  const double ya = a.y(labels.atol);
  s += line(x0, ya, x1, ya, "class=\"atol-line\" stroke=\"" + std::string(kAtolColor) +
                                "\" stroke-width=\"2\" stroke-dasharray=\"6 4\"");
  s += text(x1 + 6, ya + 4, "atol " + sci(labels.atol), "fill=\"" + std::string(kAtolColor) + "\"");
  // The two series: lines, then one marker per tensor.
  std::string max_path, mean_path;
  for (size_t i = 0; i < tensors.size(); ++i) {
    max_path += num(x(i)) + "," + num(a.y(tensors[i].max_abs_diff)) + " ";
    mean_path += num(x(i)) + "," + num(a.y(tensors[i].mean_abs_diff)) + " ";
  }
  s += "<polyline class=\"max-line\" points=\"" + max_path + "\" fill=\"none\" stroke=\"" + kMaxColor + "\" stroke-width=\"1.5\"/>\n";
  s += "<polyline class=\"mean-line\" points=\"" + mean_path + "\" fill=\"none\" stroke=\"" + kMeanColor + "\" stroke-width=\"1.5\"/>\n";
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorDiff& t = tensors[i];
    const std::string status =
        (t.ok ? "ok" : "FAIL (" + std::to_string(t.failing) + " of " + std::to_string(t.elements) + " elements)") +
        (t.non_finite_in_both ? ", " + std::to_string(t.non_finite_in_both) + " NaN or inf in both" : "");
    s += marker_mean(x(i), a.y(t.mean_abs_diff), "point mean-point", t.name + ": mean abs diff " + sci(t.mean_abs_diff));
    s += marker_max(x(i), a.y(t.max_abs_diff), t.ok ? "point max-point" : "point max-point failing",
                    t.ok ? kMaxColor : kFailColor, t.name + ": max abs diff " + sci(t.max_abs_diff) + ", " + status);
    if (!t.ok)
      s += "<circle cx=\"" + num(x(i)) + "\" cy=\"" + num(a.y(t.max_abs_diff)) + "\" r=\"8\" fill=\"none\" stroke=\"" +
           kFailColor + "\" stroke-width=\"1.5\"/>\n";
  }
  // The first failing tensor, labelled.
  if (first_bad != tensors.end()) {
    const size_t i = static_cast<size_t>(first_bad - tensors.begin());
    const double px = x(i), py = a.y(first_bad->max_abs_diff);
    const bool left = px > (x0 + x1) / 2;
    const double ty = py < a.top + 24 ? py + 28 : py - 16;
    s += "<g class=\"first-failure\">\n";
    s += "<circle cx=\"" + num(px) + "\" cy=\"" + num(py) + "\" r=\"11\" fill=\"none\" stroke=\"" + kFailColor +
         "\" stroke-width=\"2.5\"/>\n";
    s += text(left ? px - 14 : px + 14, ty, "first failure: " + first_bad->name + " (max " + sci(first_bad->max_abs_diff) + ")",
              "text-anchor=\"" + std::string(left ? "end" : "start") + "\" fill=\"" + kFailColor +
                  "\" font-weight=\"bold\" stroke=\"white\" stroke-width=\"4\" paint-order=\"stroke\"");
    s += "</g>\n";
  }
  s += "</svg>\n";
  return s;
}

std::string compare_plot_html(const std::vector<TensorDiff>& tensors, const PlotLabels& labels) {
  // Well-formed XML as well as HTML, so that XML tools read it too.
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>" +
         escape("roberta compare: " + labels.model) + "</title>\n</head>\n<body style=\"font-family: sans-serif\">\n" +
         compare_plot_svg(tensors, labels) + "</body>\n</html>\n";
}

}  // namespace roberta::cli
