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
    const nlohmann::json j = parse_json(line, where.substr(0, where.size() - 2));
    if (!j.is_object()) fail_arg(where + "expected an object with \"prompt\" or \"tokens\"");
    if (j.contains("prompt")) {
      if (!j["prompt"].is_string()) fail_arg(where + "\"prompt\" must be a string");
      out.emplace_back(j["prompt"].get<std::string>());
    } else if (j.contains("tokens")) {
      if (!j["tokens"].is_array()) fail_arg(where + "\"tokens\" must be an array of token ids");
      std::vector<int32_t> ids;
      for (const auto& t : j["tokens"]) {
        if (!t.is_number_integer()) fail_arg(where + "\"tokens\" must hold integers");
        // get<int32_t>() would wrap 2^40 to a valid id; the vocabulary check comes later.
        const bool fits = t.is_number_unsigned()
                              ? t.get<uint64_t>() <= INT32_MAX
                              : t.get<int64_t>() >= INT32_MIN && t.get<int64_t>() <= INT32_MAX;
        if (!fits)
          fail_arg(where + "\"tokens\" element " + std::to_string(ids.size()) + " (" + t.dump() +
                   ") is not a token id");
        ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
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
