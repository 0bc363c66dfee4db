#include "server/connections.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

namespace roberta::server {

namespace {

// The scan looks at descriptors other threads own (httplib's connection threads open, use and close
// them). The kernel makes that safe: a probe of a closed or reused descriptor fails or describes
// the new one, which the peer check catches. The probes go straight to the kernel because
// ThreadSanitizer's libc interceptors would count each as an access racing with the owner's
// close().
int probe_fstat(int fd, struct stat* st) { return static_cast<int>(syscall(SYS_fstat, fd, st)); }
int probe_sockname(int fd, sockaddr_storage* a, socklen_t* len) {
  return static_cast<int>(syscall(SYS_getsockname, fd, reinterpret_cast<sockaddr*>(a), len));
}
int probe_peername(int fd, sockaddr_storage* a, socklen_t* len) {
  return static_cast<int>(syscall(SYS_getpeername, fd, reinterpret_cast<sockaddr*>(a), len));
}

// "ADDR:PORT" of a socket address; empty for anything but IPv4/IPv6.
std::string address_name(const sockaddr_storage& a, int* port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(a);
    inet_ntop(AF_INET, &in.sin_addr, buf, sizeof buf);
    *port = ntohs(in.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto& in = reinterpret_cast<const sockaddr_in6&>(a);
    inet_ntop(AF_INET6, &in.sin6_addr, buf, sizeof buf);
    *port = ntohs(in.sin6_port);
  } else {
    return "";
  }
  return buf;
}

// The client of a connected TCP socket on `local_port`, else "".
std::string peer_of(int fd, int local_port) {
  struct stat st;
  if (probe_fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return "";
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  int port = -1;
  if (probe_sockname(fd, &a, &len) != 0 || address_name(a, &port).empty() || port != local_port) return "";
  len = sizeof a;
  if (probe_peername(fd, &a, &len) != 0) return "";  // the listening socket
  const std::string addr = address_name(a, &port);
  return addr.empty() ? "" : Connections::peer_name(addr, port);
}

// Calls fn(fd) for every open descriptor of this process.
template <class Fn>
void for_each_fd(Fn fn) {
  if (DIR* dir = opendir("/proc/self/fd")) {
    const int own = dirfd(dir);
    while (const dirent* e = readdir(dir)) {
      char* end = nullptr;
      const long fd = std::strtol(e->d_name, &end, 10);
      if (end != e->d_name && !*end && fd != own) fn(static_cast<int>(fd));
    }
    closedir(dir);
  }
}

}  // namespace

int find_listening_socket(int local_port) {
  int found = -1;
  for_each_fd([&](int fd) {
    struct stat st;
    int listening = 0;
    socklen_t len = sizeof listening;
    sockaddr_storage a{};
    socklen_t alen = sizeof a;
    int port = -1;
    if (found < 0 && probe_fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) &&
        syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening &&
        probe_sockname(fd, &a, &alen) == 0 && !address_name(a, &port).empty() && port == local_port)
      found = fd;
  });
  return found;
}

Connections::Connections(int local_port, double request_timeout_seconds, std::function<void(const std::string&)> log)
    : port_(local_port), timeout_(request_timeout_seconds), log_(std::move(log)), thread_([this] { loop(); }) {}

Connections::~Connections() { stop(); }

void Connections::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Connections::handler_begin(const std::string& peer) {
  std::lock_guard lock(mutex_);
  const auto [it, added] = conns_.try_emplace(peer);
  if (added) it->second.since = Clock::now();
  ++it->second.busy;
}

void Connections::handler_end(const std::string& peer) {
  std::lock_guard lock(mutex_);
  Conn& c = conns_[peer];
  if (c.busy > 0) --c.busy;
  c.since = Clock::now();
}

size_t Connections::closed_for_timeout() const {
  std::lock_guard lock(mutex_);
  return closed_;
}

bool Connections::client_alive(const std::string& peer) const {
  int fd = -1;
  {
    std::lock_guard lock(mutex_);
    const auto it = conns_.find(peer);
    if (it == conns_.end() || it->second.fd < 0) return true;  // not scanned yet
    fd = it->second.fd;
  }
  // The connection stays open while its handler runs, so the fd is still this client's; the
  // check guards against a stale entry all the same.
  if (peer_of(fd, port_) != peer) return true;
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) return true;
  if (p.revents & (POLLHUP | POLLERR)) return false;
  char byte;
  const ssize_t n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
}

void Connections::close(const std::string& peer) {
  int fd = -1;
  {
    std::lock_guard lock(mutex_);
    if (const auto it = conns_.find(peer); it != conns_.end()) fd = it->second.fd;
  }
  if (fd < 0 || peer_of(fd, port_) != peer) {  // not scanned yet: look for it now
    fd = -1;
    for_each_fd([&](int f) {
      if (fd < 0 && peer_of(f, port_) == peer) fd = f;
    });
  }
  if (fd < 0) return;
  syscall(SYS_shutdown, fd, SHUT_RDWR);
  char buf[65536];  // (at most 64 MiB: what is already here)
  for (int i = 0; i < 1024 && recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0; ++i) {
  }
}

void Connections::scan() {
  std::vector<std::pair<int, std::string>> found;
  for_each_fd([&](int fd) {
    std::string peer = peer_of(fd, port_);
    if (!peer.empty()) found.emplace_back(fd, std::move(peer));
  });
  const auto now = Clock::now();
  std::vector<std::string> messages;
  std::vector<std::pair<int, std::string>> slow;
  {
    std::lock_guard lock(mutex_);
    std::map<std::string, Conn> next;
    for (auto& [fd, peer] : found) {
      Conn c;
      c.fd = fd;
      c.since = now;
      if (const auto it = conns_.find(peer); it != conns_.end()) {
        c.busy = it->second.busy;
        if (it->second.fd == fd || it->second.fd < 0) c.since = it->second.since;
      }
      if (c.busy == 0 && now - c.since > timeout_) {
        slow.emplace_back(fd, peer);
        c.since = now;
      }
      next[peer] = c;
    }
    // Handlers of connections not seen yet keep their entry.
    for (auto& [peer, c] : conns_)
      if (c.busy > 0 && !next.count(peer)) next[peer] = c;
    conns_ = std::move(next);
  }
  for (const auto& [fd, peer] : slow) {
    // The connection's thread is still blocked reading it (it has no complete request), so the
    // descriptor is still this client's; the check right before makes sure.
    if (peer_of(fd, port_) != peer) continue;
    syscall(SYS_shutdown, fd, SHUT_RDWR);  // httplib's read fails and it closes the connection
    std::lock_guard lock(mutex_);
    ++closed_;
    messages.push_back("closed the connection of " + peer + ": no complete request in " +
                       std::to_string(static_cast<int>(timeout_.count())) + " s");
  }
  for (const auto& m : messages) log_(m);
}

void Connections::loop() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    lock.unlock();
    scan();
    lock.lock();
    wake_.wait_for(lock, std::chrono::milliseconds(250), [&] { return stop_; });
  }
}

}  // namespace roberta::server
