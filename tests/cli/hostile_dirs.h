// Model directories with one thing wrong, for the tests of bad inputs (the README's table
// "Bad inputs and what they get"): the micro Gemma 3 of tests/models/micro_model.h with a
// hand-written tokenizer.json, and a runner that gives up on a command that hangs.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "../models/micro_model.h"
#include "cli_runner.h"

namespace tessera::testing {

// 64 one-character tokens (ids 0-63, the micro model's whole vocabulary) and, when
// `past_vocab`, the added token "<big>" with id 100, past it.
inline void write_micro_tokenizer(const std::string& dir, bool past_vocab) {
  const std::string chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .";
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < chars.size(); ++i) vocab[std::string(1, chars[i])] = i;
  nlohmann::json added = nlohmann::json::array();
  if (past_vocab)
    added.push_back({{"id", 100},
                     {"content", "<big>"},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", false}});
  const nlohmann::json tok = {
      {"version", "1.0"},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer", nullptr},
      {"post_processor", nullptr},
      {"decoder", nullptr},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}};
  std::ofstream(dir + "/tokenizer.json") << tok.dump();
}

// The micro model under `name`, with the micro tokenizer.
inline std::string micro_dir(const std::string& name, const nlohmann::json& config,
                             bool past_vocab = false) {
  const std::string dir = write_micro_model(name, config, micro_gemma_tensors(config));
  write_micro_tokenizer(dir, past_vocab);
  return dir;
}

inline std::string micro_dir(const std::string& name) {
  return micro_dir(name, micro_gemma_config());
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// A command that must fail with status 1 and a message holding `message`, within a minute.
inline void expect_refused(const std::string& args, const std::string& message,
                           const std::string& stdin_text = "") {
  const CliResult r = run_tessera(args, stdin_text, 60);
  EXPECT_EQ(r.status, 1) << args << "\n" << r.err;
  EXPECT_NE(r.err.find("tessera: error: "), std::string::npos) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(message), std::string::npos) << args << "\n" << r.err;
}

}  // namespace tessera::testing
