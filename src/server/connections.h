#pragma once
// What cpp-httplib 0.11 does not give a handler: the connections themselves. Every 250 ms this
// looks at the process's TCP sockets on the server's port (/proc/self/fd, getsockname,
// getpeername) and
//   - closes (shutdown) a connection that has spent longer than `request_timeout` without a
//     complete request reaching a handler: a client that trickles its headers or body cannot hold
//     a worker thread for longer than that (httplib's own timeouts are per read, not per request);
//   - tells a handler whether its client is still there (client_alive), so that the batcher can
//     drop a request whose client has gone away.
//
//   Connections conns(port, 30.0, log);
//   conns.handler_begin(peer);  ...  conns.client_alive(peer)  ...  conns.handler_end(peer);
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace roberta::server {

// The listening socket of `local_port` in this process, or -1.
int find_listening_socket(int local_port);

class Connections {
 public:
  // `log` receives one line for every connection closed for being too slow.
  Connections(int local_port, double request_timeout_seconds, std::function<void(const std::string&)> log);
  ~Connections();  // stop()
  void stop();

  // "ADDR:PORT" of a request's client, as the handler names it.
  // (without an IPv6 zone, "fe80::1%eth0": getpeername, which the scan names sockets by, has none)
  static std::string peer_name(const std::string& addr, int port) {
    return addr.substr(0, addr.find('%')) + ":" + std::to_string(port);
  }
  void handler_begin(const std::string& peer);
  void handler_end(const std::string& peer);  // the answer is written: the clock starts again
  // False when the client has closed its connection (or reset it); true when unsure.
  bool client_alive(const std::string& peer) const;
  // Ends the client's connection once its last answer is written (call it then): shutdown of both
  // directions, and what the client sent beyond its request, already here, thrown away; httplib's
  // next read of it then ends, and no further answer can be written to it.
  void close(const std::string& peer);
  size_t closed_for_timeout() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Conn {
    int fd = -1;
    Clock::time_point since;  // connected, or the last answer written
    int busy = 0;             // handlers running for it
  };
  void loop();
  void scan();

  const int port_;
  const std::chrono::duration<double> timeout_;
  const std::function<void(const std::string&)> log_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::map<std::string, Conn> conns_;  // by peer
  size_t closed_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace roberta::server
