#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/check.h"

namespace tessera {

FileMapping map_file(const std::string& path, size_t min_size, const std::string& format,
                     const std::string& what) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(ErrorKind::io, path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    fail(ErrorKind::io, path + ": cannot stat: " + std::strerror(errno));
  }
  FileMapping m;
  m.size = static_cast<size_t>(st.st_size);
  if (m.size < min_size) {
    ::close(fd);
    fail_model(path + ": truncated " + format + " file (" + std::to_string(m.size) +
               " bytes, shorter than " + what + ")");
  }
  m.data = ::mmap(nullptr, m.size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (m.data == MAP_FAILED) fail(ErrorKind::io, path + ": cannot mmap: " + std::strerror(errno));
  return m;
}

}  // namespace tessera
