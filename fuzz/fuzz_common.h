// What the fuzz targets share: a scratch directory of the process's own (the readers under test
// take paths: safetensors and GGUF files are mapped, model directories are listed), and the
// fixtures' location. A target catches only tessera::Error and the server's ApiError, the two
// ways tessera refuses an input: any other exception (std::bad_alloc, nlohmann's, ...) escapes
// and libFuzzer reports it as a crash, as it does a sanitizer finding, an abort or a hang.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace tessera::fuzz {

// $TMPDIR/tessera-fuzz-<pid>, created once and removed at a normal exit. The string is never
// destroyed: the exit handler that removes the directory runs after static destructors would.
inline const std::string& scratch_dir() {
  static const std::string& dir = *new std::string([] {
    const auto d = std::filesystem::temp_directory_path() /
                   ("tessera-fuzz-" + std::to_string(static_cast<long>(getpid())));
    std::filesystem::create_directories(d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return d.string();
  }());
  return dir;
}

// A subdirectory of the scratch directory (a model directory of its own per target).
inline std::string scratch_subdir(const std::string& name) {
  const std::string d = scratch_dir() + "/" + name;
  std::filesystem::create_directories(d);
  return d;
}

inline void write_file(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

// A file of the source tree (fixtures), by its path from the root.
inline std::string source_file(const std::string& rel) {
  return std::string(TESSERA_SOURCE_DIR) + "/" + rel;
}

// Reads every byte of [p, p + n): a view that the reader let run past its mapping faults here.
inline void touch(const void* p, size_t n) {
  const volatile uint8_t* b = static_cast<const volatile uint8_t*>(p);
  if (n == 0 || p == nullptr) return;
  uint8_t x = b[0] ^ b[n - 1] ^ b[n / 2];
  (void)x;
}

}  // namespace tessera::fuzz
