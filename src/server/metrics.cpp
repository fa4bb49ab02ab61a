#include "server/metrics.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace tessera::server {

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), buckets_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 1; i < bounds_.size(); ++i)
    if (!(bounds_[i] > bounds_[i - 1])) throw std::invalid_argument("histogram bounds must ascend");
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0);
}

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;  // le: v <= bound falls in the bucket
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<uint64_t> Histogram::bucket_counts() const {
  std::vector<uint64_t> out(bounds_.size() + 1);
  for (size_t i = 0; i < out.size(); ++i) out[i] = buckets_[i].load(std::memory_order_relaxed);
  return out;
}

std::string render_labels(const Labels& labels) {
  if (labels.empty()) return "";
  std::string s = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i) s += ',';
    s += labels[i].first + "=\"";
    for (char c : labels[i].second) {
      if (c == '\\')
        s += "\\\\";
      else if (c == '"')
        s += "\\\"";
      else if (c == '\n')
        s += "\\n";
      else
        s += c;
    }
    s += '"';
  }
  return s + "}";
}

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.9g", v);
  }
  return buf;
}

MetricsRegistry::Family& MetricsRegistry::family(const std::string& name, const std::string& type,
                                                 const std::string& help) {
  auto [it, fresh] = families_.try_emplace(name);
  if (fresh) {
    it->second.type = type;
    it->second.help = help;
  } else if (it->second.type != type) {
    throw std::logic_error("metric " + name + " registered as " + it->second.type + " and " + type);
  }
  return it->second;
}

Counter& MetricsRegistry::counter(const std::string& name, const std::string& help,
                                  const Labels& labels) {
  std::lock_guard<std::mutex> lk(mu_);
  auto& slot = family(name, "counter", help).counters[render_labels(labels)];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

Histogram& MetricsRegistry::histogram(const std::string& name, const std::string& help,
                                      std::vector<double> bounds, const Labels& labels) {
  std::lock_guard<std::mutex> lk(mu_);
  auto& slot = family(name, "histogram", help).histograms[render_labels(labels)];
  if (!slot) slot = std::make_unique<Histogram>(std::move(bounds));
  return *slot;
}

void MetricsRegistry::gauge(const std::string& name, const std::string& help,
                            std::function<double()> read) {
  std::lock_guard<std::mutex> lk(mu_);
  family(name, "gauge", help).read = std::move(read);
}

void MetricsRegistry::counter_fn(const std::string& name, const std::string& help,
                                 std::function<double()> read) {
  std::lock_guard<std::mutex> lk(mu_);
  family(name, "counter", help).read = std::move(read);
}

std::string MetricsRegistry::render() const {
  std::lock_guard<std::mutex> lk(mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    out += "# HELP " + name + " " + f.help + "\n# TYPE " + name + " " + f.type + "\n";
    if (f.read) out += name + " " + format_value(f.read()) + "\n";
    for (const auto& [labels, c] : f.counters)
      out += name + labels + " " + format_value(c->value()) + "\n";
    for (const auto& [labels, h] : f.histograms) {
      // le joins the family's own labels inside one {...}.
      const std::string inner = labels.empty() ? "" : labels.substr(1, labels.size() - 2) + ",";
      const auto counts = h->bucket_counts();
      uint64_t cum = 0;
      for (size_t i = 0; i < counts.size(); ++i) {
        cum += counts[i];
        const std::string le = i < h->bounds().size() ? format_value(h->bounds()[i]) : "+Inf";
        out += name + "_bucket{" + inner + "le=\"" + le + "\"} " +
               format_value(static_cast<double>(cum)) + "\n";
      }
      out += name + "_sum" + labels + " " + format_value(h->sum()) + "\n";
      // _count is the +Inf bucket's cumulative count, so the two agree under concurrent updates.
      out += name + "_count" + labels + " " + format_value(static_cast<double>(cum)) + "\n";
    }
  }
  return out;
}

}  // namespace tessera::server
