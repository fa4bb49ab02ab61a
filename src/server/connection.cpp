#include "server/connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "server/connection_gate.h"

namespace tessera::server {

namespace {
thread_local Connection* t_current = nullptr;
}  // namespace

Connection* current_connection() {
  return t_current;
}
CurrentConnection::CurrentConnection(Connection& c) {
  t_current = &c;
}
CurrentConnection::~CurrentConnection() {
  t_current = nullptr;
}

Connection::Connection(int fd_, std::string ip_, int port_, std::string local_ip_, int local_port_)
    : fd(fd_),
      ip(std::move(ip_)),
      local_ip(std::move(local_ip_)),
      port(port_),
      local_port(local_port_),
      accepted(Clock::now()),
      since(accepted) {}

Connection::~Connection() {
  if (gate) gate->release(*this);
  ::close(fd);
}

bool Connection::has_request_head() const {
  // httplib accepts header lines ended by LF alone as well as CRLF.
  const std::string_view b(buf.data() + pos, buf.size() - pos);
  return b.find("\r\n\r\n") != std::string_view::npos || b.find("\n\n") != std::string_view::npos;
}

std::string Connection::request_line() const {
  const size_t end = buf.find('\n', pos);
  return end == std::string::npos ? std::string() : buf.substr(pos, end - pos);
}

void Connection::compact() {
  buf.erase(0, pos);
  pos = 0;
}

long Connection::read_available(size_t max) {
  const size_t old = buf.size();
  buf.resize(old + max);
  ssize_t n;
  do n = ::recv(fd, buf.data() + old, max, MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  buf.resize(old + static_cast<size_t>(std::max<ssize_t>(n, 0)));
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return -2;
  return static_cast<long>(n);
}

void Connection::send_now(const std::string& bytes) {
  // The answer is a few hundred bytes, far below any socket's send buffer: one try.
  (void)::send(fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

bool ConnStream::wait(short events, Clock::time_point deadline) const {
  for (;;) {
    const auto now = Clock::now();
    if (now >= deadline) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    pollfd p{c_.fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count() + 1, 1 << 30)));
    if (r > 0) return true;  // readable, writable, or an error the next call reports
    if (r < 0 && errno != EINTR) return false;
  }
}

bool ConnStream::is_readable() const {
  return c_.buffered() > 0 || wait(POLLIN, c_.read_deadline);
}

bool ConnStream::is_writable() const {
  return wait(POLLOUT, Clock::now() + wt_);
}

ssize_t ConnStream::read(char* ptr, size_t size) {
  if (c_.buffered() == 0) {
    c_.compact();
    if (!wait(POLLIN, c_.read_deadline)) {
      c_.timed_out = Clock::now() >= c_.read_deadline;
      return -1;
    }
    const long n = c_.read_available(16 * 1024);
    if (n == -2) return read(ptr, size);  // spurious wakeup: wait again
    if (n <= 0) return n;
  }
  const size_t n = std::min(size, c_.buffered());
  std::copy_n(c_.buf.data() + c_.pos, n, ptr);
  c_.pos += n;
  return static_cast<ssize_t>(n);
}

ssize_t ConnStream::write(const char* ptr, size_t size) {
  for (;;) {
    if (!wait(POLLOUT, Clock::now() + wt_)) return -1;
    const ssize_t n = ::send(c_.fd, ptr, size, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n >= 0) return n;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
  }
}

void ConnStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  ip = c_.ip;
  port = c_.port;
}

void ConnStream::get_local_ip_and_port(std::string& ip, int& port) const {
  ip = c_.local_ip;
  port = c_.local_port;
}

bool describe_address(const sockaddr_storage& ss, std::string& addr, int& port) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
    port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
    port = ntohs(a->sin6_port);
  } else {
    return false;
  }
  addr = buf;
  return true;
}

std::string seconds_text(int ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", ms / 1000.0);
  return buf;
}

std::string plain_error_response(int status, const char* reason, const std::string& message,
                                 const char* code) {
  const std::string type = status >= 500 ? "server_error" : "invalid_request_error";
  // message is ours (no quotes or backslashes), so it needs no JSON escaping.
  const std::string body = "{\"error\":{\"message\":\"" + message + "\",\"type\":\"" + type +
                           "\",\"param\":null,\"code\":\"" + code + "\"}}";
  return "HTTP/1.1 " + std::to_string(status) + " " + reason +
         "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace tessera::server
