// The HTTP server's TLS context, made from its certificate, key and
// (optional) client CA files, and made again when any of their
// modification times changes: a renewed certificate is served without a
// restart. A renewal that does not load (a half-written pair) keeps the
// last good context; the next check tries again.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <boost/asio/ssl/context.hpp>

#include "common/result.h"

namespace fracpack::server {

class ReloadingTlsContext {
 public:
  // `client_ca_file` "": no client certificate asked; else one signed by it
  // is required (kube-scheduler's tlsConfig.certFile/keyFile).
  ReloadingTlsContext(std::string cert_file, std::string key_file, std::string client_ca_file);

  // The first load. Errors name the file.
  Status load();
  // Loads the files again if one of them changed since the last load;
  // true when a new context was taken.
  bool reload_if_changed();
  // The context now served. A connection keeps the one it started with.
  std::shared_ptr<boost::asio::ssl::context> current() const;

 private:
  struct Stamps {
    int64_t cert = 0, key = 0, ca = 0;
    bool operator==(const Stamps&) const = default;
  };
  Stamps stamps() const;

  const std::string cert_file_, key_file_, client_ca_file_;
  mutable std::mutex mu_;  // guards context_, loaded_
  std::shared_ptr<boost::asio::ssl::context> context_;
  Stamps loaded_;
};

}  // namespace fracpack::server
