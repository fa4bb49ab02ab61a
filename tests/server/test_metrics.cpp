// The Prometheus text the registry renders: HELP/TYPE once per family, label escaping,
// cumulative histogram buckets with _sum and _count.
#include <gtest/gtest.h>

#include <thread>

#include "server/metrics.h"

namespace tessera::server {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST(Metrics, CountersWithLabels) {
  MetricsRegistry m;
  m.counter("tessera_x_total", "Things", {{"status", "200"}}).inc();
  m.counter("tessera_x_total", "Things", {{"status", "200"}}).inc(2);
  m.counter("tessera_x_total", "Things", {{"status", "404"}}).inc();
  const std::string t = m.render();
  EXPECT_TRUE(has_line(t, "# HELP tessera_x_total Things")) << t;
  EXPECT_TRUE(has_line(t, "# TYPE tessera_x_total counter")) << t;
  EXPECT_TRUE(has_line(t, "tessera_x_total{status=\"200\"} 3")) << t;
  EXPECT_TRUE(has_line(t, "tessera_x_total{status=\"404\"} 1")) << t;
  EXPECT_EQ(t.find("# TYPE tessera_x_total"), t.rfind("# TYPE tessera_x_total"));
}

TEST(Metrics, HistogramBucketsAreCumulative) {
  MetricsRegistry m;
  Histogram& h =
      m.histogram("tessera_lat_seconds", "Latency", {0.1, 1, 10}, {{"endpoint", "chat"}});
  for (double v : {0.05, 0.1, 0.5, 2.0, 100.0}) h.observe(v);
  const std::string t = m.render();
  EXPECT_TRUE(has_line(t, "tessera_lat_seconds_bucket{endpoint=\"chat\",le=\"0.1\"} 2"))
      << t;  // le is inclusive
  EXPECT_TRUE(has_line(t, "tessera_lat_seconds_bucket{endpoint=\"chat\",le=\"1\"} 3")) << t;
  EXPECT_TRUE(has_line(t, "tessera_lat_seconds_bucket{endpoint=\"chat\",le=\"10\"} 4")) << t;
  EXPECT_TRUE(has_line(t, "tessera_lat_seconds_bucket{endpoint=\"chat\",le=\"+Inf\"} 5")) << t;
  EXPECT_TRUE(has_line(t, "tessera_lat_seconds_sum{endpoint=\"chat\"} 102.65")) << t;
  EXPECT_TRUE(has_line(t, "tessera_lat_seconds_count{endpoint=\"chat\"} 5")) << t;
}

TEST(Metrics, GaugesReadAtScrapeTime) {
  MetricsRegistry m;
  int v = 3;
  m.gauge("tessera_g", "A gauge", [&] { return v; });
  EXPECT_TRUE(has_line(m.render(), "tessera_g 3"));
  v = 7;
  EXPECT_TRUE(has_line(m.render(), "tessera_g 7"));
}

TEST(Metrics, LabelEscapingAndValues) {
  EXPECT_EQ(render_labels({{"a", "x\"y\\z\nw"}}), "{a=\"x\\\"y\\\\z\\nw\"}");
  EXPECT_EQ(render_labels({}), "");
  EXPECT_EQ(format_value(3), "3");
  EXPECT_EQ(format_value(0.25), "0.25");
  EXPECT_EQ(format_value(1.0 / 0.0), "+Inf");
}

TEST(Metrics, ConcurrentIncrementsAreNotLost) {
  MetricsRegistry m;
  Counter& c = m.counter("tessera_c_total", "C");
  Histogram& h = m.histogram("tessera_h", "H", {1});
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) c.inc(), h.observe(0.5);
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(c.value(), 40000);
  EXPECT_EQ(h.count(), 40000u);
}

TEST(Metrics, TypeClashIsRefused) {
  MetricsRegistry m;
  m.counter("tessera_y", "Y");
  EXPECT_THROW(m.histogram("tessera_y", "Y", {1}), std::logic_error);
}

}  // namespace
}  // namespace tessera::server
