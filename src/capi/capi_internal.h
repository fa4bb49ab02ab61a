// What the C ABI's files share: the handles' definitions, the exception guard, option and
// result conversions.
#pragma once

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "tessera/engine.h"
#include "tessera/tessera.h"

namespace tessera::capi {

// A cancel handle's state, shared by the handle and the requests given it, so that freeing the
// handle early leaves them something to check. Streams cancel through their own token (a stream
// dropped before its end cancels it, which must not cancel the handle's other requests), so the
// handle keeps a list of the streams it was given and cancels each.
struct CancelState {
  CancelToken token;
  std::mutex mu;
  std::vector<RequestStream*> streams;

  void trigger();
  void attach(RequestStream* s);
  void detach(RequestStream* s);
};

// A stream attached to a cancel state for its lifetime.
class Attached {
 public:
  Attached(std::shared_ptr<CancelState> c, RequestStream* s);
  ~Attached();
  Attached(const Attached&) = delete;
  Attached& operator=(const Attached&) = delete;

 private:
  std::shared_ptr<CancelState> c_;
  RequestStream* s_;
};

std::shared_ptr<CancelState> cancel_state(const tessera_cancel* c);  // null for NULL
CancelToken token_of(const tessera_cancel* c);                       // a token nobody sets for NULL

char* dup(const std::string& s);  // malloc'ed copy; throws bad_alloc
template <class T>
T* alloc_array(size_t n) {  // malloc'ed, zeroed, at least one element (never NULL)
  T* p = static_cast<T*>(std::calloc(n ? n : 1, sizeof(T)));
  if (!p) throw std::bad_alloc();
  return p;
}

tessera_status status_of(ErrorKind k);
// The status of a request error that came back as text (the scheduler's admission and step
// failures carry no kind): the KV pool's are out of memory, a failed step is internal, the rest
// (prompt length against the context) are the request's own input.
tessera_status status_of_request_error(const std::string& message);

// Runs body, mapping every exception to a status and a message (NULL error: message dropped).
template <class F>
tessera_status guard(char** error, F&& body) {
  if (error) *error = nullptr;
  auto set = [&](const char* what) {
    if (!error) return;
    size_t n = std::strlen(what);
    *error = static_cast<char*>(std::malloc(n + 1));
    if (*error) std::memcpy(*error, what, n + 1);
  };
  try {
    body();
    return TESSERA_OK;
  } catch (const Error& e) {
    set(e.what());
    return status_of(e.kind());
  } catch (const std::bad_alloc&) {
    set("out of memory");
    return TESSERA_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set(e.what());
    return TESSERA_INTERNAL;
  } catch (...) {
    set("unknown error");
    return TESSERA_INTERNAL;
  }
}

[[noreturn]] void fail_arg(const std::string& what);
Engine& engine_of(tessera_engine* e);                           // throws invalid_argument for NULL
GenerateOptions to_options(const tessera_generate_options* o);  // NULL: the defaults
// A C prompt as the C++ API's (throws invalid_argument naming prompts[i] when malformed).
Prompt to_prompt(const tessera_prompt& p, size_t i);

// Piece ends (tessera_result::piece_ends) gathered as the pieces arrive.
struct PieceEnds {
  std::vector<size_t> ends;
  size_t total = 0;
  void add(int32_t id, size_t len) {
    total += len;
    if (id >= 0) ends.push_back(total);
  }
};

// `out` from a result (memset first; throws bad_alloc, leaving what it allocated to
// tessera_result_free). `status` is the request's when it failed before the scheduler.
void fill_result(const GenerateResult& r, const PieceEnds& pieces, tessera_result* out,
                 tessera_status prepare_status = TESSERA_OK);
// A result for a request that failed before reaching the scheduler.
GenerateResult error_result(const std::string& message);
tessera_batch_metrics to_c(const BatchMetrics& m);

}  // namespace tessera::capi

struct tessera_engine {
  std::unique_ptr<tessera::Engine> engine;
  std::string device;  // tessera_model_info's borrowed strings
  std::vector<int32_t> eos;
};

struct tessera_cancel {
  std::shared_ptr<tessera::capi::CancelState> state;
};
