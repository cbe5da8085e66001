// k8s/record_signature: a record signed by the extender verifies; copied to
// another pod, moved to another node, edited, signed by another key or
// written by hand, it does not.
#include "k8s/record_signature.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test/support/record_keys.h"

namespace fracpack::k8s::record_signature_test {
namespace {

const std::vector<std::string> kKeys = {"fracpack.io/allocation", "fracpack.io/gpu-indices"};
const char* kRecord = R"({"node":"n1","containers":[{"name":"main","cards":[{"index":0,"uuid":"GPU-a","memoryMiB":8192,"cores":50}]}]})";

Pod pod_with(const std::string& uid, const std::string& node, StringMap annotations) {
  Pod p;
  p.meta.uid = uid;
  p.meta.name = "p";
  p.meta.namespace_name = "ns";
  p.meta.creation_timestamp = "2026-06-01T00:00:00Z";
  p.node_name = node;
  p.meta.annotations = std::move(annotations);
  return p;
}

// The pod as the extender's Binding writes it: record and signature.
Pod signed_pod(const std::string& uid = "uid-1", const std::string& node = "n1") {
  StringMap a = {{"fracpack.io/allocation", kRecord}, {"fracpack.io/gpu-indices", "0"}};
  a.emplace_back(std::string(kRecordSignatureAnnotation), testing::test_signer()->sign(record_message(uid, node, kKeys, a)));
  return pod_with(uid, node, a);
}

Result<std::string> check(const Pod& p, const RecordTrust& trust = testing::test_trust()) {
  return check_record_signature(p, record_message(p.meta.uid, p.node_name, kKeys, p.meta.annotations), trust);
}

TEST(RecordSignature, TheExtendersRecordVerifiesAndNamesItsKey) {
  auto by = check(signed_pod());
  ASSERT_TRUE(by) << by.message();
  EXPECT_EQ(*by, testing::test_signer()->key_id());
  EXPECT_EQ(by->size(), 16u);
}

TEST(RecordSignature, ACopyOnAnotherPodOrNodeOrAnEditDoesNot) {
  Pod copied = signed_pod();
  copied.meta.uid = "uid-2";  // the same annotations written on another pod
  EXPECT_NE(check(copied).message().find("does not match the record"), std::string::npos);
  Pod moved = signed_pod();
  moved.node_name = "n2";
  EXPECT_FALSE(check(moved));
  Pod edited = signed_pod();
  edited.meta.annotations[0].second.replace(edited.meta.annotations[0].second.find("\"index\":0"), 9, "\"index\":1");
  EXPECT_FALSE(check(edited));
  Pod flat = signed_pod();
  flat.meta.annotations[1].second = "1";  // the flat list is signed too
  EXPECT_FALSE(check(flat));
  Pod dropped = signed_pod();
  dropped.meta.annotations.erase(dropped.meta.annotations.begin() + 1);  // an annotation removed
  EXPECT_FALSE(check(dropped));
}

TEST(RecordSignature, HandWrittenOrForeignSignaturesAreRefusedWithAReason) {
  Pod none = pod_with("uid-1", "n1", {{"fracpack.io/allocation", kRecord}});
  EXPECT_NE(check(none).message().find("no annotation fracpack.io/allocation-signature"), std::string::npos) << check(none).message();
  // Signed by a key fracpack does not have.
  auto other = RecordSigner::from_pem(testing::new_private_key_pem(), "other");
  ASSERT_TRUE(other) << other.message();
  Pod foreign = pod_with("uid-1", "n1", {{"fracpack.io/allocation", kRecord}, {"fracpack.io/gpu-indices", "0"}});
  foreign.meta.annotations.emplace_back(std::string(kRecordSignatureAnnotation),
                                        (*other)->sign(record_message("uid-1", "n1", kKeys, foreign.meta.annotations)));
  EXPECT_NE(check(foreign).message().find("not one of fracpack's"), std::string::npos) << check(foreign).message();
  // A signature with the right key id and a made-up value.
  const std::string id = testing::test_signer()->key_id();
  for (const std::string& bad : std::vector<std::string>{"ed25519:" + id + ":" + std::string(88, 'A'), "ed25519:" + id + ":short", "rsa:" + id + ":x", "junk",
                                 std::string("ed25519:") + id}) {
    Pod p = pod_with("uid-1", "n1", {{"fracpack.io/allocation", kRecord}, {"fracpack.io/gpu-indices", "0"}});
    p.meta.annotations.emplace_back(std::string(kRecordSignatureAnnotation), bad);
    EXPECT_FALSE(check(p)) << bad;
  }
}

TEST(RecordSignature, UnsignedRecordsOlderThanTheSwitchAreTrustedAndNoOthers) {
  RecordTrust t = testing::test_trust();
  t.unsigned_before = "2026-07-01T00:00:00Z";
  Pod old = pod_with("uid-1", "n1", {{"fracpack.io/allocation", kRecord}});
  auto by = check(old, t);
  ASSERT_TRUE(by) << by.message();
  EXPECT_EQ(*by, "unsigned");
  Pod young = old;
  young.meta.creation_timestamp = "2026-07-01T00:00:01Z";
  EXPECT_FALSE(check(young, t));
  Pod unknown_age = old;
  unknown_age.meta.creation_timestamp = "";
  EXPECT_FALSE(check(unknown_age, t));
}

TEST(RecordSignature, NoVerifierTakesRecordsAsWritten) {
  auto by = check(pod_with("uid-1", "n1", {{"fracpack.io/allocation", "anything"}}), RecordTrust{});
  ASSERT_TRUE(by);
  EXPECT_EQ(*by, "trusted");
}

TEST(RecordSignature, MessagesOfDifferentRecordsDiffer) {
  // Length-prefixed values: no two splits of the same bytes sign alike.
  EXPECT_NE(record_message("u", "n", {"a", "b"}, {{"a", "x\nb=1:y"}}), record_message("u", "n", {"a", "b"}, {{"a", "x"}, {"b", "y"}}));
  EXPECT_NE(record_message("u", "n", {"a"}, {}), record_message("u", "n", {"a"}, {{"a", ""}}));
  EXPECT_NE(record_message("u", "n1", {"a"}, {}), record_message("u", "n", {"a"}, {}));
}

TEST(RecordSignature, KeysLoadFromFilesAndFoldersAndBadOnesAreNamed) {
  const std::string dir = ::testing::TempDir() + "fp-verify-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir + "/set");
  std::ofstream(dir + "/set/a.pem") << testing::test_signer()->public_pem();
  auto other = RecordSigner::from_pem(testing::new_private_key_pem(), "other");
  std::ofstream(dir + "/set/b.pem") << (*other)->public_pem();
  std::filesystem::create_directories(dir + "/set/..data");  // a mounted volume's own entries are skipped
  auto v = RecordVerifier::load({dir + "/set"});
  ASSERT_TRUE(v) << v.message();
  EXPECT_EQ(v->size(), 2u);
  std::ofstream(dir + "/junk.pem") << "not a key";
  auto bad = RecordVerifier::load({dir + "/junk.pem"});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.message().find(dir + "/junk.pem: no PEM public key"), std::string::npos) << bad.message();
  std::ofstream(dir + "/rsa.pem") << "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n";
  auto signer = RecordSigner::load(dir + "/rsa.pem");
  EXPECT_FALSE(signer);
  auto missing = RecordSigner::load(dir + "/none.pem");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.message().find(dir + "/none.pem"), std::string::npos) << missing.message();
  std::filesystem::remove_all(dir);
}


TEST(RecordSignature, TheExtenderChecksItsMacAndAnAgentTheSignature) {
  const Pod good = signed_pod();
  const std::string message = record_message(good.meta.uid, good.node_name, kKeys, good.meta.annotations);
  RecordVerifier agent;  // public keys only
  ASSERT_TRUE(agent.add_pem(testing::test_signer()->public_pem(), "public").ok());
  const std::string& signature = *good.meta.annotation(kRecordSignatureAnnotation);
  EXPECT_TRUE(agent.verify(message, signature).ok());
  EXPECT_TRUE(testing::test_trust().verifier->verify(message, signature).ok());
  // The MAC edited: the extender falls back to the signature; both still trust
  // the record fracpack wrote, and neither trusts an edited record.
  std::string bad_mac = signature;
  bad_mac.back() = bad_mac.back() == 'A' ? 'B' : 'A';
  EXPECT_TRUE(testing::test_trust().verifier->verify(message, bad_mac).ok());
  EXPECT_TRUE(agent.verify(message, bad_mac).ok());
  const std::string other = record_message("uid-x", "n1", kKeys, good.meta.annotations);
  EXPECT_FALSE(testing::test_trust().verifier->verify(other, signature).ok()) << "a MAC for another message";
  EXPECT_FALSE(agent.verify(other, signature).ok());
  // No MAC at all (a signature made elsewhere): the signature decides.
  const std::string no_mac = signature.substr(0, signature.find(';'));
  EXPECT_TRUE(testing::test_trust().verifier->verify(message, no_mac).ok());
}

}  // namespace
}  // namespace fracpack::k8s::record_signature_test
