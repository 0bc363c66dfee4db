#pragma once
// The server's Prometheus metrics, with Text Embeddings Inference's names and buckets (router/src/
// prometheus.rs): counters, one gauge and histograms, rendered as Prometheus text for GET /metrics.
//
//   Metrics m(512);                       // max input length (buckets of te_request_input_length)
//   m.count("te_request_count", "method", "single");
//   m.observe("te_request_duration", 0.012);
//   std::string text = m.render();        // "# TYPE te_request_count counter\n..."
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace roberta::server {

class Metrics {
 public:
  explicit Metrics(size_t max_input_length);

  // Adds `n` to the counter `name` with one label (`label` empty: none).
  void count(const std::string& name, const std::string& label = {}, const std::string& value = {}, uint64_t n = 1);
  void set_gauge(const std::string& name, double value);
  // Records a sample of a histogram declared in the constructor (others are ignored).
  void observe(const std::string& name, double value);
  std::string render() const;
  // The value of a counter (for tests): count("te_request_failure", "err", "validation").
  uint64_t counter(const std::string& name, const std::string& label = {}, const std::string& value = {}) const;

 private:
  struct Histogram {
    std::vector<double> bounds;
    std::vector<uint64_t> counts;  // per bucket, not cumulative
    double sum = 0;
    uint64_t total = 0;
  };
  mutable std::mutex mutex_;
  std::map<std::string, std::map<std::string, uint64_t>> counters_;  // name -> {label text -> value}
  std::map<std::string, double> gauges_;
  std::map<std::string, Histogram> histograms_;
};

}  // namespace roberta::server
