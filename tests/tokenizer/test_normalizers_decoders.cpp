// Normalizers, decoders, post-processors and tokenizer_config.json on hand-built tokenizers.
// ref: tokenizers normalizers/*.rs, decoders/*.rs, processors/*.rs.
#include <gtest/gtest.h>

#include "tokenizer/mini_tokenizer.h"
#include "tokenizer/tokenizer_fixtures.h"

namespace tessera::test {
namespace {

using json = nlohmann::json;
using Ids = std::vector<int32_t>;

// A character vocabulary with no merges: the ids spell out the normalized text.
MiniTokenizer with_normalizer(std::vector<std::string> vocab, json normalizer) {
  MiniTokenizer m;
  m.vocab = std::move(vocab);
  m.normalizer = normalizer;
  return m;
}

TEST(Normalizers, UnicodeForms) {
  EXPECT_EQ(with_normalizer({"f", "i"}, {{"type", "NFKC"}}).load()->encode("\ufb01", false),
            (Ids{0, 1}));
  EXPECT_EQ(with_normalizer({"e", "\u0301"}, {{"type", "NFD"}}).load()->encode("\u00e9", false),
            (Ids{0, 1}));
  auto nfc = with_normalizer({"\u00e9", "e", "\u0301"}, {{"type", "NFC"}}).load();
  EXPECT_EQ(nfc->encode("e\u0301", false), (Ids{0}));
  EXPECT_EQ(nfc->encode("e", false), (Ids{1}));
  // NFKD of "ﬁ" is "fi" too; NFC leaves compatibility characters alone.
  EXPECT_EQ(with_normalizer({"f", "i"}, {{"type", "NFKD"}}).load()->encode("\ufb01", false),
            (Ids{0, 1}));
  EXPECT_EQ(with_normalizer({"\ufb01"}, {{"type", "NFC"}}).load()->encode("\ufb01", false),
            (Ids{0}));
}

TEST(Normalizers, LowercaseStripPrependReplace) {
  auto lower = with_normalizer({"a", "b", "i", "\u0307", "\u03c3"}, {{"type", "Lowercase"}}).load();
  EXPECT_EQ(lower->encode("AB\u03a3", false), (Ids{0, 1, 4}));
  EXPECT_EQ(lower->encode("\u0130", false), (Ids{2, 3}));  // İ lowercases to i + U+0307

  std::vector<std::string> v = {" ", "a", "b", "\u2581"};
  EXPECT_EQ(with_normalizer(v, {{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}})
                .load()
                ->encode("  ab \u3000", false),
            (Ids{1, 2}));
  EXPECT_EQ(with_normalizer(v, {{"type", "Strip"}, {"strip_left", true}, {"strip_right", false}})
                .load()
                ->encode("  ab ", false),
            (Ids{1, 2, 0}));
  auto prepend = with_normalizer(v, {{"type", "Prepend"}, {"prepend", "\u2581"}}).load();
  EXPECT_EQ(prepend->encode("ab", false), (Ids{3, 1, 2}));
  EXPECT_EQ(prepend->encode("", false), (Ids{}));  // nothing to prepend to
  auto replace =
      with_normalizer(v,
                      {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}})
          .load();
  EXPECT_EQ(replace->encode("a  b", false), (Ids{1, 3, 3, 2}));
  auto regex = with_normalizer(
                   v, {{"type", "Replace"}, {"pattern", {{"Regex", " +"}}}, {"content", "\u2581"}})
                   .load();
  EXPECT_EQ(regex->encode("a   b ", false), (Ids{1, 3, 2, 3}));
  // Llama 2: Prepend("▁") then Replace(" ", "▁").
  auto seq =
      with_normalizer(v, {{"type", "Sequence"},
                          {"normalizers", json::array({{{"type", "Prepend"}, {"prepend", "\u2581"}},
                                                       {{"type", "Replace"},
                                                        {"pattern", {{"String", " "}}},
                                                        {"content", "\u2581"}}})}})
          .load();
  EXPECT_EQ(seq->encode("a b", false), (Ids{3, 1, 3, 2}));
}

TEST(Decoders, Llama2Chain) {
  // Replace ▁ by a space, byte fallback, fuse, then strip one leading space.
  MiniTokenizer m;
  m.vocab = {"\u2581a", "b", "\u2581"};
  for (const std::string& b : byte_tokens()) m.vocab.push_back(b);  // <0xNN> = NN + 3
  m.decoder = {
      {"type", "Sequence"},
      {"decoders",
       json::array({{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                    {{"type", "ByteFallback"}},
                    {{"type", "Fuse"}},
                    {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}};
  auto t = m.load();
  EXPECT_EQ(t->decode(Ids{0, 1, 0}, false), "ab a");
  EXPECT_EQ(t->decode(Ids{2, 2, 0}, false), "  a");  // only one space is stripped
  EXPECT_EQ(t->decode(Ids{0, 0xE4 + 3, 0xB8 + 3, 0xAD + 3}, false), "a\u4e2d");
}

TEST(Decoders, StripPerToken) {
  MiniTokenizer m;
  m.vocab = {"xxaxx", "xb", "x"};
  m.decoder = {{"type", "Strip"}, {"content", "x"}, {"start", 1}, {"stop", 2}};
  auto t = m.load();
  EXPECT_EQ(t->decode(Ids{0, 1, 2}, false), "xab");
}

TEST(Decoders, NoDecoderJoinsWithSpaces) {
  MiniTokenizer m;
  m.vocab = {"a", "b"};
  EXPECT_EQ(m.load()->decode(Ids{0, 1, 0}, false), "a b a");
  EXPECT_EQ(m.load()->decode(Ids{}, false), "");
}

TEST(PostProcessors, TemplateAddsSpecialTokensOnlyWhenAsked) {
  MiniTokenizer m;
  m.vocab = {"a", "b"};
  int bos = m.add_token("<s>", true);
  int eos = m.add_token("</s>", true);
  m.post_processor = {
      {"type", "TemplateProcessing"},
      {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                              {{"SpecialToken", {{"id", "</s>"}, {"type_id", 0}}}}})},
      {"pair", json::array()},
      {"special_tokens",
       {{"<s>", {{"id", "<s>"}, {"ids", {bos}}, {"tokens", {"<s>"}}}},
        {"</s>", {{"id", "</s>"}, {"ids", {eos}}, {"tokens", {"</s>"}}}}}}};
  auto t = m.load();
  EXPECT_EQ(t->encode("ab", true), (Ids{bos, 0, 1, eos}));
  EXPECT_EQ(t->encode("ab", false), (Ids{0, 1}));
  EXPECT_EQ(t->encode("", true), (Ids{bos, eos}));

  // Inside a Sequence, after a ByteLevel processor (Llama 3's official file has this shape).
  json tmpl = m.post_processor;
  m.post_processor = {
      {"type", "Sequence"},
      {"processors", json::array({{{"type", "ByteLevel"}, {"trim_offsets", false}}, tmpl})}};
  EXPECT_EQ(m.load()->encode("a", true), (Ids{bos, 0, eos}));
  m.post_processor = {{"type", "ByteLevel"}};
  EXPECT_EQ(m.load()->encode("a", true), (Ids{0}));
}

TEST(PostProcessors, BertStyle) {
  MiniTokenizer m;
  m.vocab = {"a", "[CLS]", "[SEP]"};
  m.post_processor = {{"type", "BertProcessing"},
                      {"cls", json::array({"[CLS]", 1})},
                      {"sep", json::array({"[SEP]", 2})}};
  EXPECT_EQ(m.load()->encode("a", true), (Ids{1, 0, 2}));
}

TEST(TokenizerConfig, BosEosAndChatTemplate) {
  MiniTokenizer m;
  m.vocab = {"a"};
  int bos = m.add_token("<s>", true);
  int eos = m.add_token("</s>", true);
  // model_max_length too large for a 64-bit integer, as in Llama 3's file.
  m.config_text = R"({"bos_token": "<s>",
                      "eos_token": {"__type": "AddedToken", "content": "</s>"},
                      "model_max_length": 1000000000000000019884624838656,
                      "chat_template": [{"name": "tool_use", "template": "T"},
                                        {"name": "default", "template": "D"}]})";
  auto t = m.load();
  EXPECT_EQ(t->bos_token(), "<s>");
  EXPECT_EQ(t->bos_id(), bos);
  EXPECT_EQ(t->eos_token(), "</s>");
  EXPECT_EQ(t->eos_id(), eos);
  EXPECT_EQ(t->chat_template(), "D");

  m.config_text = R"({"bos_token": null, "chat_template": "{{ messages }}"})";
  t = m.load();
  EXPECT_EQ(t->bos_token(), "");
  EXPECT_FALSE(t->bos_id().has_value());
  EXPECT_EQ(t->chat_template(), "{{ messages }}");

  m.config_text.clear();  // no tokenizer_config.json at all
  t = m.load();
  EXPECT_FALSE(t->eos_id().has_value());
  EXPECT_EQ(t->chat_template(), "");
}

TEST(TokenizerConfig, RealFiles) {
  auto gemma = Tokenizer::load(tokenizer_path("gemma3"));
  EXPECT_EQ(gemma->bos_token(), "<bos>");
  EXPECT_EQ(gemma->bos_id(), 2);
  EXPECT_EQ(gemma->eos_token(), "<end_of_turn>");
  EXPECT_EQ(gemma->eos_id(), 106);
  EXPECT_NE(gemma->chat_template().find("start_of_turn"), std::string::npos);
  EXPECT_EQ(gemma->vocab_size(), 262145);
  auto qwen = Tokenizer::load(tokenizer_path("qwen3"));
  EXPECT_FALSE(qwen->bos_id().has_value());
  EXPECT_EQ(qwen->eos_id(), 151645);  // <|im_end|>
}

}  // namespace
}  // namespace tessera::test
