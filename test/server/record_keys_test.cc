// The record-signing keys of a process (server/record_keys.h): the extender
// signs and verifies with its own public half and the configured keys, the
// standalone extender trusts its snapshot, the node agent only verifies.
#include "server/record_keys.h"

#include <gtest/gtest.h>

#include "test/support/record_keys.h"
#include "test/support/server_fixture.h"

namespace fracpack::server::record_keys_test {
namespace {

using fracpack::testing::test_signer;
using fracpack::testing::test_signing_key_path;
using fracpack::testing::test_verify_key_path;

config::SecurityConfig security(std::string signing_key, std::vector<std::string> verify_keys = {}) {
  config::SecurityConfig s;
  s.signing_key = std::move(signing_key);
  s.verify_keys = std::move(verify_keys);
  return s;
}

TEST(RecordKeys, UnsignedRecordsNeedNoKeyInAnyRole) {
  config::SecurityConfig s;
  s.records = config::RecordSigning::kUnsigned;
  s.unsigned_before = "2024-01-01T00:00:00Z";
  for (RecordRole role : {RecordRole::kExtender, RecordRole::kStandaloneExtender, RecordRole::kNodeAgent}) {
    auto keys = load_record_keys(s, role);
    ASSERT_TRUE(keys) << keys.message();
    EXPECT_EQ(keys->signer, nullptr);
    EXPECT_FALSE(keys->trust.verifies()) << "records taken as written";
  }
}

TEST(RecordKeys, TheExtenderSignsAndVerifiesItsOwnRecords) {
  config::SecurityConfig s = security(test_signing_key_path());
  s.unsigned_before = "2024-01-01T00:00:00Z";
  auto keys = load_record_keys(s, RecordRole::kExtender);
  ASSERT_TRUE(keys) << keys.message();
  ASSERT_NE(keys->signer, nullptr);
  ASSERT_TRUE(keys->trust.verifies());
  EXPECT_EQ(keys->trust.unsigned_before, "2024-01-01T00:00:00Z");
  EXPECT_EQ(keys->trust.verifier->size(), 1u) << "its own public half";
  const std::string signature = keys->signer->sign("a record");
  EXPECT_TRUE(keys->trust.verifier->verify("a record", signature).ok());
  EXPECT_FALSE(keys->trust.verifier->verify("another record", signature).ok());
}

TEST(RecordKeys, TheExtenderAlsoVerifiesWithTheConfiguredKeys) {
  const fracpack::testing::TempDir dir;
  const std::string own = dir.write("own.pem", fracpack::testing::new_private_key_pem());
  auto keys = load_record_keys(security(own, {test_verify_key_path()}), RecordRole::kExtender);
  ASSERT_TRUE(keys) << keys.message();
  ASSERT_TRUE(keys->trust.verifies());
  EXPECT_EQ(keys->trust.verifier->size(), 2u);
  // A record the test key signed (another extender's) verifies too.
  EXPECT_TRUE(keys->trust.verifier->verify("m", test_signer()->sign("m")).ok());
  EXPECT_TRUE(keys->trust.verifier->verify("m", keys->signer->sign("m")).ok());
}

TEST(RecordKeys, TheExtenderRefusesToServeSignedRecordsWithoutAKey) {
  auto keys = load_record_keys(security(""), RecordRole::kExtender);
  ASSERT_FALSE(keys);
  EXPECT_EQ(keys.message().rfind("security.signingKey: required", 0), 0u) << keys.message();
  EXPECT_NE(keys.message().find("security.records: unsigned"), std::string::npos) << "says what else to do";
}

TEST(RecordKeys, ErrorsNameTheKeyThatIsWrong) {
  const fracpack::testing::TempDir dir;
  const std::string garbage = dir.write("garbage.pem", "not a key");
  auto bad_signing = load_record_keys(security(garbage), RecordRole::kExtender);
  ASSERT_FALSE(bad_signing);
  EXPECT_EQ(bad_signing.message().rfind("security.signingKey: ", 0), 0u) << bad_signing.message();
  auto missing_signing = load_record_keys(security(dir.path() + "/absent.pem"), RecordRole::kStandaloneExtender);
  ASSERT_FALSE(missing_signing);
  EXPECT_EQ(missing_signing.message().rfind("security.signingKey: ", 0), 0u) << missing_signing.message();
  auto bad_verify = load_record_keys(security(test_signing_key_path(), {garbage}), RecordRole::kExtender);
  ASSERT_FALSE(bad_verify);
  EXPECT_EQ(bad_verify.message().rfind("security.verifyKeys: ", 0), 0u) << bad_verify.message();
  auto agent = load_record_keys(security("", {dir.path() + "/absent.pub"}), RecordRole::kNodeAgent);
  ASSERT_FALSE(agent);
  EXPECT_EQ(agent.message().rfind("security.verifyKeys: ", 0), 0u) << agent.message();
}

TEST(RecordKeys, TheStandaloneExtenderTrustsItsSnapshotAndSignsWhenGivenAKey) {
  auto without = load_record_keys(security(""), RecordRole::kStandaloneExtender);
  ASSERT_TRUE(without) << without.message();
  EXPECT_EQ(without->signer, nullptr);
  EXPECT_FALSE(without->trust.verifies());
  auto with = load_record_keys(security(test_signing_key_path()), RecordRole::kStandaloneExtender);
  ASSERT_TRUE(with) << with.message();
  EXPECT_NE(with->signer, nullptr);
  EXPECT_FALSE(with->trust.verifies()) << "the snapshot's records are the operator's";
}

TEST(RecordKeys, TheNodeAgentOnlyVerifies) {
  // Given a signing key anyway, the agent does not hold it.
  auto keys = load_record_keys(security(test_signing_key_path(), {test_verify_key_path()}), RecordRole::kNodeAgent);
  ASSERT_TRUE(keys) << keys.message();
  EXPECT_EQ(keys->signer, nullptr);
  ASSERT_TRUE(keys->trust.verifies());
  EXPECT_EQ(keys->trust.verifier->size(), 1u);
  EXPECT_TRUE(keys->trust.verifier->verify("m", test_signer()->sign("m")).ok());
  // Without a public key there is nothing to verify with.
  auto none = load_record_keys(security(test_signing_key_path()), RecordRole::kNodeAgent);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.message().rfind("security.verifyKeys: no public key", 0), 0u) << none.message();
}

}  // namespace
}  // namespace fracpack::server::record_keys_test
