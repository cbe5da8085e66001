#include "server/reloading_tls_context.h"

#include <sys/stat.h>

#include <utility>

namespace fracpack::server {
namespace {

namespace ssl = boost::asio::ssl;
using error_code = boost::system::error_code;

// Modification time of a file, 0 if it cannot be read.
int64_t mtime_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

Result<std::shared_ptr<ssl::context>> make_tls_context(const std::string& cert, const std::string& key, const std::string& client_ca) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                   ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use);
  error_code ec;
  ctx->use_certificate_chain_file(cert, ec);
  if (ec) return Error{"TLS certificate " + cert + ": " + ec.message()};
  ctx->use_private_key_file(key, ssl::context::pem, ec);
  if (ec) return Error{"TLS key " + key + ": " + ec.message()};
  if (!client_ca.empty()) {
    // Mutual TLS (kube-scheduler's tlsConfig.certFile/keyFile): a client
    // without a certificate signed by this CA fails the handshake.
    ctx->load_verify_file(client_ca, ec);
    if (ec) return Error{"TLS client CA " + client_ca + ": " + ec.message()};
    ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert, ec);
    if (ec) return Error{"TLS client CA " + client_ca + ": " + ec.message()};
  }
  return ctx;
}

}  // namespace

ReloadingTlsContext::ReloadingTlsContext(std::string cert_file, std::string key_file, std::string client_ca_file)
    : cert_file_(std::move(cert_file)), key_file_(std::move(key_file)), client_ca_file_(std::move(client_ca_file)) {}

ReloadingTlsContext::Stamps ReloadingTlsContext::stamps() const {
  return Stamps{mtime_of(cert_file_), mtime_of(key_file_), mtime_of(client_ca_file_)};
}

Status ReloadingTlsContext::load() {
  if (key_file_.empty()) return Error{"TLS needs both a certificate and a key file"};
  auto ctx = make_tls_context(cert_file_, key_file_, client_ca_file_);
  if (!ctx) return Error{ctx.message()};
  const Stamps now = stamps();
  std::lock_guard lock(mu_);
  context_ = *ctx;
  loaded_ = now;
  return Status::Ok();
}

bool ReloadingTlsContext::reload_if_changed() {
  const Stamps now = stamps();
  {
    std::lock_guard lock(mu_);
    if (now == loaded_) return false;
  }
  auto ctx = make_tls_context(cert_file_, key_file_, client_ca_file_);
  if (!ctx) return false;  // a half-written pair: keep serving the old one, try again later
  std::lock_guard lock(mu_);
  context_ = *ctx;
  loaded_ = now;
  return true;
}

std::shared_ptr<ssl::context> ReloadingTlsContext::current() const {
  std::lock_guard lock(mu_);
  return context_;
}

}  // namespace fracpack::server
