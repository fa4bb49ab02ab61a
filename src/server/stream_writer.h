// What an event stream writes for the engine's events: chat / completion chunks
// (stream_chunks.h) or the Responses API's typed events (responses_format.h). sse.cpp feeds one
// of these from a ChoiceRun and writes its text to the connection.
#pragma once

#include <string>

#include "tessera/engine.h"

namespace tessera::server {

class StreamWriter {
 public:
  virtual ~StreamWriter() = default;
  // SSE text for one event of choice `choice` (may be empty).
  virtual std::string event(int choice, const RequestStream::Event& ev) = 0;
  // The stream's last text, once every choice is done.
  virtual std::string finish() = 0;
};

}  // namespace tessera::server
