// Hostile model directories, through `tessera info` as a user meets them: each gets exit status 1
// and one line naming the file and the key or tensor at fault, within a minute (no hang, no
// signal). The README's table "Bad inputs and what they get" lists these cases.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "hostile_dirs.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using testing::expect_refused;
using testing::micro_dir;
using testing::write_text;

std::string info(const std::string& dir) {
  return "info --model " + dir;
}

// A safetensors file from its header text and `data_bytes` zero bytes.
void write_raw_safetensors(const std::string& path, const std::string& header, size_t data_bytes) {
  std::string bytes(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  write_text(path, bytes + header + std::string(data_bytes, '\0'));
}

TEST(BadModelCli, MicroModelLoads) {
  auto r = testing::run_tessera(info(micro_dir("bm_ok")), "", 60);
  EXPECT_EQ(r.status, 0) << r.err;
}

TEST(BadModelCli, IntegersPast32BitsAreRefusedNotTruncated) {
  auto c = testing::micro_gemma_config();
  const auto tensors = testing::micro_gemma_tensors(c);
  c["num_hidden_layers"] = (int64_t{1} << 32) + 2;  // cast to int, it was 2: the model loaded
  expect_refused(info(testing::write_micro_model("bm_layers", c, tensors)),
                 "config.json: key 'num_hidden_layers' is 4294967298, outside the 32-bit range");
  // In range, but sized into per-layer arrays before any tensor was read: gigabytes, then a
  // bare std::bad_alloc.
  c = testing::micro_gemma_config();
  c.erase("layer_types");
  c["num_hidden_layers"] = INT32_MAX;
  expect_refused(info(testing::write_micro_model("bm_layers_max", c, tensors)),
                 "key 'num_hidden_layers' is 2147483647 but the weights hold 2 layers");
  // An EOS id past 32 bits wrapped to a valid one.
  const std::string eos = micro_dir("bm_eos");
  write_text(eos + "/generation_config.json", R"({"eos_token_id": [1, 4294967297]})");
  expect_refused(info(eos),
                 "generation_config.json: key 'eos_token_id' holds 4294967297, "
                 "outside the 32-bit range");
  c = testing::micro_gemma_config();
  c["quantization"] = {{"bits", (int64_t{1} << 32) + 4}, {"group_size", 64}};
  expect_refused(info(testing::write_micro_model("bm_bits", c, tensors)),
                 "key 'bits' is 4294967300, outside the 32-bit range");
  c = testing::micro_gemma_config();
  c["vocab_size"] = uint64_t{1} << 63;
  expect_refused(info(testing::write_micro_model("bm_vocab", c, tensors)),
                 "key 'vocab_size' is 9223372036854775808, outside the 32-bit range");
}

TEST(BadModelCli, ValuesThatGiveNaNAreRefused) {
  const std::pair<const char*, nlohmann::json> cases[] = {
      {"rms_norm_eps", 0},          {"rms_norm_eps", -1e-6}, {"query_pre_attn_scalar", -8},
      {"query_pre_attn_scalar", 0}, {"rope_theta", 0},       {"rope_local_base_freq", -10000},
      {"rope_theta", 1e-300},       {"rms_norm_eps", 1e300},  // 0 and inf as floats
  };
  for (const auto& [key, value] : cases) {
    auto c = testing::micro_gemma_config();
    const auto tensors = testing::micro_gemma_tensors(c);
    c[key] = value;
    expect_refused(info(testing::write_micro_model("bm_range", c, tensors)),
                   std::string("config.json: key '") + key + "' must be a finite number > 0 (got " +
                       value.dump() + ")");
  }
  auto c = testing::micro_gemma_config();
  const auto tensors = testing::micro_gemma_tensors(c);
  c["final_logit_softcapping"] = -30;
  expect_refused(info(testing::write_micro_model("bm_softcap", c, tensors)),
                 "key 'final_logit_softcapping' must be a finite number >= 0");
}

TEST(BadModelCli, HeadsMustDivideHidden) {
  nlohmann::json c = {{"architectures", {"LlamaForCausalLM"}},
                      {"vocab_size", 64},
                      {"hidden_size", 16},
                      {"intermediate_size", 32},
                      {"num_hidden_layers", 1},
                      {"num_attention_heads", 3},
                      {"num_key_value_heads", 1}};
  expect_refused(info(testing::write_micro_model("bm_heads", c, {})),
                 "key 'num_attention_heads' must divide hidden_size (16) when head_dim is not "
                 "given");
}

TEST(BadModelCli, DeeplyNestedJsonIsRefusedBeforeParsing) {
  const std::string dir = micro_dir("bm_deep");
  nlohmann::json c = testing::micro_gemma_config();
  std::string text = c.dump();
  text.pop_back();
  text += ", \"x\": " + std::string(200000, '[') + std::string(200000, ']') + "}";
  write_text(dir + "/config.json", text);
  expect_refused(info(dir), "config.json: JSON nested deeper than 128 levels");

  const std::string dir2 = micro_dir("bm_deep_header");
  write_raw_safetensors(dir2 + "/extra.safetensors",
                        "{\"__metadata__\": " + std::string(100000, '[') + "}", 0);
  expect_refused(info(dir2),
                 "extra.safetensors: the safetensors header: JSON nested deeper than 128 levels");

  // The tokenizer's files, read with simdjson: the same limit.
  for (const std::string file : {"tokenizer.json", "tokenizer_config.json"}) {
    const std::string dir4 = micro_dir("bm_deep_tok");
    write_text(dir4 + "/" + file, "{\"a\": " + std::string(100000, '[') + "}");
    expect_refused("tokenize --tokenizer " + dir4 + " --text ab",
                   file + ": JSON nested deeper than 128 levels");
  }

  const std::string dir3 = micro_dir("bm_deep_gen");
  write_text(dir3 + "/generation_config.json", std::string(100000, '{'));
  expect_refused(info(dir3), "generation_config.json: JSON nested deeper than 128 levels");
}

TEST(BadModelCli, TokenizerIdsFarPastTheVocabulary) {
  // tokenizer.json's ids index tables: id 2e9 sized them at 32 GB (a bare std::bad_alloc).
  const std::string dir = micro_dir("bm_tok_id");
  const nlohmann::json tok = {{"model",
                               {{"type", "BPE"},
                                {"vocab", {{"a", 0}, {"z", 2000000000}}},
                                {"merges", nlohmann::json::array()}}}};
  write_text(dir + "/tokenizer.json", tok.dump());
  expect_refused("tokenize --tokenizer " + dir + " --text az",
                 "tokenizer.json: model.vocab: token \"z\" has id 2000000000, far past the "
                 "vocabulary's 2 tokens");
}

TEST(BadModelCli, ShardsAreRegularFilesInsideTheDirectory) {
  const std::string dir = micro_dir("bm_shard_dir");
  fs::create_directory(dir + "/extra.safetensors");
  expect_refused(info(dir), "extra.safetensors: is a directory, not a safetensors file");

  // A named pipe: open() for reading would wait for a writer forever.
  const std::string dir2 = micro_dir("bm_shard_fifo");
  fs::remove(dir2 + "/model.safetensors");
  ASSERT_EQ(::mkfifo((dir2 + "/model.safetensors").c_str(), 0600), 0);
  expect_refused(info(dir2), "model.safetensors: is a named pipe, not a safetensors file");
  // The directory's JSON files too.
  const std::string dir4 = micro_dir("bm_config_fifo");
  fs::remove(dir4 + "/config.json");
  ASSERT_EQ(::mkfifo((dir4 + "/config.json").c_str(), 0600), 0);
  expect_refused(info(dir4), "config.json: is a named pipe");
  const std::string dir5 = micro_dir("bm_gen_dir");
  fs::create_directory(dir5 + "/generation_config.json");
  expect_refused(info(dir5), "generation_config.json: is a directory");

  for (const std::string shard : {"../outside.safetensors", "/etc/passwd", "a/../../b"}) {
    const std::string dir3 = micro_dir("bm_shard_escape");
    write_text(dir3 + "/model.safetensors.index.json",
               nlohmann::json{{"weight_map", {{"model.norm.weight", shard}}}}.dump());
    expect_refused(info(dir3),
                   "model.safetensors.index.json: weight_map['model.norm.weight'] "
                   "names '" +
                       shard + "', which is not a file inside the model directory");
  }
}

TEST(BadModelCli, OverlapsAndOversizedShapesAreFound) {
  // b overlaps a; the zero-length z sorts between them and used to hide the overlap.
  const std::string dir = micro_dir("bm_overlap");
  write_raw_safetensors(dir + "/extra.safetensors",
                        R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                            "z": {"dtype": "F32", "shape": [0], "data_offsets": [8, 8]},
                            "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}})",
                        24);
  expect_refused(info(dir), "extra.safetensors: tensors 'a' and 'b' overlap in the data section");
  // A long tensor holding a short one and then one past the short one's end.
  write_raw_safetensors(dir + "/extra.safetensors",
                        R"({"a": {"dtype": "F32", "shape": [8], "data_offsets": [0, 32]},
                            "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]},
                            "c": {"dtype": "F32", "shape": [2], "data_offsets": [12, 20]}})",
                        32);
  expect_refused(info(dir), "tensors 'a' and 'b' overlap");
  // 2^32 x 2^32 elements: the byte count wrapped to 0 and matched an empty range.
  write_raw_safetensors(
      dir + "/extra.safetensors",
      R"({"w": {"dtype": "U8", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}})", 0);
  expect_refused(info(dir),
                 "tensor 'w': shape [4294967296, 4294967296] has more elements than "
                 "64 bits can count");
}

}  // namespace
}  // namespace tessera
