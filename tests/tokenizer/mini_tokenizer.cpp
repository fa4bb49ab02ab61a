#include "tokenizer/mini_tokenizer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "process_temp.h"

namespace tessera::test {

int MiniTokenizer::add_token(const std::string& content, bool special, nlohmann::json options) {
  int id = static_cast<int>(vocab.size() + added_tokens.size());
  nlohmann::json t = {{"id", id},          {"content", content}, {"single_word", false},
                      {"lstrip", false},   {"rstrip", false},    {"normalized", !special},
                      {"special", special}};
  if (options.is_object()) {
    for (auto& [k, v] : options.items()) t[k] = v;
  }
  added_tokens.push_back(t);
  return id;
}

nlohmann::json MiniTokenizer::to_json() const {
  nlohmann::json v = nlohmann::json::object();
  for (size_t i = 0; i < vocab.size(); ++i) v[vocab[i]] = i;
  nlohmann::json model = {{"type", "BPE"},
                          {"dropout", nullptr},
                          {"unk_token", nullptr},
                          {"continuing_subword_prefix", nullptr},
                          {"end_of_word_suffix", nullptr},
                          {"fuse_unk", false},
                          {"byte_fallback", false},
                          {"ignore_merges", false},
                          {"vocab", v},
                          {"merges", merges}};
  for (auto& [k, val] : model_extra.items()) model[k] = val;
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added_tokens},
          {"normalizer", normalizer},
          {"pre_tokenizer", pre_tokenizer},
          {"post_processor", post_processor},
          {"decoder", decoder},
          {"model", model}};
}

std::string MiniTokenizer::write() const {
  static std::atomic<int> counter{0};
  // Removed when the test program exits.
  const std::filesystem::path dir =
      testing::process_temp_dir("tessera_tok_" + std::to_string(counter++));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << to_json().dump();
  if (!config_text.empty()) std::ofstream(dir / "tokenizer_config.json") << config_text;
  return dir.string();
}

std::unique_ptr<Tokenizer> MiniTokenizer::load() const {
  return Tokenizer::load(write());
}

int MiniTokenizer::id(const std::string& token) const {
  for (size_t i = 0; i < vocab.size(); ++i)
    if (vocab[i] == token) return static_cast<int>(i);
  ADD_FAILURE() << "no token " << token;
  return -1;
}

std::vector<std::string> byte_tokens() {
  std::vector<std::string> out;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    out.push_back(name);
  }
  return out;
}

}  // namespace tessera::test
