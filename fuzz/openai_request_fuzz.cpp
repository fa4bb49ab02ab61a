// HTTP request bodies through the server's parsers (server/openai_request.cpp,
// responses_request.cpp, embeddings_request.cpp): the first byte picks the endpoint, the rest is
// the body. A parser refuses with ApiError (400 naming the field) or tessera::Error; anything
// else escaping would be a 500 at best.
#include "fuzz_common.h"
#include "server/api_error.h"
#include "server/embeddings_request.h"
#include "server/openai_request.h"
#include "server/responses_request.h"
#include "tessera/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera::server;
  if (size == 0) return 0;
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    const nlohmann::json j = parse_json_body(body);
    switch (data[0] % 5) {
      case 0:
        (void)parse_completion_request(j);
        break;
      case 1:
        (void)parse_chat_request(j);
        break;
      case 2:
        (void)parse_classify_request(j);
        break;
      case 3:
        (void)parse_responses_request(j);
        break;
      default:
        (void)parse_embeddings_request(j);
        break;
    }
  } catch (const ApiError&) {
  } catch (const tessera::Error&) {
  }
  return 0;
}
