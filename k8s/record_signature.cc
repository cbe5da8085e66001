#include "k8s/record_signature.h"

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "common/file_io.h"
#include "common/time.h"

namespace fracpack::k8s {
namespace {

constexpr std::string_view kScheme = "ed25519";
constexpr size_t kSignatureBytes = 64;

EVP_PKEY* pkey(void* p) { return static_cast<EVP_PKEY*>(p); }

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

Result<std::string> key_id_of(EVP_PKEY* key) {
  unsigned char raw[64];
  size_t len = sizeof raw;
  if (EVP_PKEY_get_raw_public_key(key, raw, &len) != 1) return Error{"cannot read the raw public key"};
  return hex(sha256(std::string_view(reinterpret_cast<const char*>(raw), len)).substr(0, 8));
}

bool is_ed25519(EVP_PKEY* key) { return EVP_PKEY_get_base_id(key) == EVP_PKEY_ED25519; }

constexpr size_t kMacBytes = 16;

// HMAC-SHA-256 of `message` under `key`, its first kMacBytes bytes.
std::string mac_of(const std::string& key, std::string_view message) {
  unsigned char out[EVP_MAX_MD_SIZE];
  size_t len = 0;
  if (EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, key.data(), key.size(),
                reinterpret_cast<const unsigned char*>(message.data()), message.size(), out, sizeof out, &len) == nullptr ||
      len < kMacBytes) {
    return {};
  }
  return std::string(reinterpret_cast<const char*>(out), kMacBytes);
}

// Equal in time independent of where they differ.
bool same_bytes(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// Standard base64 of exactly `want` bytes, or nothing.
bool unbase64(std::string_view text, size_t want, std::string& out) {
  if (text.size() != 4 * ((want + 2) / 3)) return false;
  std::string buf(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(buf.data()), reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return false;
  // EVP_DecodeBlock counts padding as zero bytes.
  const size_t pad = (text.size() >= 1 && text.back() == '=') + (text.size() >= 2 && text[text.size() - 2] == '=');
  if (static_cast<size_t>(n) - pad != want) return false;
  buf.resize(want);
  out = std::move(buf);
  return true;
}

// The PEM blocks of `pem` as public keys.
Status read_public_keys(std::string_view pem, const std::string& source, std::vector<EVP_PKEY*>& out) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return Error{source + ": out of memory"};
  size_t found = 0;
  Status status = Status::Ok();
  for (;;) {
    EVP_PKEY* key = PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr);
    if (key == nullptr) break;
    if (!is_ed25519(key)) {
      EVP_PKEY_free(key);
      status = Error{source + ": public key " + std::to_string(found + 1) + " is not an Ed25519 key"};
      break;
    }
    out.push_back(key);
    ++found;
  }
  BIO_free(bio);
  if (status.ok() && found == 0) status = Error{source + ": no PEM public key (\"-----BEGIN PUBLIC KEY-----\") found"};
  return status;
}

}  // namespace

std::string record_message(std::string_view uid, std::string_view node, const std::vector<std::string>& keys,
                           const StringMap& annotations) {
  std::string out = "fracpack allocation record v1\nuid=";
  out.append(uid).append("\nnode=").append(node).append("\n");
  for (const std::string& k : keys) {
    out.append(k);
    if (const std::string* v = find(annotations, k)) {
      out.append("=").append(std::to_string(v->size())).append(":").append(*v);
    } else {
      out.append("-");
    }
    out.append("\n");
  }
  return out;
}

std::string sha256(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<const char*>(md), len);
}

// --- the signer ---

Result<std::shared_ptr<const RecordSigner>> RecordSigner::from_pem(std::string_view pem, const std::string& source) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return Error{source + ": out of memory"};
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (key == nullptr) return Error{source + ": no PEM private key (\"-----BEGIN PRIVATE KEY-----\") found"};
  if (!is_ed25519(key)) {
    EVP_PKEY_free(key);
    return Error{source + ": not an Ed25519 key (make one with: openssl genpkey -algorithm ed25519)"};
  }
  std::shared_ptr<RecordSigner> s(new RecordSigner());
  s->key_ = key;
  auto id = key_id_of(key);
  if (!id) return Error{source + ": " + id.message()};
  s->key_id_ = *id;
  unsigned char raw[64];
  size_t raw_len = sizeof raw;
  if (EVP_PKEY_get_raw_private_key(key, raw, &raw_len) != 1) return Error{source + ": cannot read the raw private key"};
  s->mac_key_ = sha256("fracpack record MAC v1\n" + std::string(reinterpret_cast<const char*>(raw), raw_len));
  OPENSSL_cleanse(raw, sizeof raw);
  return std::shared_ptr<const RecordSigner>(std::move(s));
}

Result<std::shared_ptr<const RecordSigner>> RecordSigner::load(const std::string& path) {
  auto text = read_file(path);
  if (!text) return Error{text.message()};
  return from_pem(*text, path);
}

RecordSigner::~RecordSigner() { EVP_PKEY_free(pkey(key_)); }

std::string RecordSigner::sign(std::string_view message) const {
  // One context per call: EVP_PKEY is safe to share, a context is not.
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  unsigned char sig[kSignatureBytes];
  size_t len = sizeof sig;
  const bool ok = ctx != nullptr && EVP_DigestSignInit(ctx, nullptr, nullptr, nullptr, pkey(key_)) == 1 &&
                  EVP_DigestSign(ctx, sig, &len, reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
  EVP_MD_CTX_free(ctx);
  // Only an allocation failure gets here; a record without a valid
  // signature is refused by every verifier, never trusted.
  if (!ok) return std::string(kScheme) + ":" + key_id_ + ":";
  return std::string(kScheme) + ":" + key_id_ + ":" + base64(std::string_view(reinterpret_cast<const char*>(sig), len)) + ";" +
         base64(mac_of(mac_key_, message));
}

std::string RecordSigner::public_pem() const {
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr) return {};
  std::string out;
  if (PEM_write_bio_PUBKEY(bio, pkey(key_)) == 1) {
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    if (n > 0) out.assign(data, static_cast<size_t>(n));
  }
  BIO_free(bio);
  return out;
}

// --- the verifier ---

RecordVerifier::RecordVerifier() = default;

RecordVerifier::~RecordVerifier() {
  for (Key& k : keys_) EVP_PKEY_free(pkey(k.key));
}

RecordVerifier::RecordVerifier(RecordVerifier&& o) noexcept : keys_(std::move(o.keys_)) { o.keys_.clear(); }

RecordVerifier& RecordVerifier::operator=(RecordVerifier&& o) noexcept {
  if (this != &o) {
    for (Key& k : keys_) EVP_PKEY_free(pkey(k.key));
    keys_ = std::move(o.keys_);
    o.keys_.clear();
  }
  return *this;
}

Status RecordVerifier::add_pem(std::string_view pem, const std::string& source) {
  std::vector<EVP_PKEY*> found;
  Status s = read_public_keys(pem, source, found);
  for (EVP_PKEY* key : found) {
    auto id = key_id_of(key);
    const bool known = id && std::any_of(keys_.begin(), keys_.end(), [&](const Key& k) { return k.id == *id; });
    if (!id || known || !s.ok()) {
      if (!id && s.ok()) s = Error{source + ": " + id.message()};
      EVP_PKEY_free(key);
      continue;
    }
    keys_.push_back(Key{*id, key, {}});
  }
  return s;
}

Status RecordVerifier::add_signer(const RecordSigner& signer) {
  if (Status s = add_pem(signer.public_pem(), "the signing key"); !s.ok()) return s;
  for (Key& k : keys_) {
    if (k.id == signer.key_id()) k.mac_key = signer.mac_key();
  }
  return Status::Ok();
}

Result<RecordVerifier> RecordVerifier::load(const std::vector<std::string>& paths) {
  RecordVerifier v;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      std::vector<std::string> files;
      for (const auto& e : std::filesystem::directory_iterator(path, ec)) {
        const std::string name = e.path().filename().string();
        if (name.empty() || name[0] == '.' || !e.is_regular_file(ec)) continue;
        files.push_back(e.path().string());
      }
      if (ec) return Error{path + ": " + ec.message()};
      std::sort(files.begin(), files.end());
      if (files.empty()) return Error{path + ": holds no key file"};
      for (const std::string& f : files) {
        auto text = read_file(f);
        if (!text) return Error{text.message()};
        if (Status s = v.add_pem(*text, f); !s.ok()) return Error{s.message()};
      }
      continue;
    }
    auto text = read_file(path);
    if (!text) return Error{text.message()};
    if (Status s = v.add_pem(*text, path); !s.ok()) return Error{s.message()};
  }
  return v;
}

std::vector<std::string> RecordVerifier::key_ids() const {
  std::vector<std::string> out;
  for (const Key& k : keys_) out.push_back(k.id);
  return out;
}

Status RecordVerifier::verify(std::string_view message, std::string_view signature) const {
  auto k = verify_key(message, signature);
  return k ? Status::Ok() : Status(k.error());
}

Result<std::string> RecordVerifier::verify_key(std::string_view message, std::string_view signature) const {
  const size_t first = signature.find(':');
  const size_t second = first == std::string_view::npos ? first : signature.find(':', first + 1);
  if (second == std::string_view::npos || signature.substr(0, first) != kScheme) {
    return Error{"the signature is not of the form ed25519:<key id>:<base64>"};
  }
  const std::string_view id = signature.substr(first + 1, second - first - 1);
  auto key = std::find_if(keys_.begin(), keys_.end(), [&](const Key& k) { return k.id == id; });
  if (key == keys_.end()) return Error{"the signature names a key that is not one of fracpack's"};
  std::string_view rest = signature.substr(second + 1);
  std::string_view mac_text;
  if (const size_t semi = rest.find(';'); semi != std::string_view::npos) {
    mac_text = rest.substr(semi + 1);
    rest = rest.substr(0, semi);
  }
  std::string sig;
  if (!unbase64(rest, kSignatureBytes, sig)) return Error{"the signature is not 64 bytes of base64"};
  if (!key->mac_key.empty() && !mac_text.empty()) {
    // The signer's own key: a matching MAC proves the private key made it.
    // One that does not match falls back to the signature, which alone is
    // the proof (no one can make fracpack distrust a record it wrote by
    // editing its MAC).
    std::string mac;
    if (unbase64(mac_text, kMacBytes, mac) && same_bytes(mac, mac_of(key->mac_key, message))) return key->id;
  }
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok = ctx != nullptr && EVP_DigestVerifyInit(ctx, nullptr, nullptr, nullptr, pkey(key->key)) == 1 &&
                  EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                                   reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
  EVP_MD_CTX_free(ctx);
  if (!ok) return Error{"the signature does not match the record (written or changed by someone other than fracpack's extender)"};
  return key->id;
}

Result<std::string> check_record_signature(const Pod& pod, std::string_view message, const RecordTrust& trust) {
  if (!trust.verifies()) return std::string("trusted");
  const std::string* signature = pod.meta.annotation(kRecordSignatureAnnotation);
  Result<std::string> verified = signature != nullptr ? trust.verifier->verify_key(message, *signature)
                                                      : Result<std::string>(Error{"no annotation " + std::string(kRecordSignatureAnnotation) +
                                                                                  ": the record was not written by fracpack's extender"});
  if (verified || trust.unsigned_before.empty()) return verified;
  // A record older than signing: the pod's creation time is the API
  // server's, which no user writes.
  const auto created = parse_rfc3339(pod.meta.creation_timestamp);
  const auto before = parse_rfc3339(trust.unsigned_before);
  if (created && before && *created < *before) return std::string("unsigned");
  return verified;
}

}  // namespace fracpack::k8s
