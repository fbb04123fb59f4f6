// SPDX-License-Identifier: Apache-2.0
// Tells an HTTP handler whether its client has gone. cpp-httplib 0.11 gives handlers neither the
// socket nor an is_connection_closed(), so the probe finds the connection's descriptor once, by
// its local and remote addresses, among the process's sockets, and then asks the kernel whether
// the peer has closed its side (poll with POLLRDHUP; no data is read or written).
#pragma once

#include <chrono>
#include <string>

namespace synapse::server {

class ConnectionProbe {
 public:
  // Finds the socket connected from remote_addr:remote_port to local_port (any local port when
  // local_port <= 0: httplib 0.11 does not always fill it). A probe that finds none never
  // reports a disconnect (writes still fail when the client is gone).
  ConnectionProbe(const std::string& remote_addr, int remote_port, int local_port);

  bool found() const { return fd_ >= 0; }
  // True once the client has closed or reset the connection. Cheap (one poll, no wait).
  // The descriptor belongs to the connection until the handler's response is written, so this
  // is valid from the handler and from its content provider.
  bool peer_closed() const;
  // peer_closed(), at most once per `interval` (a handler calls it after every event).
  bool peer_closed_every(std::chrono::milliseconds interval);

 private:
  int fd_ = -1;
  std::chrono::steady_clock::time_point last_check_{};
};

}  // namespace synapse::server
