#include "test/support/record_keys.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>

namespace fracpack::testing {
namespace {

struct KeyFiles {
  std::string private_path, public_path;
  std::shared_ptr<const k8s::RecordSigner> signer;
};

const KeyFiles& key_files() {
  static const KeyFiles files = [] {
    KeyFiles f;
    const std::string dir = std::filesystem::temp_directory_path().string() + "/fp-keys-" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    f.private_path = dir + "/signing.pem";
    f.public_path = dir + "/verify.pem";
    std::ofstream(f.private_path) << new_private_key_pem();
    auto signer = k8s::RecordSigner::load(f.private_path);
    if (!signer) throw std::runtime_error(signer.message());
    f.signer = *signer;
    std::ofstream(f.public_path) << f.signer->public_pem();
    return f;
  }();
  return files;
}

}  // namespace

std::string new_private_key_pem() {
  EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  if (key == nullptr) throw std::runtime_error("cannot make an Ed25519 key");
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(n));
  BIO_free(bio);
  EVP_PKEY_free(key);
  return pem;
}

const std::string& test_signing_key_path() { return key_files().private_path; }
const std::string& test_verify_key_path() { return key_files().public_path; }
std::shared_ptr<const k8s::RecordSigner> test_signer() { return key_files().signer; }

k8s::RecordTrust test_trust() {
  auto v = std::make_shared<k8s::RecordVerifier>();
  (void)v->add_signer(*test_signer());
  k8s::RecordTrust t;
  t.verifier = std::move(v);
  return t;
}

std::map<std::string, std::string> signed_record(const k8s::Contract& contract, const std::string& uid, const std::string& node,
                                                 std::map<std::string, std::string> annotations) {
  k8s::StringMap as_written(annotations.begin(), annotations.end());
  const std::string message = k8s::record_message(uid, node, contract.record_keys(), as_written);
  annotations[std::string(k8s::kRecordSignatureAnnotation)] = test_signer()->sign(message);
  return annotations;
}

}  // namespace fracpack::testing
