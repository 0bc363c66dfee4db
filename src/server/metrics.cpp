#include "server/metrics.h"

#include <algorithm>
#include <cstdio>

namespace roberta::server {

namespace {
std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}
std::string label_text(const std::string& label, const std::string& value) {
  return label.empty() ? "" : "{" + label + "=\"" + value + "\"}";
}
}  // namespace

Metrics::Metrics(size_t max_input_length) {
  // As TEI: durations on 35 geometric buckets from 1.5e-5 s by 1.5; input lengths on powers of two
  // up to the maximum input length; batch sizes on 2^0..2^12, batch tokens on 2^0..2^20.
  std::vector<double> duration;
  double v = 0.00001;
  for (int i = 0; i < 35; ++i) duration.push_back(v *= 1.5);
  const auto powers = [](int n, double cap) {
    std::vector<double> b;
    for (int i = 0; i < n; ++i)
      if (double p = static_cast<double>(1u << i); p <= cap) b.push_back(p);
    return b;
  };
  for (const char* what : {"request", "embed", "predict"})
    for (const char* part : {"", "tokenization_", "queue_", "inference_"})
      histograms_[std::string("te_") + what + "_" + part + "duration"].bounds = duration;
  histograms_["te_request_input_length"].bounds = powers(20, static_cast<double>(max_input_length));
  histograms_["te_batch_next_size"].bounds = powers(13, 1e300);
  histograms_["te_batch_next_tokens"].bounds = powers(21, 1e300);
  for (auto& [_, h] : histograms_) h.counts.assign(h.bounds.size() + 1, 0);
  gauges_["te_queue_size"] = 0;
  counters_["te_request_count"];
  counters_["te_request_success"];
  counters_["te_request_failure"];
  for (const char* name : {"te_embed_count", "te_embed_success", "te_predict_count", "te_predict_success"})
    counters_[name];
}

void Metrics::count(const std::string& name, const std::string& label, const std::string& value, uint64_t n) {
  std::lock_guard lock(mutex_);
  counters_[name][label_text(label, value)] += n;
}

void Metrics::set_gauge(const std::string& name, double value) {
  std::lock_guard lock(mutex_);
  gauges_[name] = value;
}

void Metrics::observe(const std::string& name, double value) {
  std::lock_guard lock(mutex_);
  const auto it = histograms_.find(name);
  if (it == histograms_.end()) return;
  Histogram& h = it->second;
  const size_t bucket = static_cast<size_t>(std::lower_bound(h.bounds.begin(), h.bounds.end(), value) - h.bounds.begin());
  ++h.counts[bucket];
  h.sum += value;
  ++h.total;
}

uint64_t Metrics::counter(const std::string& name, const std::string& label, const std::string& value) const {
  std::lock_guard lock(mutex_);
  const auto it = counters_.find(name);
  if (it == counters_.end()) return 0;
  const auto v = it->second.find(label_text(label, value));
  return v == it->second.end() ? 0 : v->second;
}

std::string Metrics::render() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (const auto& [name, series] : counters_) {
    out += "# TYPE " + name + " counter\n";
    for (const auto& [labels, v] : series) out += name + labels + " " + std::to_string(v) + "\n";
  }
  for (const auto& [name, v] : gauges_) out += "# TYPE " + name + " gauge\n" + name + " " + number(v) + "\n";
  for (const auto& [name, h] : histograms_) {
    out += "# TYPE " + name + " histogram\n";
    uint64_t cumulative = 0;
    for (size_t i = 0; i < h.bounds.size(); ++i) {
      cumulative += h.counts[i];
      out += name + "_bucket{le=\"" + number(h.bounds[i]) + "\"} " + std::to_string(cumulative) + "\n";
    }
    out += name + "_bucket{le=\"+Inf\"} " + std::to_string(h.total) + "\n";
    out += name + "_sum " + number(h.sum) + "\n" + name + "_count " + std::to_string(h.total) + "\n";
  }
  return out;
}

}  // namespace roberta::server
