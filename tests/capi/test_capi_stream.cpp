// The C ABI's pull-style streams and cancel handles, model info, stats and the version.
#include <atomic>
#include <thread>

#include "capi_fixture.h"

extern "C" int capi_smoke_stream(tessera_engine* e, const char* prompt, int max_tokens,
                                 char* text_out, size_t cap);

namespace tessera {
namespace {

using testing::CEngine;
using testing::greedy;
using testing::ids_of;

// Drains a stream: its token ids (-1 left out) and the concatenated pieces, after those of
// `d` (what was read before), checked against the result's.
struct Drained {
  std::vector<int32_t> ids;
  std::string text;
  std::string finish_reason;
  tessera_status status = TESSERA_INTERNAL;
  std::string error;
  int32_t generated = 0;
  std::vector<size_t> piece_ends;
};

Drained drain(tessera_stream* s, Drained d = {}) {
  tessera_event ev;
  for (;;) {
    EXPECT_EQ(tessera_stream_next(s, 10000, &ev), TESSERA_OK);
    if (ev.kind == TESSERA_EVENT_NONE) {
      ADD_FAILURE() << "no event in 10 s";
      break;
    }
    if (ev.kind == TESSERA_EVENT_DONE) {
      const tessera_result& r = *ev.result;
      d.finish_reason = r.finish_reason;
      d.status = r.status;
      d.error = r.error ? r.error : "";
      d.generated = r.metrics.generated_tokens;
      d.piece_ends.assign(r.piece_ends, r.piece_ends + r.n_ids);
      EXPECT_EQ(std::vector<int32_t>(r.ids, r.ids + r.n_ids), d.ids);
      EXPECT_EQ(std::string(r.text), d.text);
      break;
    }
    EXPECT_EQ(std::strlen(ev.piece), ev.piece_len);
    if (ev.id >= 0) d.ids.push_back(ev.id);
    d.text.append(ev.piece, ev.piece_len);
  }
  return d;
}

TEST(CApiStream, StreamsWhatGenerateReturns) {
  CEngine ce;
  tessera_generate_options o = greedy(24);
  tessera_result want;
  ASSERT_EQ(tessera_generate(ce.get(), "And it came to pass", &o, nullptr, nullptr, &want),
            TESSERA_OK);
  tessera_stream* s = nullptr;
  char* err = nullptr;
  ASSERT_EQ(tessera_stream_submit(ce.get(), "And it came to pass", &o, &s, &err), TESSERA_OK);
  const Drained d = drain(s);
  EXPECT_EQ(d.ids, ids_of(want));
  EXPECT_EQ(d.text, std::string(want.text));
  EXPECT_EQ(d.finish_reason, want.finish_reason);
  EXPECT_EQ(d.status, TESSERA_OK);
  EXPECT_EQ(d.piece_ends, std::vector<size_t>(want.piece_ends, want.piece_ends + want.n_ids));
  tessera_event ev;  // after the end: DONE again
  EXPECT_EQ(tessera_stream_next(s, 0, &ev), TESSERA_OK);
  EXPECT_EQ(ev.kind, TESSERA_EVENT_DONE);
  tessera_stream_free(s);
  tessera_result_free(&want);

  // The same from C (the header compiles as C; capi_smoke.c).
  char text[1024];
  EXPECT_GT(capi_smoke_stream(ce.get(), "And it came to pass", 24, text, sizeof text), 0);
  EXPECT_EQ(std::string(text), d.text);
}

TEST(CApiStream, ChatAndTokenPromptsAndATimeoutOfZero) {
  CEngine ce;
  tessera_generate_options o = greedy(8);
  const char* roles[] = {"user"};
  const char* contents[] = {"What is wisdom?"};
  tessera_stream* s = nullptr;
  ASSERT_EQ(tessera_stream_submit_chat(ce.get(), roles, contents, 1, &o, &s, nullptr), TESSERA_OK);
  tessera_result want;
  ASSERT_EQ(tessera_chat(ce.get(), roles, contents, 1, &o, nullptr, nullptr, &want), TESSERA_OK);
  EXPECT_EQ(drain(s).ids, ids_of(want));
  tessera_stream_free(s);
  tessera_result_free(&want);

  const int32_t ids[] = {2, 651, 1045};
  // 64 tokens: the generation outlasts the first polls even when ctest's parallel load delays
  // this thread by several steps (with 8, a late first poll found every event queued: none = 0).
  tessera_generate_options longer = greedy(64);
  longer.min_tokens = 64;
  ASSERT_EQ(tessera_stream_submit_tokens(ce.get(), ids, 3, &longer, &s, nullptr), TESSERA_OK);
  int none = 0, events = 0;
  tessera_event ev;
  for (int i = 0; i < 100000; ++i) {  // polling: a timeout of 0 never blocks
    ASSERT_EQ(tessera_stream_next(s, 0, &ev), TESSERA_OK);
    if (ev.kind == TESSERA_EVENT_DONE) break;
    if (ev.kind == TESSERA_EVENT_NONE) {
      ++none;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    } else {
      ++events;
    }
  }
  EXPECT_EQ(ev.kind, TESSERA_EVENT_DONE);
  EXPECT_GT(none, 0);
  EXPECT_GT(events, 0);
  tessera_stream_free(s);
}

TEST(CApiStream, RequestErrorsArriveAsTheDoneEventCallErrorsAsStatuses) {
  CEngine ce;
  tessera_generate_options o = greedy(8);
  o.top_p = 3;
  tessera_stream* s = nullptr;
  ASSERT_EQ(tessera_stream_submit(ce.get(), "Hi", &o, &s, nullptr), TESSERA_OK);
  const Drained d = drain(s);
  EXPECT_EQ(d.finish_reason, "error");
  EXPECT_EQ(d.status, TESSERA_INVALID_ARGUMENT);
  EXPECT_NE(d.error.find("top_p"), std::string::npos);
  tessera_stream_free(s);

  char* err = nullptr;
  o = greedy(8);
  EXPECT_EQ(tessera_stream_submit(ce.get(), nullptr, &o, &s, &err), TESSERA_INVALID_ARGUMENT);
  EXPECT_EQ(s, nullptr);
  ASSERT_NE(err, nullptr);
  tessera_string_free(err);
  EXPECT_EQ(tessera_stream_submit(nullptr, "Hi", &o, &s, &err), TESSERA_INVALID_ARGUMENT);
  tessera_string_free(err);
  EXPECT_EQ(tessera_stream_submit(ce.get(), "Hi", &o, nullptr, &err), TESSERA_INVALID_ARGUMENT);
  tessera_string_free(err);
  EXPECT_EQ(tessera_stream_submit_tokens(ce.get(), nullptr, 2, &o, &s, nullptr),
            TESSERA_INVALID_ARGUMENT);
  const char* roles[] = {nullptr};
  const char* contents[] = {"x"};
  EXPECT_EQ(tessera_stream_submit_chat(ce.get(), roles, contents, 1, &o, &s, nullptr),
            TESSERA_INVALID_ARGUMENT);
  tessera_event ev;
  EXPECT_EQ(tessera_stream_next(nullptr, 0, &ev), TESSERA_INVALID_ARGUMENT);
  tessera_stream_cancel(nullptr);  // no-ops
  tessera_stream_free(nullptr);
  tessera_cancel_trigger(nullptr);
  tessera_cancel_free(nullptr);
  EXPECT_EQ(tessera_cancel_is_triggered(nullptr), 0);
}

TEST(CApiStream, CancelFromAnotherThreadAndFreeingMidWayReleaseTheKv) {
  CEngine ce;
  tessera_generate_options o = greedy(240);
  o.ignore_eos = 1;
  tessera_stream* s = nullptr;
  ASSERT_EQ(tessera_stream_submit(ce.get(), "And it came to pass", &o, &s, nullptr), TESSERA_OK);
  tessera_event ev;
  ASSERT_EQ(tessera_stream_next(s, 10000, &ev), TESSERA_OK);
  ASSERT_EQ(ev.kind, TESSERA_EVENT_TOKEN);
  Drained first;
  first.ids.push_back(ev.id);
  first.text.assign(ev.piece, ev.piece_len);
  std::thread([&] { tessera_stream_cancel(s); }).join();
  const Drained d = drain(s, first);
  EXPECT_EQ(d.finish_reason, "cancelled");
  EXPECT_EQ(d.status, TESSERA_CANCELLED);
  EXPECT_LT(d.generated, 240);
  tessera_stream_free(s);
  EXPECT_TRUE(ce.settles_to_no_kv());

  // Freed while running: the request is cancelled.
  ASSERT_EQ(tessera_stream_submit(ce.get(), "And it came to pass", &o, &s, nullptr), TESSERA_OK);
  ASSERT_EQ(tessera_stream_next(s, 10000, &ev), TESSERA_OK);
  tessera_stream_free(s);
  EXPECT_TRUE(ce.settles_to_no_kv());

  // A cancel handle, shared by two streams and a blocking generation, triggered from another
  // thread; freed before the requests end.
  tessera_cancel* c = tessera_cancel_new();
  o.cancel = c;
  tessera_stream* a = nullptr;
  tessera_stream* b = nullptr;
  ASSERT_EQ(tessera_stream_submit(ce.get(), "In the beginning", &o, &a, nullptr), TESSERA_OK);
  ASSERT_EQ(tessera_stream_submit(ce.get(), "The king", &o, &b, nullptr), TESSERA_OK);
  std::atomic<int> tokens{0};
  tessera_result r;
  std::thread blocking([&] {
    auto count = [](void* user, int32_t, const char*, size_t) {
      ++*static_cast<std::atomic<int>*>(user);
      return 1;
    };
    tessera_generate(ce.get(), "Blessed are", &o, count, &tokens, &r);
  });
  while (tokens.load() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  tessera_cancel_trigger(c);
  tessera_cancel_free(c);
  blocking.join();
  EXPECT_STREQ(r.finish_reason, "cancelled");
  EXPECT_EQ(r.status, TESSERA_CANCELLED);
  EXPECT_GE(r.n_ids, 3u);
  tessera_result_free(&r);
  EXPECT_EQ(drain(a).status, TESSERA_CANCELLED);
  EXPECT_EQ(drain(b).status, TESSERA_CANCELLED);
  tessera_stream_free(a);
  tessera_stream_free(b);
  EXPECT_TRUE(ce.settles_to_no_kv());

  // Triggered before submission: cancelled at once.
  c = tessera_cancel_new();
  tessera_cancel_trigger(c);
  o.cancel = c;
  ASSERT_EQ(tessera_stream_submit(ce.get(), "In the beginning", &o, &a, nullptr), TESSERA_OK);
  EXPECT_EQ(drain(a).generated, 0);
  tessera_stream_free(a);
  tessera_cancel_free(c);
}

TEST(CApiInfo, ModelInfoStatsAndVersion) {
  CEngine ce(4, 128);
  tessera_model_info mi;
  char* err = nullptr;
  ASSERT_EQ(tessera_model_info_get(ce.get(), &mi, &err), TESSERA_OK);
  EXPECT_STREQ(mi.architecture, "Gemma3ForCausalLM");
  EXPECT_STREQ(mi.model_type, "gemma3_text");
  EXPECT_EQ(std::string(mi.device).rfind("cpu", 0), 0u) << mi.device;  // "cpu (avx2)"
  EXPECT_EQ(mi.vocab_size, 4096);
  EXPECT_EQ(mi.num_layers, 6);
  EXPECT_EQ(mi.hidden_size, 384);
  EXPECT_EQ(mi.context_length, 128);
  EXPECT_EQ(mi.max_position_embeddings, 512);
  EXPECT_EQ(mi.quant_bits, 0);
  EXPECT_EQ(mi.quant_group_size, 0);
  EXPECT_GT(mi.parameter_count, 1000000);
  EXPECT_GT(mi.weight_bytes, 0u);
  EXPECT_EQ(mi.bos_token_id, 2);
  ASSERT_GE(mi.n_eos_token_ids, 2u);
  EXPECT_EQ(mi.eos_token_ids[0], 1);
  EXPECT_EQ(mi.has_tokenizer, 1);
  EXPECT_EQ(mi.has_chat_template, 1);

  tessera_generate_options o = greedy(5);
  tessera_result r;
  ASSERT_EQ(tessera_generate(ce.get(), "Hello", &o, nullptr, nullptr, &r), TESSERA_OK);
  tessera_result_free(&r);
  const tessera_engine_stats s = ce.stats();
  EXPECT_GT(s.kv_blocks_total, 0);
  EXPECT_EQ(s.kv_block_size, 16);
  EXPECT_GT(s.memory_peak, 0u);
  EXPECT_GE(s.memory_peak, s.memory_active);
  EXPECT_GT(s.steps, 0);
  EXPECT_GT(s.prompt_tokens, 0);

  EXPECT_EQ(tessera_model_info_get(nullptr, &mi, &err), TESSERA_INVALID_ARGUMENT);
  tessera_string_free(err);
  EXPECT_EQ(tessera_engine_stats_get(ce.get(), nullptr, &err), TESSERA_INVALID_ARGUMENT);
  tessera_string_free(err);

  EXPECT_STREQ(tessera_version(), TESSERA_VERSION);
  EXPECT_EQ(std::to_string(TESSERA_VERSION_MAJOR) + "." + std::to_string(TESSERA_VERSION_MINOR) +
                "." + std::to_string(TESSERA_VERSION_PATCH),
            TESSERA_VERSION);
  EXPECT_STREQ(tessera_status_name(TESSERA_CANCELLED), "cancelled");
  EXPECT_STREQ(tessera_status_name(static_cast<tessera_status>(99)), "unknown");
}

TEST(CApiInfo, LoadOptionsOutOfRangeAreErrors) {
  tessera_engine_options eo;
  tessera_engine_options_init(&eo);
  const std::string dir = testing::tiny_en_dir();
  eo.model_dir = dir.c_str();
  eo.device = "cpu";
  eo.quantize = 3;
  tessera_engine* e = nullptr;
  char* err = nullptr;
  EXPECT_EQ(tessera_engine_load(&eo, &e, &err), TESSERA_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err).find("quantize"), std::string::npos);
  tessera_string_free(err);
  eo.quantize = 0;
  eo.context_length = -1;
  EXPECT_EQ(tessera_engine_load(&eo, &e, &err), TESSERA_INVALID_ARGUMENT);
  tessera_string_free(err);
  eo.context_length = 0;
  eo.device = "tpu";
  EXPECT_NE(tessera_engine_load(&eo, &e, &err), TESSERA_OK);
  EXPECT_NE(std::string(err).find("tpu"), std::string::npos);
  tessera_string_free(err);
  EXPECT_EQ(e, nullptr);
}

}  // namespace
}  // namespace tessera
