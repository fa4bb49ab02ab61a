#include <cstdio>
#include <cstdlib>
#include <exception>

#include "cli.h"
#include "core/check.h"

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

std::unique_ptr<ComputeBackend> make_backend(const std::string& device) {
  if (device == "cpu") return make_cpu_backend();
  if (device == "cuda") {
    auto b = make_cuda_backend();
    if (!b)
      fail_arg("--device cuda: no CUDA device is available (or tessera was built without CUDA)");
    return b;
  }
  if (device == "auto") {
    if (auto b = make_cuda_backend()) return b;
    return make_cpu_backend();
  }
  fail_arg("--device: unknown device '" + device + "' (expected auto, cpu or cuda)");
}

LoadedModel load(const std::string& dir, const std::string& device, const std::string& dtype) {
  LoadedModel m;
  m.backend = make_backend(device);
  m.dir = std::make_unique<ModelDir>(dir);
  LoadOptions o;
  o.dtype = dtype;
  m.model = load_model(*m.dir, *m.backend, o);
  return m;
}

int guarded(const std::function<int()>& body) {
  try {
    return body();
  } catch (const Error& e) {
    std::fprintf(stderr, "tessera: error: %s\n", e.what());
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
