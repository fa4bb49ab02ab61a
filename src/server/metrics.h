// A small Prometheus metrics registry: counters and histograms that handler threads update
// without a lock, gauges read from callbacks at scrape time, and render() in the text
// exposition format (version 0.0.4): # HELP / # TYPE lines, then one sample per label set;
// histograms as cumulative _bucket{le="..."} samples plus _sum and _count.
// ref: https://prometheus.io/docs/instrumenting/exposition_formats/
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace tessera::server {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void inc(double v = 1.0) { value_.fetch_add(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);  // ascending; +Inf is implicit
  void observe(double v);
  const std::vector<double>& bounds() const { return bounds_; }
  // Per-bucket counts (not cumulative; the last is +Inf), the sum and the count.
  std::vector<uint64_t> bucket_counts() const;
  double sum() const { return sum_.load(std::memory_order_relaxed); }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  std::atomic<double> sum_{0.0};
  std::atomic<uint64_t> count_{0};
};

class MetricsRegistry {
 public:
  // The same name and labels return the same counter (stable for the registry's lifetime).
  Counter& counter(const std::string& name, const std::string& help, const Labels& labels = {});
  Histogram& histogram(const std::string& name, const std::string& help, std::vector<double> bounds,
                       const Labels& labels = {});
  void gauge(const std::string& name, const std::string& help, std::function<double()> read);
  // A counter someone else keeps (the engine's totals), read at scrape time.
  void counter_fn(const std::string& name, const std::string& help, std::function<double()> read);

  std::string render() const;

 private:
  struct Family {
    std::string type, help;
    std::map<std::string, std::unique_ptr<Counter>> counters;  // key: rendered labels
    std::map<std::string, std::unique_ptr<Histogram>> histograms;
    std::function<double()> read;  // gauges and counter_fn
  };
  Family& family(const std::string& name, const std::string& type, const std::string& help);
  mutable std::mutex mu_;
  std::map<std::string, Family> families_;  // sorted by name: a stable exposition order
};

// {a="x",b="y"} with Prometheus escaping (backslash, quote, newline); "" for no labels.
std::string render_labels(const Labels& labels);
// A sample value: integers without a fraction, +Inf / -Inf / NaN spelled as Prometheus does.
std::string format_value(double v);

}  // namespace tessera::server
