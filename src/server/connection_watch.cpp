#include "server/connection_watch.h"

#include "server/connection.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>

namespace tessera::server {

ConnectionWatch ConnectionWatch::find(const std::string& remote_addr, int remote_port,
                                      int local_port) {
  ConnectionWatch w;
  // On a worker of the connection gate the socket is known: no scan of every descriptor.
  if (const Connection* c = current_connection();
      c && c->port == remote_port && c->local_port == local_port && c->ip == remote_addr) {
    w.fd_ = c->fd;
    return w;
  }
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return w;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    struct stat st;
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage peer{}, local{};
    socklen_t pl = sizeof peer, ll = sizeof local;
    if (getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &pl) != 0) continue;
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &ll) != 0) continue;
    std::string paddr, laddr;
    int pport = -1, lport = -1;
    if (!describe_address(peer, paddr, pport) || !describe_address(local, laddr, lport)) continue;
    if (pport == remote_port && lport == local_port && paddr == remote_addr) {
      w.fd_ = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
  return w;
}

bool ConnectionWatch::peer_closed() const {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

}  // namespace tessera::server
