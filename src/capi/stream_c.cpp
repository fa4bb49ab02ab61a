// The C ABI's pull-style streams: submit, then next(event, timeout) on the caller's own thread,
// so that a binding (Go) takes tokens without a callback from an engine thread into it.
#include "capi/capi_internal.h"

using tessera::Engine;
using tessera::GenerateOptions;
using namespace tessera::capi;

struct tessera_stream {
  std::unique_ptr<tessera::RequestStream> stream;  // null when the request failed at submission
  std::unique_ptr<Attached> attached;              // to its cancel handle, while it lives
  tessera::RequestStream::Event ev;                // the last token's (its piece is borrowed)
  PieceEnds pieces;
  bool done = false;
  tessera_result result{};
};

namespace {

template <class Prepare>
tessera_status submit(tessera_engine* e, const tessera_generate_options* o, tessera_stream** out,
                      char** error, Prepare&& prepare) {
  if (out) *out = nullptr;
  return guard(error, [&] {
    Engine& engine = engine_of(e);
    if (!out) fail_arg("out is NULL");
    const GenerateOptions g = to_options(o);
    auto s = std::make_unique<tessera_stream>();
    const auto cancel = cancel_state(o ? o->cancel : nullptr);
    try {
      tessera::PreparedRequest req = prepare(engine, g);
      if (cancel && cancel->token.cancelled()) {
        // Already cancelled: never submitted, or a step could run before the stream is attached.
        tessera::GenerateResult r;
        r.finish_reason = tessera::FinishReason::cancelled;
        fill_result(r, PieceEnds(), &s->result);
        s->done = true;
      } else {
        s->stream = engine.submit(req);
        s->attached = std::make_unique<Attached>(cancel, s->stream.get());
      }
    } catch (const tessera::Error& re) {  // the request's own input: its one event says so
      s->stream.reset();
      fill_result(error_result(re.what()), PieceEnds(), &s->result, status_of(re.kind()));
      s->done = true;
    }
    *out = s.release();
  });
}

// The call's own arguments at fault.
tessera_status bad_call(tessera_stream** out, char** error, const char* message) {
  if (out) *out = nullptr;
  return guard(error, [&] { fail_arg(message); });
}

}  // namespace

extern "C" {

tessera_status tessera_stream_submit(tessera_engine* e, const char* prompt,
                                     const tessera_generate_options* o, tessera_stream** out,
                                     char** error) {
  if (!prompt) return bad_call(out, error, "prompt is NULL");
  return submit(e, o, out, error, [&](Engine& engine, const GenerateOptions& g) {
    return engine.prepare(tessera::Prompt(std::string(prompt)), g);
  });
}

tessera_status tessera_stream_submit_tokens(tessera_engine* e, const int32_t* ids, size_t n,
                                            const tessera_generate_options* o, tessera_stream** out,
                                            char** error) {
  if (!ids && n) return bad_call(out, error, "ids is NULL but n is not 0");
  return submit(e, o, out, error, [&](Engine& engine, const GenerateOptions& g) {
    return engine.prepare(tessera::Prompt(std::vector<int32_t>(ids, ids + n)), g);
  });
}

tessera_status tessera_stream_submit_chat(tessera_engine* e, const char* const* roles,
                                          const char* const* contents, size_t n,
                                          const tessera_generate_options* o, tessera_stream** out,
                                          char** error) {
  if (n && (!roles || !contents)) return bad_call(out, error, "roles and contents are required");
  for (size_t i = 0; i < n; ++i)
    if (!roles[i] || !contents[i])
      return bad_call(out, error, "a message's role or content is NULL");
  return submit(e, o, out, error, [&](Engine& engine, const GenerateOptions& g) {
    std::vector<tessera::ChatMessage> m;
    for (size_t i = 0; i < n; ++i) m.push_back({roles[i], contents[i]});
    return engine.prepare(m, g);
  });
}

tessera_status tessera_stream_next(tessera_stream* s, int32_t timeout_ms, tessera_event* ev) {
  if (ev) std::memset(ev, 0, sizeof *ev);
  return guard(nullptr, [&] {
    if (!s || !ev) fail_arg("stream and ev are required");
    if (!s->done) {
      if (!s->stream->next(s->ev, timeout_ms)) return;  // TESSERA_EVENT_NONE
      if (s->ev.done) {
        fill_result(s->ev.result, s->pieces, &s->result);
        s->done = true;
      } else {
        s->pieces.add(s->ev.id, s->ev.piece.size());
        ev->kind = TESSERA_EVENT_TOKEN;
        ev->id = s->ev.id;
        ev->piece = s->ev.piece.c_str();
        ev->piece_len = s->ev.piece.size();
        return;
      }
    }
    ev->kind = TESSERA_EVENT_DONE;
    ev->id = -1;
    ev->piece = "";
    ev->result = &s->result;
  });
}

void tessera_stream_cancel(tessera_stream* s) {
  if (s && s->stream) s->stream->cancel();
}

void tessera_stream_free(tessera_stream* s) {
  if (!s) return;
  try {
    s->attached.reset();  // before the stream it names goes
    s->stream.reset();    // cancels the request if it is still running
  } catch (...) {
  }
  tessera_result_free(&s->result);
  delete s;
}

}  // extern "C"
