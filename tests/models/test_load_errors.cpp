// Every malformed model directory gets a clear error naming the file, key or tensor at fault.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "backend/backend.h"
#include "engine/direct_runner.h"
#include "io/safetensors.h"
#include "load_error.h"
#include "micro_model.h"
#include "models/model.h"
#include "process_temp.h"
#include "tessera/error.h"

namespace tessera {
namespace {

using testing::micro_gemma_config;
using testing::micro_gemma_tensors;
using testing::write_micro_model;
namespace fs = std::filesystem;

using testing::load_error;

TEST(LoadErrors, MicroModelLoads) {
  auto c = micro_gemma_config();
  EXPECT_EQ(load_error(write_micro_model("ok", c, micro_gemma_tensors(c))), "");
}

TEST(LoadErrors, MissingConfig) {
  auto c = micro_gemma_config();
  std::string dir = write_micro_model("noconfig", c, micro_gemma_tensors(c));
  fs::remove(fs::path(dir) / "config.json");
  EXPECT_NE(load_error(dir).find("no config.json"), std::string::npos);
}

TEST(LoadErrors, UnknownArchitecture) {
  auto c = micro_gemma_config();
  c["architectures"] = {"FalconForCausalLM"};
  ErrorKind k{};
  std::string msg = load_error(write_micro_model("arch", c, micro_gemma_tensors(c)), &k);
  EXPECT_NE(msg.find("unknown architecture 'FalconForCausalLM'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("config.json"), std::string::npos) << msg;
  EXPECT_EQ(k, ErrorKind::unsupported);
}

TEST(LoadErrors, MissingTensor) {
  auto c = micro_gemma_config();
  auto t = micro_gemma_tensors(c);
  std::erase_if(t, [](const auto& m) { return m.name == "model.layers.1.mlp.up_proj.weight"; });
  std::string msg = load_error(write_micro_model("missing", c, t));
  EXPECT_NE(msg.find("missing tensor 'layers.1.mlp.up_proj.weight'"), std::string::npos) << msg;
}

TEST(LoadErrors, UnexpectedTensor) {
  auto c = micro_gemma_config();
  auto t = micro_gemma_tensors(c);
  t.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq", {4}, {1, 2, 3, 4}});
  std::string msg = load_error(write_micro_model("unexpected", c, t));
  EXPECT_NE(msg.find("unexpected tensor 'model.layers.0.self_attn.rotary_emb.inv_freq'"),
            std::string::npos)
      << msg;
}

TEST(LoadErrors, ShapeDisagreesWithConfig) {
  auto c = micro_gemma_config();
  auto t = micro_gemma_tensors(c);
  c["intermediate_size"] = 48;  // tensors are [32, 16]
  std::string msg = load_error(write_micro_model("shape", c, t));
  EXPECT_NE(msg.find("mlp.gate_proj.weight' has shape [32, 16]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("implies [48, 16]"), std::string::npos) << msg;
}

TEST(LoadErrors, BadConfigValue) {
  auto c = micro_gemma_config();
  c["num_key_value_heads"] = 3;  // does not divide 2 heads
  std::string msg = load_error(write_micro_model("kvheads", c, micro_gemma_tensors(c)));
  EXPECT_NE(msg.find("num_key_value_heads"), std::string::npos) << msg;
  c = micro_gemma_config();
  auto t = micro_gemma_tensors(c);
  c["hidden_size"] = "sixteen";
  msg = load_error(write_micro_model("hidden", c, t));
  EXPECT_NE(msg.find("'hidden_size' is not an integer"), std::string::npos) << msg;
}

// Rewrites a file's bytes in place.
void patch_file(const std::string& path, const std::function<void(std::string&)>& fn) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  fn(bytes);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string safetensors_path(const std::string& dir) {
  return dir + "/model.safetensors";
}

TEST(LoadErrors, TruncatedSafetensors) {
  auto c = micro_gemma_config();
  std::string dir = write_micro_model("trunc", c, micro_gemma_tensors(c));
  patch_file(safetensors_path(dir), [](std::string& b) { b.resize(b.size() - 100); });
  std::string msg = load_error(dir);
  EXPECT_NE(msg.find("model.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("out of range"), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
}

TEST(LoadErrors, TinyFile) {
  auto c = micro_gemma_config();
  std::string dir = write_micro_model("tiny", c, micro_gemma_tensors(c));
  patch_file(safetensors_path(dir), [](std::string& b) { b.resize(5); });
  EXPECT_NE(load_error(dir).find("truncated safetensors file"), std::string::npos);
}

TEST(LoadErrors, HeaderLengthBeyondFile) {
  auto c = micro_gemma_config();
  std::string dir = write_micro_model("hdrlen", c, micro_gemma_tensors(c));
  patch_file(safetensors_path(dir), [](std::string& b) {
    uint64_t huge = uint64_t{1} << 40;
    std::memcpy(b.data(), &huge, 8);
  });
  std::string msg = load_error(dir);
  EXPECT_NE(msg.find("header length 1099511627776 runs beyond the end of the file"),
            std::string::npos)
      << msg;
}

// Replaces the JSON header (keeping the data section) with `edit` applied to it.
void edit_header(const std::string& path, const std::function<void(nlohmann::json&)>& edit) {
  patch_file(path, [&](std::string& b) {
    uint64_t n;
    std::memcpy(&n, b.data(), 8);
    nlohmann::json h = nlohmann::json::parse(b.substr(8, n));
    std::string data = b.substr(8 + n);
    edit(h);
    std::string hs = h.dump();
    uint64_t len = hs.size();
    b.assign(reinterpret_cast<const char*>(&len), 8);
    b += hs + data;
  });
}

TEST(LoadErrors, OffsetsOutOfRange) {
  auto c = micro_gemma_config();
  std::string dir = write_micro_model("offsets", c, micro_gemma_tensors(c));
  edit_header(safetensors_path(dir), [](nlohmann::json& h) {
    auto& e = h["model.norm.weight"]["data_offsets"];
    e[0] = e[0].get<uint64_t>() + 1000000;
    e[1] = e[1].get<uint64_t>() + 1000000;
  });
  std::string msg = load_error(dir);
  EXPECT_NE(msg.find("'model.norm.weight': data_offsets"), std::string::npos) << msg;
  EXPECT_NE(msg.find("out of range"), std::string::npos) << msg;
}

TEST(LoadErrors, OverlappingTensors) {
  auto c = micro_gemma_config();
  std::string dir = write_micro_model("overlap", c, micro_gemma_tensors(c));
  edit_header(safetensors_path(dir), [](nlohmann::json& h) {
    // Point the final norm at the first 64 bytes of the embedding.
    h["model.norm.weight"]["data_offsets"] = h["model.embed_tokens.weight"]["data_offsets"];
    h["model.norm.weight"]["data_offsets"][1] =
        h["model.norm.weight"]["data_offsets"][0].get<uint64_t>() + 64;
  });
  std::string msg = load_error(dir);
  EXPECT_NE(msg.find("overlap"), std::string::npos) << msg;
}

TEST(LoadErrors, SizeDisagreesWithDtype) {
  auto c = micro_gemma_config();
  std::string dir = write_micro_model("dtsize", c, micro_gemma_tensors(c));
  edit_header(safetensors_path(dir),
              [](nlohmann::json& h) { h["model.norm.weight"]["dtype"] = "BF16"; });
  std::string msg = load_error(dir);
  EXPECT_NE(msg.find("'model.norm.weight': holds 64 bytes but shape [16] of BF16 needs 32"),
            std::string::npos)
      << msg;
}

TEST(LoadErrors, UnsupportedDtype) {
  auto c = micro_gemma_config();
  std::string dir = write_micro_model("i32", c, micro_gemma_tensors(c));
  edit_header(safetensors_path(dir),
              [](nlohmann::json& h) { h["model.norm.weight"]["dtype"] = "I32"; });
  std::string msg = load_error(dir);
  EXPECT_NE(msg.find("'model.norm.weight' has dtype I32"), std::string::npos) << msg;
}

TEST(LoadErrors, HeaderNotJson) {
  auto c = micro_gemma_config();
  std::string dir = write_micro_model("notjson", c, micro_gemma_tensors(c));
  patch_file(safetensors_path(dir), [](std::string& b) { b[8] = '#'; });
  EXPECT_NE(load_error(dir).find("header is not valid JSON"), std::string::npos);
}

TEST(LoadErrors, TokenIdsValidated) {
  auto c = micro_gemma_config();
  std::string dir = write_micro_model("tokens", c, micro_gemma_tensors(c));
  auto be = make_cpu_backend();
  ModelDir d(dir);
  auto m = load_model(d, *be, {});
  DirectRunner r(*m, 16);
  std::vector<std::vector<int32_t>> bad{{1, 64, 2}};
  try {
    r.step(bad, false);
    FAIL() << "no error for id 64";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("token id 64 at index 1 is outside the vocabulary [0, 64)"),
        std::string::npos)
        << e.what();
  }
  std::vector<int32_t> empty;
  EXPECT_THROW(validate_tokens(empty, 64), Error);
  std::vector<int32_t> neg{-1};
  EXPECT_THROW(validate_tokens(neg, 64), Error);
}

// Rewriting a safetensors file that another reader has mapped (make-model over an existing
// directory while a server runs from it) must not pull the pages out from under that reader: the
// writer replaces the file by rename, so the old mapping keeps the old bytes.
TEST(LoadErrors, RewritingAMappedFileKeepsTheOldMapping) {
  const std::filesystem::path path = testing::process_temp_dir("tessera_remap");
  std::vector<float> a(4096, 1.5f), b(16, 2.5f);
  write_safetensors(path.string(), {{"w", DType::f32, {4096}, a.data()}});
  SafetensorsFile mapped(path.string());
  write_safetensors(path.string(), {{"w", DType::f32, {16}, b.data()}});
  const auto& old = mapped.tensors().at("w");
  const float* p = static_cast<const float*>(old.data);
  EXPECT_EQ(p[4095], 1.5f);  // past the new file's end: SIGBUS if the file was truncated in place
  SafetensorsFile fresh(path.string());
  EXPECT_EQ(fresh.tensors().at("w").numel(), 16);
  EXPECT_FALSE(std::filesystem::exists(path.string() + ".tmp" + std::to_string(::getpid())));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tessera
