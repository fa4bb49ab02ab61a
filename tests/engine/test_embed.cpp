// Engine::embed over the transformers parity fixtures (tests/fixtures/models), exact without a
// reference of its own: a decoder's logits are its final hidden state times the LM head (no bias;
// these fixtures have no final softcap), so a pooled hidden state e must give
// e W^T == the pooled logits rows the fixture holds: mean pooling the mean of every position's
// row, CLS position 0's, last the last position's. Normalisation and the Matryoshka truncation
// are checked against the unnormalised vector. Tolerance 1e-4 as the logits parity tests'.
// A sentence-transformers directory made here around a fixture (its modules.json, a CLS pooling
// config, a Dense layer with a bias, Normalize) must give dense(cls state), normalised; exactness
// against sentence-transformers itself needs scripts/fixtures/make_embedding_fixtures.py's files.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>

#include "io/safetensors.h"
#include "models/fixtures.h"
#include "tessera/engine.h"

namespace tessera {
namespace {

using testing::row_error;

struct Head {
  std::vector<float> w;  // [vocab, hidden] f32
  int64_t vocab = 0, hidden = 0;
};

Head read_head(const std::string& dir) {
  SafetensorsFile f(dir + "/model.safetensors");
  auto it = f.tensors().find("lm_head.weight");
  if (it == f.tensors().end()) it = f.tensors().find("model.embed_tokens.weight");  // tied
  if (it == f.tensors().end())  // tied, multimodal layout (Gemma4ForConditionalGeneration)
    it = f.tensors().find("model.language_model.embed_tokens.weight");
  if (it == f.tensors().end()) {
    ADD_FAILURE() << dir << ": no LM head or embedding tensor";
    return {};
  }
  const TensorInfo& t = it->second;
  EXPECT_EQ(t.dtype_name, "F32");
  Head h;
  h.vocab = t.shape[0];
  h.hidden = t.shape[1];
  h.w.assign(static_cast<const float*>(t.data), static_cast<const float*>(t.data) + t.numel());
  return h;
}

std::vector<float> project(const Head& h, const std::vector<float>& e) {
  std::vector<float> out(static_cast<size_t>(h.vocab));
  for (int64_t v = 0; v < h.vocab; ++v) {
    double s = 0;
    for (int64_t c = 0; c < h.hidden; ++c) s += static_cast<double>(h.w[v * h.hidden + c]) * e[c];
    out[v] = static_cast<float>(s);
  }
  return out;
}

std::vector<float> pooled_logits(const std::vector<std::vector<float>>& rows, Pooling p) {
  if (p == Pooling::cls) return rows.front();
  if (p == Pooling::last) return rows.back();
  std::vector<double> sum(rows[0].size(), 0.0);
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) sum[i] += r[i];
  std::vector<float> out(sum.size());
  for (size_t i = 0; i < sum.size(); ++i) out[i] = static_cast<float>(sum[i] / rows.size());
  return out;
}

double norm(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += static_cast<double>(x) * x;
  return std::sqrt(s);
}

std::unique_ptr<Engine> load(const std::string& dir, int batch_tokens = 0) {
  EngineOptions o;
  o.model_dir = dir;
  o.device = "cpu";
  o.dtype = "f32";
  o.context_length = 256;
  o.max_batch_tokens = batch_tokens;
  return Engine::load(o);
}

TEST(Embed, PoolingMatchesTheFixturesLogits) {
  int checked = 0;
  for (const auto& fx : testing::load_model_fixtures()) {
    auto top = nlohmann::json::parse(std::ifstream(fx.dir + "/config.json"));
    const auto& cfg = top.contains("text_config") ? top["text_config"] : top;
    const auto cap = cfg.find("final_logit_softcapping");
    if (cap != cfg.end() && cap->is_number() && cap->get<double>() > 0)
      continue;  // not linear in the state
    SCOPED_TRACE(fx.name);
    const Head head = read_head(fx.dir);
    auto engine = load(fx.dir);
    ASSERT_EQ(engine->embedding_size(), head.hidden);
    std::vector<Prompt> prompts(fx.sequences.begin(), fx.sequences.end());
    for (Pooling p : {Pooling::mean, Pooling::cls, Pooling::last}) {
      SCOPED_TRACE(pooling_name(p));
      EmbedOptions o;
      o.pooling = p;
      o.normalize = false;
      const auto got = engine->embed(prompts, o);
      ASSERT_EQ(got.size(), prompts.size());
      for (size_t s = 0; s < got.size(); ++s) {
        ASSERT_EQ(got[s].error, "");
        ASSERT_EQ(got[s].embedding.size(), static_cast<size_t>(head.hidden));
        EXPECT_EQ(got[s].prompt_tokens, static_cast<int>(fx.sequences[s].size()));
        EXPECT_LE(row_error(project(head, got[s].embedding), pooled_logits(fx.logits[s], p)), 1e-4)
            << "sequence " << s;
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 4);
}

TEST(Embed, NormalizeAndDimensions) {
  const auto fixtures = testing::load_model_fixtures();
  ASSERT_FALSE(fixtures.empty());
  auto engine = load(fixtures[0].dir);
  const std::vector<Prompt> prompts = {fixtures[0].sequences[1]};
  EmbedOptions raw;
  raw.pooling = Pooling::mean;
  raw.normalize = false;
  const std::vector<float> e = engine->embed(prompts, raw)[0].embedding;
  EmbedOptions unit = raw;
  unit.normalize = true;
  const std::vector<float> u = engine->embed(prompts, unit)[0].embedding;
  EXPECT_NEAR(norm(u), 1.0, 1e-6);
  const double n = norm(e);
  for (size_t i = 0; i < e.size(); ++i) EXPECT_NEAR(u[i], e[i] / n, 1e-6);
  EmbedOptions cut = unit;
  cut.dimensions = 16;
  const std::vector<float> t = engine->embed(prompts, cut)[0].embedding;
  ASSERT_EQ(t.size(), 16u);
  EXPECT_NEAR(norm(t), 1.0, 1e-6);
  const std::vector<float> head(e.begin(), e.begin() + 16);
  for (size_t i = 0; i < 16; ++i) EXPECT_NEAR(t[i], head[i] / norm(head), 1e-6);
  // Out of range: a RequestError naming the field.
  cut.dimensions = engine->embedding_size() + 1;
  try {
    engine->embed(prompts, cut);
    FAIL() << "dimensions beyond the hidden size were accepted";
  } catch (const RequestError& err) {
    EXPECT_EQ(err.field(), "dimensions");
  }
}

TEST(Embed, ChunkedPrefillAndBatchingGiveTheSameVectors) {
  const auto fixtures = testing::load_model_fixtures();
  ASSERT_FALSE(fixtures.empty());
  const auto& fx = fixtures[0];
  std::vector<Prompt> prompts(fx.sequences.begin(), fx.sequences.end());
  EmbedOptions o;
  o.pooling = Pooling::mean;
  // Alone on a wide engine, vs all at once on an engine whose step holds 16 tokens (the longer
  // prompts are prefilled in chunks, batched with the others).
  auto wide = load(fx.dir);
  auto narrow = load(fx.dir, 16);
  const auto together = narrow->embed(prompts, o);
  for (size_t s = 0; s < prompts.size(); ++s) {
    const auto alone = wide->embed({prompts[s]}, o);
    ASSERT_EQ(together[s].error, "");
    EXPECT_LE(row_error(together[s].embedding, alone[0].embedding), 1e-5) << "sequence " << s;
  }
  // A prompt's own failure is its own: an id beyond the vocabulary.
  std::vector<Prompt> bad = {fx.sequences[0], std::vector<int32_t>{1 << 30}};
  const auto r = narrow->embed(bad, o);
  EXPECT_EQ(r[0].error, "");
  EXPECT_NE(r[1].error, "");
}

void write_json(const std::filesystem::path& p, const nlohmann::json& j) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << j.dump(2);
}

TEST(Embed, SentenceTransformersDirectory) {
  namespace fs = std::filesystem;
  const auto fixtures = testing::load_model_fixtures();
  ASSERT_FALSE(fixtures.empty());
  const auto& fx = fixtures[0];
  const fs::path dir = fs::temp_directory_path() / ("tessera-st-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"config.json", "model.safetensors", "generation_config.json"})
    fs::copy_file(fs::path(fx.dir) / f, dir / f);
  auto plain = load(fx.dir);
  const int hidden = plain->embedding_size();
  write_json(dir / "modules.json",
             nlohmann::json::array({{{"idx", 0},
                                     {"name", "0"},
                                     {"path", ""},
                                     {"type", "sentence_transformers.models.Transformer"}},
                                    {{"idx", 1},
                                     {"name", "1"},
                                     {"path", "1_Pooling"},
                                     {"type", "sentence_transformers.models.Pooling"}},
                                    {{"idx", 2},
                                     {"name", "2"},
                                     {"path", "2_Dense"},
                                     {"type", "sentence_transformers.models.Dense"}},
                                    {{"idx", 3},
                                     {"name", "3"},
                                     {"path", "3_Normalize"},
                                     {"type", "sentence_transformers.models.Normalize"}}}));
  write_json(dir / "1_Pooling/config.json", {{"word_embedding_dimension", hidden},
                                             {"pooling_mode_cls_token", true},
                                             {"pooling_mode_mean_tokens", false},
                                             {"pooling_mode_lasttoken", false},
                                             {"include_prompt", true}});
  const int out = 12;
  write_json(dir / "2_Dense/config.json",
             {{"in_features", hidden},
              {"out_features", out},
              {"bias", true},
              {"activation_function", "torch.nn.modules.linear.Identity"}});
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 0.2f);
  std::vector<float> w(static_cast<size_t>(out) * hidden), b(out);
  for (float& x : w) x = nd(rng);
  for (float& x : b) x = nd(rng);
  write_safetensors((dir / "2_Dense/model.safetensors").string(),
                    {{"linear.weight", DType::f32, {out, hidden}, w.data()},
                     {"linear.bias", DType::f32, {out}, b.data()}});
  fs::create_directories(dir / "3_Normalize");

  auto st = load(dir.string());
  EXPECT_EQ(st->embedding_size(), out);
  const std::vector<Prompt> prompts(fx.sequences.begin(), fx.sequences.end());
  const auto got = st->embed(prompts, EmbedOptions{});  // pooling from 1_Pooling: CLS
  EmbedOptions cls;
  cls.pooling = Pooling::cls;
  cls.normalize = false;
  const auto base = plain->embed(prompts, cls);
  for (size_t s = 0; s < prompts.size(); ++s) {
    ASSERT_EQ(got[s].error, "");
    std::vector<float> want(out);
    for (int o = 0; o < out; ++o) {
      double acc = b[o];
      for (int i = 0; i < hidden; ++i)
        acc += static_cast<double>(w[o * hidden + i]) * base[s].embedding[i];
      want[o] = static_cast<float>(acc);
    }
    const double n = norm(want);
    for (float& x : want) x = static_cast<float>(x / n);
    EXPECT_LE(row_error(got[s].embedding, want), 1e-5) << "sequence " << s;
  }
  // A pooling mode tessera does not have is refused at load, naming the file.
  write_json(dir / "1_Pooling/config.json",
             {{"pooling_mode_cls_token", false}, {"pooling_mode_max_tokens", true}});
  try {
    load(dir.string());
    FAIL() << "max pooling was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pooling_mode_max_tokens"), std::string::npos) << e.what();
  }
  // sentence-transformers 5+'s form: "pooling_mode" by name (the fixtures of test_embed_st.cpp
  // load through it), and a list of modes (concatenated) is refused.
  write_json(dir / "1_Pooling/config.json", {{"pooling_mode", "cls"}});
  EXPECT_EQ(load(dir.string())->embed(prompts, EmbedOptions{})[0].embedding, got[0].embedding);
  for (const nlohmann::json& mode : {nlohmann::json("max"), nlohmann::json({"cls", "mean"})}) {
    write_json(dir / "1_Pooling/config.json", {{"pooling_mode", mode}});
    EXPECT_THROW(load(dir.string()), Error) << mode.dump();
  }
  fs::remove_all(dir);
}

// config_sentence_transformers.json's prompts, as encode(prompt_name=...) applies them: the
// prompt's text before the input's, the default one when none is named, none for token ids.
TEST(Embed, SentenceTransformersPrompts) {
  namespace fs = std::filesystem;
  const fs::path tiny = fs::path(TESSERA_SOURCE_DIR) / "models/tessera-tiny-en";
  const fs::path dir = fs::temp_directory_path() / ("tessera-stp-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(tiny))
    if (e.is_regular_file()) fs::copy_file(e.path(), dir / e.path().filename());
  write_json(dir / "modules.json",
             nlohmann::json::array(
                 {{{"path", ""}, {"type", "sentence_transformers.models.Transformer"}},
                  {{"path", "1_Pooling"}, {"type", "sentence_transformers.models.Pooling"}}}));
  write_json(dir / "1_Pooling/config.json", {{"pooling_mode_mean_tokens", true}});
  write_json(
      dir / "config_sentence_transformers.json",
      {{"prompts", {{"query", "query: "}, {"doc", "passage: "}}}, {"default_prompt_name", "doc"}});
  auto st = load(dir.string());
  auto plain = load(tiny.string());
  EmbedOptions q;
  q.prompt_name = "query";
  EmbedOptions mean;
  mean.pooling = Pooling::mean;
  const auto named = st->embed({std::string("the king said")}, q);
  const auto dflt = st->embed({std::string("the king said")}, EmbedOptions{});
  const auto want_q = plain->embed({std::string("query: the king said")}, mean);
  const auto want_d = plain->embed({std::string("passage: the king said")}, mean);
  ASSERT_EQ(named[0].error, "");
  EXPECT_EQ(named[0].embedding, want_q[0].embedding);
  EXPECT_EQ(named[0].prompt_tokens, want_q[0].prompt_tokens);
  EXPECT_EQ(dflt[0].embedding, want_d[0].embedding);
  // Token ids: the default prompt does not apply; a named one is the prompt's own error.
  const std::vector<int32_t> ids = plain->tokenize("the king said", true);
  EXPECT_EQ(st->embed({ids}, EmbedOptions{})[0].embedding, plain->embed({ids}, mean)[0].embedding);
  EXPECT_NE(st->embed({ids}, q)[0].error.find("token ids"), std::string::npos);
  q.prompt_name = "nope";
  try {
    st->embed({std::string("x")}, q);
    FAIL() << "an unknown prompt name was accepted";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.field(), "prompt_name");
    EXPECT_NE(std::string(e.what()).find("doc, query"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tessera
