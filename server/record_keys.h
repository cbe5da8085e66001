// The record-signing keys of a process, from `security:` (README "Security
// model"): the extender signs with its private key and verifies with its
// own public half and the configured public keys; the node agent verifies
// with the configured public keys only (it never holds the signing key).
#pragma once

#include <memory>
#include <string>

#include "config/config.h"
#include "k8s/record_signature.h"

namespace fracpack::server {

struct RecordKeys {
  std::shared_ptr<const k8s::RecordSigner> signer;  // the extender only; null: records are not signed
  k8s::RecordTrust trust;                           // no verifier: records taken as written
};

enum class RecordRole {
  kExtender,          // `serve` against an API server: signs and verifies
  kStandaloneExtender,// `serve --snapshot`: the snapshot's records are the operator's; signs when given a key
  kNodeAgent,         // verifies only
};

// Errors name the key (security.signingKey: ...) and what to do.
Result<RecordKeys> load_record_keys(const config::SecurityConfig& security, RecordRole role);

}  // namespace fracpack::server
