#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/check.h"

namespace tessera {

std::string not_a_regular_file(unsigned mode) {
  if (S_ISDIR(mode)) return "is a directory";
  if (S_ISFIFO(mode)) return "is a named pipe";
  if (S_ISSOCK(mode)) return "is a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "is a device";
  return "is not a regular file";
}

void require_regular_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    fail(ErrorKind::io, path + ": cannot open: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail(ErrorKind::io, path + ": " + not_a_regular_file(st.st_mode));
}

FileMapping map_file(const std::string& path, size_t min_size, const std::string& format,
                     const std::string& what) {
  // O_NONBLOCK: opening a named pipe for reading would otherwise wait for a writer forever; the
  // flag does nothing to a regular file, and anything else is refused below (issue #29).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(ErrorKind::io, path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    fail(ErrorKind::io, path + ": cannot stat: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(ErrorKind::io,
         path + ": " + not_a_regular_file(st.st_mode) + ", not a " + format + " file");
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
