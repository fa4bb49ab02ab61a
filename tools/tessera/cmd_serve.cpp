// tessera serve --model DIR [--host 127.0.0.1] [--port 8080] [--api-key KEY] [--max-queue N]
//   [connection limits: --threads --max-connections --max-client-connections --header-timeout
//   --body-timeout --keep-alive --write-timeout] [--drain-delay S] [--served-model-name NAME]
//   [--allowed-origins ORIGIN,...] [--allow-any-origin-with-key] [engine options: --device --dtype
//   --context --batch-tokens --max-seqs --memory-limit
//   --kv-memory]
// An OpenAI-compatible HTTP server (README "Server"). Prints "listening on http://HOST:PORT" on
// stdout once it accepts connections; SIGINT / SIGTERM drain it (/health answers 503 at once;
// after --drain-delay new requests get 503 and in-flight ones get --shutdown-timeout seconds,
// then are cancelled) and it exits 0.
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "cli.h"
#include "cli_engine.h"
#include "server/server.h"

namespace tessera::cli {

namespace {

std::string default_model_name(const std::string& dir) {
  std::filesystem::path p(dir);
  while (p.has_relative_path() && p.filename().empty()) p = p.parent_path();  // "models/x/" -> x
  std::string name = p.filename().string();
  return name.empty() || name == "." ? "tessera" : name;
}

// A timeout option in seconds, as milliseconds: at least 1 ms, at most a day.
int timeout_ms(double s, const char* name) {
  if (!(s >= 0.001 && s <= 86400))
    fail_arg(std::string(name) + " must be in [0.001, 86400] seconds (got " + std::to_string(s) +
             ")");
  return static_cast<int>(s * 1000);
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server over the engine");
  struct Args {
    EngineArgs engine;
    server::ServerOptions server;
    std::string max_body = "8M";
    double shutdown_timeout_s = 10;
    double drain_delay_s = 0;
    double header_timeout_s = 10, body_timeout_s = 60, keep_alive_s = 5, write_timeout_s = 10;
  };
  auto a = std::make_shared<Args>();
  add_engine_options(cmd, a->engine);
  cmd->add_option("--host", a->server.host, "address to listen on (default: loopback only)");
  cmd->add_option("--port", a->server.port, "TCP port; 0: any free port (printed)");
  cmd->add_option("--api-key", a->server.api_key, "require 'Authorization: Bearer KEY'")
      ->envname("TESSERA_API_KEY");
  cmd->add_option("--served-model-name", a->server.model_name,
                  "model id for clients (default: DIR's basename)");
  cmd->add_option("--max-queue", a->server.max_queue,
                  "sequences in flight before requests get 429");
  auto& lim = a->server.limits;
  cmd->add_option("--threads", lim.workers,
                  "threads answering requests, started once (default: --max-queue + 32)");
  cmd->add_option("--max-connections", lim.max_connections,
                  "open connections of all clients (default: 1024)");
  cmd->add_option("--max-client-connections", lim.max_client_connections,
                  "open connections from one client address; 0: no cap, for a server behind a "
                  "proxy (default: 512)");
  cmd->add_option("--header-timeout", a->header_timeout_s,
                  "seconds a request's line and headers may take to arrive (default: 10)");
  cmd->add_option("--body-timeout", a->body_timeout_s,
                  "seconds a request's body may take to arrive (default: 60)");
  cmd->add_option("--keep-alive", a->keep_alive_s,
                  "seconds an idle connection is kept open between requests (default: 5)");
  cmd->add_option("--write-timeout", a->write_timeout_s,
                  "seconds a client may take to accept more of a response (default: 10)");
  cmd->add_option(
      "--drain-delay", a->drain_delay_s,
      "on SIGTERM, seconds /health answers 503 while requests are still served, "
      "before draining (default: 0; behind a load balancer, its check interval x fall)");
  cmd->add_option("--max-body", a->max_body, "largest request body (e.g. 8M)");
  cmd->add_option("--shutdown-timeout", a->shutdown_timeout_s,
                  "seconds in-flight requests get on SIGINT/SIGTERM");
  cmd->add_option("--allowed-origins", a->server.allowed_origins,
                  "origins whose web pages may call the server (CORS), e.g. "
                  "http://localhost:3000; '*' for any (default: none)")
      ->delimiter(',');
  cmd->add_flag("--allow-any-origin-with-key", a->server.allow_any_origin_with_key,
                "allow --allowed-origins '*' together with --api-key");
  cmd->add_flag("--log-requests", a->server.log_requests, "one line per request on stderr");
  cmd->callback([a] {
    run_command([&] {
      // Signals are taken by one watcher thread: block them before any thread starts (the
      // engine's scheduler, httplib's workers), so that every thread inherits the mask.
      sigset_t sigs;
      sigemptyset(&sigs);
      sigaddset(&sigs, SIGINT);
      sigaddset(&sigs, SIGTERM);
      pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
      signal(SIGPIPE, SIG_IGN);  // a client that leaves mid-write is a failed write, not a death

      server::ServerOptions o = a->server;
      if (o.port < 0 || o.port > 65535) fail_arg("--port must be in [0, 65535]");
      if (o.max_queue < 1) fail_arg("--max-queue must be at least 1");
      if (o.limits.workers < 0) fail_arg("--threads must be positive");
      if (!(a->shutdown_timeout_s >= 0) || a->shutdown_timeout_s > 86400)
        fail_arg("--shutdown-timeout must be in [0, 86400] seconds");
      if (!(a->drain_delay_s >= 0) || a->drain_delay_s > 3600)
        fail_arg("--drain-delay must be in [0, 3600] seconds");
      o.drain_delay_ms = static_cast<int>(a->drain_delay_s * 1000);
      o.limits.header_timeout_ms = timeout_ms(a->header_timeout_s, "--header-timeout");
      o.limits.body_timeout_ms = timeout_ms(a->body_timeout_s, "--body-timeout");
      o.limits.keep_alive_ms = timeout_ms(a->keep_alive_s, "--keep-alive");
      o.limits.write_timeout_ms = timeout_ms(a->write_timeout_s, "--write-timeout");
      o.max_body_bytes = parse_bytes(a->max_body, "--max-body");
      o.shutdown_timeout_ms = static_cast<int>(a->shutdown_timeout_s * 1000);
      if (o.model_name.empty()) o.model_name = default_model_name(a->engine.model);

      auto engine = load_engine(a->engine);
      server::HttpServer srv(*engine, o);
      const int port = srv.bind();
      std::printf("tessera serve: model %s on %s, listening on http://%s:%d\n",
                  o.model_name.c_str(), engine->device_name().c_str(), o.host.c_str(), port);
      std::fflush(stdout);

      std::atomic<bool> done{false};
      std::thread watcher([&] {
        std::thread drain;
        const timespec tick{0, 200 * 1000 * 1000};
        while (!done.load()) {
          const int sig = sigtimedwait(&sigs, nullptr, &tick);
          if (sig != SIGINT && sig != SIGTERM) continue;
          if (!drain.joinable()) {
            std::fprintf(stderr, "tessera serve: %s: draining (in-flight requests get %.0f s)\n",
                         sig == SIGINT ? "SIGINT" : "SIGTERM", a->shutdown_timeout_s);
            drain = std::thread([&] { srv.shutdown(); });
          } else {
            std::fprintf(stderr, "tessera serve: second signal: cancelling in-flight requests\n");
            srv.abort_now();
          }
        }
        if (drain.joinable()) drain.join();
      });
      srv.run();
      done.store(true);
      watcher.join();
      std::fprintf(stderr, "tessera serve: stopped\n");
      return 0;
    });
  });
}

}  // namespace tessera::cli
