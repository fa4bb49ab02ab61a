// The public finish_reason_name (tessera/engine.h): the OpenAI finish_reason strings.
#include "tessera/engine.h"

namespace tessera {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::stop:
      return "stop";
    case FinishReason::length:
      return "length";
    case FinishReason::cancelled:
      return "cancelled";
    case FinishReason::error:
      return "error";
  }
  return "?";
}

}  // namespace tessera
