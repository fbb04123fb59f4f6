// SPDX-License-Identifier: Apache-2.0
#include "server/connection_probe.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>

namespace synapse::server {
namespace {

// The port and printable address of a socket address (IPv4 or IPv6), or port -1.
int address_of(const sockaddr_storage& a, std::string& text) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(a);
    inet_ntop(AF_INET, &in.sin_addr, buf, sizeof buf);
    text = buf;
    return ntohs(in.sin_port);
  }
  if (a.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(a);
    inet_ntop(AF_INET6, &in6.sin6_addr, buf, sizeof buf);
    text = buf;
    return ntohs(in6.sin6_port);
  }
  return -1;
}

}  // namespace

ConnectionProbe::ConnectionProbe(const std::string& remote_addr, int remote_port, int local_port) {
  if (remote_port <= 0) return;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return;
  while (const dirent* entry = readdir(dir)) {  // NOLINT(concurrency-mt-unsafe): own DIR
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    struct stat st {};
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage local{}, peer{};
    socklen_t local_len = sizeof local, peer_len = sizeof peer;
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
        getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) {
      continue;  // not connected (the listener, a closed socket)
    }
    std::string local_text, peer_text;
    const int port = address_of(local, local_text);
    if (port < 0 || (local_port > 0 && port != local_port)) continue;
    if (address_of(peer, peer_text) != remote_port || peer_text != remote_addr) continue;
    fd_ = static_cast<int>(fd);
    break;
  }
  closedir(dir);
}

bool ConnectionProbe::peer_closed() const {
  if (fd_ < 0) return false;
  pollfd p{};
  p.fd = fd_;
  p.events = POLLRDHUP;
  if (poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

bool ConnectionProbe::peer_closed_every(std::chrono::milliseconds interval) {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_check_ < interval) return false;
  last_check_ = now;
  return peer_closed();
}

}  // namespace synapse::server
