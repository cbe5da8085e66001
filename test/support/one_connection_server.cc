#include "test/support/one_connection_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace fracpack::testing {

OneConnectionServer::OneConnectionServer(int answered, bool then_drop_unanswered) {
  listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(listener_, 4) == 0 &&
      ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port_ = ntohs(a.sin_port);
  }
  thread_ = std::thread([this, answered, then_drop_unanswered] { serve(answered, then_drop_unanswered); });
}

OneConnectionServer::~OneConnectionServer() { thread_.join(); }

void OneConnectionServer::serve(int answered, bool then_drop_unanswered) {
  pollfd ready{listener_, POLLIN, 0};
  const int c = ::poll(&ready, 1, 10000) == 1 ? ::accept(listener_, nullptr, nullptr) : -1;
  ::close(listener_);  // from now on the port refuses
  if (c < 0) return;
  std::string in;
  // One request, read whole (its head, then Content-Length bytes of body).
  auto read_request = [&]() {
    char buf[4096];
    for (;;) {
      const size_t head = in.find("\r\n\r\n");
      if (head != std::string::npos) {
        size_t body = 0;
        const size_t cl = in.find("Content-Length: ");
        if (cl != std::string::npos && cl < head) body = std::stoul(in.substr(cl + 16));
        if (in.size() >= head + 4 + body) {
          in.erase(0, head + 4 + body);
          return true;
        }
      }
      const ssize_t got = ::read(c, buf, sizeof buf);
      if (got <= 0) return false;
      in.append(buf, static_cast<size_t>(got));
    }
  };
  for (int i = 0; i < answered && read_request(); ++i) {
    const std::string ok = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
    if (::write(c, ok.data(), ok.size()) != static_cast<ssize_t>(ok.size())) break;
    requests_.fetch_add(1);
  }
  if (then_drop_unanswered && read_request()) requests_.fetch_add(1);
  ::close(c);  // when idle, the FIN reaches the client's kept-alive socket
  closed_.store(true);
}

}  // namespace fracpack::testing
