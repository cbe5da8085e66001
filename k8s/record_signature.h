// Signed allocation records: why a namespace user cannot forge, move or
// free a card by writing annotations, even where no admission control runs.
//
// The record a Binding writes (the contract's record_keys(): fracpack's
// fracpack.io/allocation and -gpu-indices, HAMi's vgpu-devices-allocated,
// gpushare's ALIYUN_COM_GPU_MEM_*) is pod annotations, which anyone who may
// patch the pod may rewrite. So the extender signs each record with an
// Ed25519 key only it holds, over the pod's UID, its node and the record's
// annotations, and writes the signature beside it in the same Binding
// (fracpack.io/allocation-signature). The node agent serves, and the ledger
// charges, a record only when the signature verifies with one of the public
// keys they are given:
//
//   copied to another pod     the UID differs: refused;
//   edited after the bind     the annotations differ: refused (the ledger
//                             keeps what it charged first);
//   written by hand           no signature, or one no known key made.
//
// Why Ed25519 rather than an HMAC: the verifiers (an agent on every GPU
// node) hold only public keys, so the root user of one node, who can read
// what its agent reads, still cannot sign a record for any pod.
//
// Rotation: the verifiers accept every key of their set (a signature names
// its key by id), the extender signs with one. Add the new public key to
// the set everywhere, then switch the extender's signing key, then drop the
// old public key once no live pod carries a record it signed
// (fracpack_records{key=...} counts them).
//
//   signature   "ed25519:<key id>:<base64 signature>;<base64 MAC>"
//   key id      the first 8 bytes of SHA-256 over the raw public key, hex
//   MAC         HMAC-SHA-256 of the same message, 16 bytes, under a key
//               derived from the private key: an extender, which holds the
//               private key, checks it in a microsecond where an Ed25519
//               verification takes ~65 (a restart verifies every bound pod
//               under the ledger's lock: 150 000 pods, ~10 s of CPU, would
//               delay readiness and stall filters). The agents, holding
//               public keys only, check the signature, as an extender does
//               when the MAC is missing or does not match.
//   message     record_message() below: a tag, the UID, the node, then each
//               record annotation as name, length, value (absent ones
//               marked), so no two records share a message.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/objects.h"
#include "common/result.h"

namespace fracpack::k8s {

inline constexpr std::string_view kRecordSignatureAnnotation = "fracpack.io/allocation-signature";

// The bytes signed for a pod's record: `keys` in the contract's order,
// their values looked up in `annotations`.
std::string record_message(std::string_view uid, std::string_view node, const std::vector<std::string>& keys,
                           const StringMap& annotations);

// SHA-256 of `bytes`, 32 raw bytes.
std::string sha256(std::string_view bytes);

class RecordSigner {
 public:
  // An Ed25519 private key in PEM (`openssl genpkey -algorithm ed25519`);
  // `source` names it in errors.
  static Result<std::shared_ptr<const RecordSigner>> from_pem(std::string_view pem, const std::string& source);
  static Result<std::shared_ptr<const RecordSigner>> load(const std::string& path);
  ~RecordSigner();

  // The signature annotation's value for `message`. Thread-safe.
  std::string sign(std::string_view message) const;
  const std::string& key_id() const { return key_id_; }
  // The key its MACs are made with (derived from the private key).
  const std::string& mac_key() const { return mac_key_; }
  // The public half, PEM ("-----BEGIN PUBLIC KEY-----").
  std::string public_pem() const;

 private:
  RecordSigner() = default;
  void* key_ = nullptr;  // EVP_PKEY
  std::string key_id_;
  std::string mac_key_;
};

class RecordVerifier {
 public:
  RecordVerifier();
  ~RecordVerifier();
  RecordVerifier(RecordVerifier&&) noexcept;
  RecordVerifier& operator=(RecordVerifier&&) noexcept;

  // Every Ed25519 public key in `pem` (several PEM blocks may follow each
  // other); an error names `source` and what is wrong.
  Status add_pem(std::string_view pem, const std::string& source);
  // The public half of a signer's key, and its MAC key (the extender
  // verifies its own records by their MAC).
  Status add_signer(const RecordSigner& signer);
  // Files of PEM keys, or folders of them (every regular file whose name
  // does not start with "."; a Kubernetes volume's ..data links are skipped).
  static Result<RecordVerifier> load(const std::vector<std::string>& paths);

  // Ok when `signature` is a signature of `message` by one of the keys;
  // else why not (malformed, unknown key id, does not verify). Thread-safe.
  Status verify(std::string_view message, std::string_view signature) const;
  // The same, returning the id of the key that made it.
  Result<std::string> verify_key(std::string_view message, std::string_view signature) const;
  size_t size() const { return keys_.size(); }
  std::vector<std::string> key_ids() const;

 private:
  struct Key {
    std::string id;
    void* key = nullptr;  // EVP_PKEY
    std::string mac_key;  // known for a signer's key only
  };
  std::vector<Key> keys_;
};

// How the records of bound pods are trusted (the ledger and the node agent
// share it). With no verifier every record is taken as written: snapshots
// and replays (the operator's own files) and `security.records: unsigned`.
struct RecordTrust {
  std::shared_ptr<const RecordVerifier> verifier;
  // RFC 3339: a pod created before this instant may carry an unsigned
  // record (one written before signing was turned on, or by the peer
  // scheduler fracpack replaced). Empty: none.
  std::string unsigned_before;

  bool verifies() const { return verifier != nullptr; }
};

// Whether `pod`'s record (`message` as record_message() made it) is one
// fracpack's extender wrote: the id of the key that signed it ("unsigned"
// for a record trusted by unsigned_before, "trusted" when nothing is
// verified), or why not.
Result<std::string> check_record_signature(const Pod& pod, std::string_view message, const RecordTrust& trust);

}  // namespace fracpack::k8s
