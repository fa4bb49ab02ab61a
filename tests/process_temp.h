// Temporary directories that belong to one test process. ctest runs every test in a process of
// its own, so a fixed name under /tmp is shared by processes running at the same time (one
// process rewrote a model another had mapped: SIGBUS); and each directory is removed when the
// process exits, so that test runs leave nothing behind (tiny models are ~100 MB each).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

namespace tessera::testing {

class ProcessTempDirs {
 public:
  static ProcessTempDirs& instance() {
    static ProcessTempDirs dirs;
    return dirs;
  }
  ProcessTempDirs(const ProcessTempDirs&) = delete;
  ProcessTempDirs& operator=(const ProcessTempDirs&) = delete;
  ~ProcessTempDirs() {
    for (const auto& d : dirs_) {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  }

  // <temp>/<stem>_<pid>, registered for removal at exit (created by the caller).
  std::string path(const std::string& stem) {
    const auto p =
        std::filesystem::temp_directory_path() / (stem + "_" + std::to_string(::getpid()));
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& d : dirs_)
      if (d == p) return p.string();
    dirs_.push_back(p);
    return p.string();
  }

 private:
  ProcessTempDirs() = default;
  std::mutex mu_;
  std::vector<std::filesystem::path> dirs_;
};

inline std::string process_temp_dir(const std::string& stem) {
  return ProcessTempDirs::instance().path(stem);
}

}  // namespace tessera::testing
