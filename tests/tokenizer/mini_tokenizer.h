// Hand-built tokenizer.json files for component tests: a BPE vocabulary of the given tokens
// (ids in order), merges, and whatever normalizer / pre-tokenizer / decoder / added tokens a
// test sets, written to a temporary file and loaded through Tokenizer::load.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace tessera::test {

struct MiniTokenizer {
  std::vector<std::string> vocab;  // id = index
  nlohmann::json merges = nlohmann::json::array();
  nlohmann::json model_extra = nlohmann::json::object();              // merged into "model"
  nlohmann::json normalizer, pre_tokenizer, post_processor, decoder;  // null = absent
  nlohmann::json added_tokens = nlohmann::json::array();
  std::string config_text;  // tokenizer_config.json, written as it is, when not empty

  // Adds an added token with the next id (after the vocabulary and earlier added tokens).
  int add_token(const std::string& content, bool special, nlohmann::json options = {});

  nlohmann::json to_json() const;
  // Writes tokenizer.json (and tokenizer_config.json) into a fresh temporary directory.
  std::string write() const;
  std::unique_ptr<Tokenizer> load() const;
  // The id of a vocabulary token; fails the test when absent.
  int id(const std::string& token) const;
};

// Every byte as a <0xNN> token, for byte_fallback vocabularies.
std::vector<std::string> byte_tokens();

}  // namespace tessera::test
