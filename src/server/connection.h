// One accepted TCP connection and the httplib::Stream the server reads requests from and writes
// responses to. The connection outlives each request: its read buffer carries bytes the client
// sent ahead (pipelined requests) to the next request. The packaged cpp-httplib 0.11 makes a new
// stream per request and drops that buffer, losing every pipelined request after the first
// (issue #29); server.cpp runs httplib's request parser over this stream instead.
#pragma once

#include <httplib.h>

#include <chrono>
#include <string>

namespace tessera::server {

using Clock = std::chrono::steady_clock;

class ConnectionGate;

struct Connection {
  Connection(int fd, std::string ip, int port, std::string local_ip, int local_port);
  ~Connection();  // closes the socket
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const int fd;
  const std::string ip, local_ip;
  const int port, local_port;
  const Clock::time_point accepted;

  // Bytes received and not yet parsed: buf[pos, end).
  std::string buf;
  size_t pos = 0;
  // Reads after this instant fail (the request's read deadline); timed_out records that one did.
  Clock::time_point read_deadline = Clock::time_point::max();
  bool timed_out = false;
  // The connection's phase in the gate: waiting for a request's headers (no thread) or being
  // served by a worker. `since` is when it entered that phase; `idle` while no byte of the next
  // request has arrived after a kept-alive response.
  bool waiting = true, idle = false;
  Clock::time_point since;
  Clock::time_point deadline;      // when waiting ends with 408 (or a silent close when idle)
  int requests = 0;                // answered on this connection
  ConnectionGate* gate = nullptr;  // counts this connection against its caps while set

  size_t buffered() const { return buf.size() - pos; }
  // Whether buf holds a request's whole header block (up to the blank line).
  bool has_request_head() const;
  // The buffered request's first line (method and target), empty when not yet received.
  std::string request_line() const;
  // Drops parsed bytes (called between requests).
  void compact();
  // Reads what the socket has now without blocking, at most `max` bytes; -1 on error, 0 at EOF.
  long read_available(size_t max);
  // Writes a complete small response without blocking (best effort: refusals, timeouts).
  void send_now(const std::string& bytes);
};

// The stream httplib::Server::process_request reads and writes through: reads come from the
// connection's buffer first, then the socket until the read deadline; writes wait at most
// write_timeout for room in the socket's send buffer.
class ConnStream : public httplib::Stream {
 public:
  ConnStream(Connection& c, std::chrono::milliseconds write_timeout) : c_(c), wt_(write_timeout) {}
  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return c_.fd; }

 private:
  // Waits for `events` until the deadline; false on timeout or error.
  bool wait(short events, Clock::time_point deadline) const;
  Connection& c_;
  std::chrono::milliseconds wt_;
};

// The connection the calling worker thread is serving (null elsewhere): lets a handler find its
// socket (ConnectionWatch) and tell a read deadline from a client's malformed body.
Connection* current_connection();
struct CurrentConnection {
  explicit CurrentConnection(Connection& c);
  ~CurrentConnection();
};

// A whole HTTP/1.1 response with a JSON error body and Connection: close, for the answers the
// gate gives without a handler (408, 429, 431, 503).
std::string plain_error_response(int status, const char* reason, const std::string& message,
                                 const char* code);

// "10 s", "0.5 s": a duration in milliseconds for messages.
std::string seconds_text(int ms);

// The printable address and the port of a socket address (IPv4 or IPv6); false (and addr, port
// left as they were) for any other family.
bool describe_address(const sockaddr_storage& ss, std::string& addr, int& port);

}  // namespace tessera::server
