// Runs the tessera binary as a user would and captures its exit status, stdout and stderr.
#pragma once

#include <sys/wait.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include "process_temp.h"

namespace tessera::testing {

struct CliResult {
  int status = -1;  // exit status; 128 + signal when killed by one
  std::string out, err;
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Token ids as the CLI's --tokens / --ids take them: 2,17,99.
inline std::string ids_arg(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ids[i]);
  }
  return s;
}

// `timeout_s` > 0: killed after that long (status 137), so that a command that hangs fails the
// test instead of hanging it.
inline CliResult run_tessera(const std::string& args, const std::string& stdin_text = "",
                             int timeout_s = 0) {
  namespace fs = std::filesystem;
  static int counter = 0;
  const fs::path dir = process_temp_dir("tessera_cli");
  fs::create_directories(dir);
  const std::string n = std::to_string(counter++);
  const fs::path out = dir / (n + ".out"), err = dir / (n + ".err"), in = dir / (n + ".in");
  std::ofstream(in) << stdin_text;
  const std::string limit =
      timeout_s > 0 ? "timeout -s KILL " + std::to_string(timeout_s) + " " : std::string();
  const std::string cmd = limit + std::string(TESSERA_BINARY_DIR) + "/tessera " + args + " <" +
                          in.string() + " >" + out.string() + " 2>" + err.string();
  int raw = std::system(cmd.c_str());
  CliResult r;
  if (WIFEXITED(raw)) r.status = WEXITSTATUS(raw);
  if (WIFSIGNALED(raw)) r.status = 128 + WTERMSIG(raw);
  auto slurp = [](const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

}  // namespace tessera::testing
