// Streamed responses over cpp-httplib: "text/event-stream" with chunked transfer encoding, fed
// by a content provider that blocks on the engine's events and writes each batch of chunks as
// it arrives. A failed write (the client left) cancels the request, so its KV blocks are freed
// at the scheduler's next step.
#pragma once

#include <memory>

#include "server/generation.h"
#include "server/routes.h"
#include "server/stream_chunks.h"
#include "server/stream_writer.h"

namespace tessera::server {

// Submits prompts x n choices for the request of ctx (its server state, its connection for
// disconnect detection, its start time for the latency histogram).
std::shared_ptr<ChoiceRun> start_choices(RequestContext& ctx,
                                         const std::vector<PreparedRequest>& prompts, int n);

// Waits for every choice's first event first, so that a request the engine refuses still gets
// an HTTP error status (and not a 200 followed by an error event); then streams. The format's
// choice_prompt is filled here from the run.
void stream_response(RequestContext& ctx, std::shared_ptr<ChoiceRun> run, StreamFormat fmt);

// The same for any writer (the Responses API's events): `make_writer` runs once the request is
// known to start, so that a refused one writes nothing.
void stream_events(RequestContext& ctx, std::shared_ptr<ChoiceRun> run,
                   const std::function<std::shared_ptr<StreamWriter>()>& make_writer);

}  // namespace tessera::server
