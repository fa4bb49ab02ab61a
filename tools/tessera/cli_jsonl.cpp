#include "cli_jsonl.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/dev_api.h"

namespace tessera::cli {

std::vector<Prompt> read_prompt_jsonl(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(ErrorKind::io, path + ": cannot open");
  std::vector<Prompt> out;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(n) + ": ";
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      fail_arg(where + "not valid JSON (" + e.what() + ")");
    }
    if (!j.is_object()) fail_arg(where + "expected an object with \"prompt\" or \"tokens\"");
    if (j.contains("prompt")) {
      if (!j["prompt"].is_string()) fail_arg(where + "\"prompt\" must be a string");
      out.emplace_back(j["prompt"].get<std::string>());
    } else if (j.contains("tokens")) {
      if (!j["tokens"].is_array()) fail_arg(where + "\"tokens\" must be an array of token ids");
      std::vector<int32_t> ids;
      for (const auto& t : j["tokens"]) {
        if (!t.is_number_integer()) fail_arg(where + "\"tokens\" must hold integers");
        ids.push_back(t.get<int32_t>());
      }
      out.emplace_back(std::move(ids));
    } else {
      fail_arg(where + "expected \"prompt\" or \"tokens\"");
    }
  }
  if (out.empty()) fail_arg(path + ": no prompts");
  return out;
}

}  // namespace tessera::cli
