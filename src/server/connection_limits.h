// The limits `tessera serve` puts on connections (README "Server: limits"; each is an option of
// the serve command). server/connection_gate.h enforces them.
#pragma once

#include <cstddef>

namespace tessera::server {

struct ConnectionLimits {
  int max_connections = 1024;        // open connections of all clients (--max-connections)
  int max_client_connections = 512;  // from one client address; 0: no cap (behind a proxy)
  int header_timeout_ms = 10000;     // a request's line and headers, from its first byte
  int body_timeout_ms = 60000;       // a request's body, from the end of its headers
  int keep_alive_ms = 5000;          // idle time between requests on one connection
  int write_timeout_ms = 10000;      // for a client to take more of a response (each write)
  size_t max_header_bytes = 64 * 1024;
  int workers = 0;            // threads answering requests (0: --max-queue + 32); a stream
                              // holds one until its last chunk
  int control_workers = 2;    // threads for GET /health and /metrics only
  int keep_alive_max = 1000;  // requests per connection
};

}  // namespace tessera::server
