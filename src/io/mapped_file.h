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

// "is a directory", "is a named pipe", ...: what a stat mode that is not a regular file is.
std::string not_a_regular_file(unsigned mode);
// Throws Error(io) "<path>: is a directory" (a named pipe, a socket, a device) unless `path` is a
// regular file (after symlinks): the files of a model directory are read only from regular
// files, so that a pipe cannot block the load and a directory gets its own message.
void require_regular_file(const std::string& path);

// Maps `path`, a regular file (else Error(io) "<path>: is a directory, not a <format> file").
// Throws Error(io) naming the path when it cannot be opened, stat'ed or mapped, and
// Error(invalid_model) "<path>: truncated <format> file (N bytes, shorter than <what>)" when it
// holds fewer than min_size bytes. The caller munmaps data.
FileMapping map_file(const std::string& path, size_t min_size, const std::string& format,
                     const std::string& what);

}  // namespace tessera
