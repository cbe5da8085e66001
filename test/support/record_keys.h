// Record-signing keys for the tests (k8s/record_signature.h): one Ed25519
// key pair made per test process, written where a config can name it, and
// helpers that sign hand-made records as fracpack's extender would.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "k8s/contract/contract.h"
#include "k8s/objects.h"
#include "k8s/record_signature.h"

namespace fracpack::testing {

// The test key pair's files (PEM), made on first use.
const std::string& test_signing_key_path();
const std::string& test_verify_key_path();
std::shared_ptr<const k8s::RecordSigner> test_signer();
// Verifies with the test key.
k8s::RecordTrust test_trust();

// `annotations` (a record as `contract` writes it, for pod `uid` on `node`)
// with the signature the test key makes, as the extender's Binding has it.
std::map<std::string, std::string> signed_record(const k8s::Contract& contract, const std::string& uid, const std::string& node,
                                                 std::map<std::string, std::string> annotations);

// A fresh Ed25519 private key, PEM (a key fracpack does not know).
std::string new_private_key_pem();

}  // namespace fracpack::testing
