#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>

#include "cli.h"

namespace tessera::cli {

std::vector<int32_t> parse_id_list(const std::string& s, const char* option) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    std::string tok = s.substr(i, j - i);
    while (!tok.empty() && tok.front() == ' ') tok.erase(tok.begin());
    while (!tok.empty() && tok.back() == ' ') tok.pop_back();
    if (tok.empty()) {
      if (s.empty()) break;
      fail_arg(std::string(option) + ": empty element in '" + s + "'");
    }
    char* end = nullptr;
    long long v = std::strtoll(tok.c_str(), &end, 10);
    if (*end != '\0' || v < INT32_MIN || v > INT32_MAX)
      fail_arg(std::string(option) + ": '" + tok + "' is not a token id");
    ids.push_back(static_cast<int32_t>(v));
    i = j + 1;
  }
  if (ids.empty()) fail_arg(std::string(option) + ": the token list is empty");
  return ids;
}

int guarded(const std::function<int()>& body) {
  try {
    return body();
  } catch (const Error& e) {
    std::fprintf(stderr, "tessera: error: %s\n", e.what());
  } catch (const std::bad_alloc&) {  // the input's checks should come first: say what it is
    std::fprintf(stderr, "tessera: error: out of memory (std::bad_alloc)\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera: error: %s\n", e.what());
  }
  return 1;
}

namespace {
int g_exit_code = 0;
}
int exit_code() {
  return g_exit_code;
}
void run_command(const std::function<int()>& body) {
  g_exit_code = guarded(body);
}

}  // namespace tessera::cli
