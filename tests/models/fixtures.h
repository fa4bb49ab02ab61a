// Reader for the transformers parity fixtures made by scripts/fixtures/make_model_fixtures.py:
// tests/fixtures/models/<name>/{config.json, model.safetensors, generation_config.json,
// expected.json, logits.bin}.
#pragma once

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tessera::testing {

struct ModelFixture {
  std::string name, dir;
  nlohmann::json expected;
  std::vector<std::vector<int32_t>> sequences;
  std::vector<std::vector<std::vector<float>>> logits;  // [seq][position][vocab]
  std::vector<std::vector<int32_t>> greedy, greedy_min;
};

inline std::string fixtures_root() {
  return std::string(TESSERA_SOURCE_DIR) + "/tests/fixtures/models";
}

// The fixtures under `root` (tests/fixtures/models; tests/fixtures/quant holds the quantized ones,
// made by scripts/fixtures/make_quant_fixtures.py in the same format).
inline std::vector<ModelFixture> load_model_fixtures(const std::string& root = fixtures_root()) {
  namespace fs = std::filesystem;
  std::vector<ModelFixture> out;
  if (!fs::exists(root)) return out;
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory() && fs::exists(e.path() / "expected.json")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& d : dirs) {
    ModelFixture f;
    f.name = d.filename().string();
    f.dir = d.string();
    f.expected = nlohmann::json::parse(std::ifstream(d / "expected.json"));
    f.sequences = f.expected["sequences"].get<std::vector<std::vector<int32_t>>>();
    f.greedy = f.expected["greedy"].get<std::vector<std::vector<int32_t>>>();
    f.greedy_min = f.expected["greedy_min"].get<std::vector<std::vector<int32_t>>>();
    std::ifstream bin(d / "logits.bin", std::ios::binary);
    for (const auto& shape : f.expected["logits_shapes"]) {
      const int64_t n = shape[0], v = shape[1];
      std::vector<std::vector<float>> rows(static_cast<size_t>(n),
                                           std::vector<float>(static_cast<size_t>(v)));
      for (auto& r : rows)
        bin.read(reinterpret_cast<char*>(r.data()), static_cast<std::streamsize>(v * 4));
      f.logits.push_back(std::move(rows));
    }
    out.push_back(std::move(f));
  }
  return out;
}

// max |a - b| / max |b| over a row: the parity measure of issue #2.
inline double row_error(const std::vector<float>& a, const std::vector<float>& b) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    err = std::max(err, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return err / std::max(scale, 1e-30);
}

}  // namespace tessera::testing
