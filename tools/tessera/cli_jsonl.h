// JSONL prompt files for `tessera classify` and `tessera batch`: one {"prompt": "..."} or
// {"tokens": [ids]} object per line.
#pragma once

#include <string>
#include <vector>

#include "tessera/engine.h"

namespace tessera::cli {

// Throws Error(invalid_argument) naming the file and line of a malformed entry.
std::vector<Prompt> read_prompt_jsonl(const std::string& path);

}  // namespace tessera::cli
