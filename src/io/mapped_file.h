// A whole file mapped read-only and private (mmap), as the safetensors and GGUF readers hold
// their files: tensors are views into it, never copies.
#pragma once

#include <cstddef>
#include <string>

namespace tessera {

struct FileMapping {
  void* data = nullptr;
  size_t size = 0;
};

// Maps `path`. Throws Error(io) naming the path when it cannot be opened, stat'ed or mapped, and
// Error(invalid_model) "<path>: truncated <format> file (N bytes, shorter than <what>)" when it
// holds fewer than min_size bytes. The caller munmaps data.
FileMapping map_file(const std::string& path, size_t min_size, const std::string& format,
                     const std::string& what);

}  // namespace tessera
