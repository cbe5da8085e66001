#include "server/record_keys.h"

namespace fracpack::server {

Result<RecordKeys> load_record_keys(const config::SecurityConfig& s, RecordRole role) {
  RecordKeys keys;
  if (s.records == config::RecordSigning::kUnsigned) return keys;
  keys.trust.unsigned_before = s.unsigned_before;
  if (role != RecordRole::kNodeAgent && !s.signing_key.empty()) {
    auto signer = k8s::RecordSigner::load(s.signing_key);
    if (!signer) return Error{"security.signingKey: " + signer.message()};
    keys.signer = std::move(*signer);
  }
  if (role == RecordRole::kExtender && !keys.signer) {
    return Error{"security.signingKey: required to serve with security.records: signed (make one: openssl genpkey -algorithm "
                 "ed25519 -out signing.pem; or set security.records: unsigned where admission control keeps users from "
                 "writing allocation records)"};
  }
  if (role == RecordRole::kStandaloneExtender) return keys;  // the snapshot's records are trusted as written
  auto verifier = k8s::RecordVerifier::load(s.verify_keys);
  if (!verifier) return Error{"security.verifyKeys: " + verifier.message()};
  auto all = std::make_shared<k8s::RecordVerifier>(std::move(*verifier));
  if (keys.signer) {
    if (Status st = all->add_signer(*keys.signer); !st.ok()) return Error{"security.signingKey: " + st.message()};
  }
  if (all->size() == 0) {
    return Error{"security.verifyKeys: no public key to verify allocation records with (mount the extender's public key, "
                 "e.g. the ConfigMap fracpack-record-keys; or set security.records: unsigned)"};
  }
  keys.trust.verifier = std::move(all);
  return keys;
}

}  // namespace fracpack::server
