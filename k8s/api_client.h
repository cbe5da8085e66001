// A small HTTP/1.1 client for the Kubernetes API (Boost.Beast, OpenSSL):
// one keep-alive connection reused across requests, a deadline on every
// step (connect, TLS handshake, write, each read), TCP_NODELAY, bearer
// tokens from a refreshing source, and streamed bodies for watches and
// large lists. One client per thread: it is not thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "common/result.h"

namespace fracpack::k8s {

// Where the API server is: scheme, host, port (and an optional path prefix).
struct Endpoint {
  std::string scheme;  // "http" or "https"
  std::string host;    // name or address, without IPv6 brackets
  std::string port;
  std::string base_path;  // "" or "/prefix"

  bool tls() const { return scheme == "https"; }
  std::string url() const;
  // "https://10.0.0.1:6443", "http://127.0.0.1:8080", "https://[::1]:6443/k8s".
  static Result<Endpoint> parse(std::string_view url);
};

struct TlsOptions {
  std::string ca_pem;         // trust these (PEM); empty: the system's roots
  bool insecure_skip_verify = false;
  std::string server_name;    // SNI and the name checked in the certificate; default: the host
  std::string client_cert_pem;
  std::string client_key_pem;
};

// A bearer token, fixed or read from a file that the kubelet rotates
// (../shared/reference/kubernetes-protocol.md §6.2): re-read when older than the refresh period
// and after any 401. Reads reopen the path each time (the file is a symlink
// swapped atomically). Thread-safe.
class TokenSource {
 public:
  static std::shared_ptr<TokenSource> fixed(std::string token);
  static std::shared_ptr<TokenSource> file(std::string path, std::chrono::seconds refresh = std::chrono::seconds(50));

  // The current token; an error if the file cannot be read and no earlier
  // token is known (an unreadable file keeps the last good token).
  Result<std::string> token();
  // The server refused the token: the next token() re-reads the file.
  void invalidate();
  int reads() const;

 private:
  TokenSource() = default;
  mutable std::mutex mu_;
  std::string path_;
  std::string token_;
  std::chrono::seconds refresh_{50};
  std::chrono::steady_clock::time_point read_at_{};
  bool stale_ = true;
  int reads_ = 0;
};

struct ClientConfig {
  Endpoint endpoint;
  TlsOptions tls;
  std::shared_ptr<TokenSource> token;  // null: no Authorization header
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds request_timeout{30000};
  std::string user_agent = "fracpack";
};

struct HttpResponse {
  int status = 0;
  std::string body;
  std::string content_type;
  std::string retry_after;  // Retry-After header, if any
};

class ApiClient {
 public:
  explicit ApiClient(ClientConfig config);
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  // A whole request and response. `target` is the path and query
  // ("/api/v1/pods?limit=500"). Retries once on a fresh connection when a
  // reused keep-alive connection turns out closed before any response.
  Result<HttpResponse> request(std::string_view method, std::string_view target, std::string_view body = {},
                               std::string_view content_type = "application/json",
                               std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

  // A GET whose body is handed over as it arrives. `on_head` gets the status
  // and Retry-After before any body; returning an error stops. `on_data` gets
  // body bytes (chunk boundaries are whatever the server sent). Each read
  // must complete within `idle_timeout`. Returns the status when the body
  // ended normally.
  using HeadHandler = std::function<Status(int status, const std::string& retry_after)>;
  using DataHandler = std::function<Status(std::string_view bytes)>;
  Result<int> stream(std::string_view target, std::chrono::milliseconds idle_timeout, const HeadHandler& on_head,
                     const DataHandler& on_data);

  // Whether the last request() may have reached the server: true once the
  // whole request was written to a connection that looked alive; false when
  // it failed before (no connection, a failed TLS handshake, no token, a
  // kept-alive connection the server had closed, a failed write), so its
  // outcome is known: not applied. The one place that decides it is
  // request() (api_client.cc).
  bool last_request_sent() const { return last_sent_; }

  // Drops the connection (the next request reconnects).
  void close();
  // Closes the connection from another thread, interrupting a blocked
  // request or stream (shutdown of a long watch).
  void cancel();

  const ClientConfig& config() const { return config_; }

 private:
  struct Impl;
  ClientConfig config_;
  std::unique_ptr<Impl> impl_;
  bool last_sent_ = false;
};

// "Status" objects the API server returns with errors: their message.
std::string api_error_message(const HttpResponse& r);

// Percent-encodes a query value (RFC 3986 unreserved characters stay).
std::string url_encode(std::string_view s);

// A Retry-After header in seconds (0 when absent or not a number; capped
// at an hour).
std::chrono::milliseconds retry_after_delay(const std::string& header);

}  // namespace fracpack::k8s
