// Notices that an HTTP client went away while its request waits or generates, so that the
// request can be cancelled and its KV blocks freed. cpp-httplib 0.11 hands handlers no socket,
// so the watch finds it: the connection's socket is the one whose peer and local ports are the
// request's (Linux: /proc/self/fd). It stays open for the whole handler and stream, because
// httplib closes it only after the response is written.
#pragma once

#include <string>

namespace tessera::server {

class ConnectionWatch {
 public:
  ConnectionWatch() = default;
  // remote_addr / remote_port / local_port as httplib::Request has them; an unfound socket gives
  // a watch that never reports a close (streams still notice failed writes).
  static ConnectionWatch find(const std::string& remote_addr, int remote_port, int local_port);
  bool valid() const { return fd_ >= 0; }
  // True once the peer closed or reset the connection (POLLRDHUP / POLLHUP / POLLERR).
  bool peer_closed() const;

 private:
  int fd_ = -1;
};

}  // namespace tessera::server
