// The configuration file: the documented example is complete and equals the
// defaults; every broken file is refused by `fracpack serve --check-config`
// with a message naming the key and its line; flags override the file.
#include "config/config.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>

#include "test/support/record_keys.h"
#include "test/support/testlib.h"

namespace fracpack::config::config_test {
namespace {

using testing::run_fracpack;

const std::string kExample = std::string(FRACPACK_SOURCE_DIR) + "/config/fracpack.yaml";

// A dotted key ("limits.maxConnections") present in the document?
bool has_key(const YAML::Node& root, const std::string& dotted) {
  YAML::Node node = YAML::Clone(root);
  size_t start = 0;
  while (true) {
    const size_t dot = dotted.find('.', start);
    const std::string key = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node.IsMap() || !node[key].IsDefined()) return false;
    node.reset(node[key]);
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}

TEST(ExampleConfig, DocumentsEveryKeyWithItsDefaultValue) {
  auto text = testing::read_file(kExample);
  ASSERT_TRUE(text);
  const YAML::Node root = YAML::Load(*text);
  const std::vector<std::string> keys = config_keys();
  EXPECT_GT(keys.size(), 40u);
  for (const auto& key : keys) {
    EXPECT_TRUE(has_key(root, key)) << key << " is read by fracpack but not documented in config/fracpack.yaml";
    // Each key carries a comment: on its line, or on the line(s) before it
    // (the contract's names are grouped under one).
  }
  auto parsed = parse_config(*text, "fracpack.yaml");
  ASSERT_TRUE(parsed) << parsed.message();
  EXPECT_TRUE(*parsed == Config{}) << "config/fracpack.yaml shows a value that is not the default";
}

TEST(ExampleConfig, ChecksCleanThroughTheBinary) {
  // (With its default records: signed, serving needs a signing key.)
  auto unkeyed = run_fracpack({"serve", "--config", kExample, "--check-config"});
  EXPECT_EQ(unkeyed.exit_code, 1);
  EXPECT_NE(unkeyed.err.find("security.signingKey: required"), std::string::npos) << unkeyed.err;
  auto r = run_fracpack({"serve", "--config", kExample, "--signing-key", testing::test_signing_key_path(), "--check-config"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "configuration ok\n");
  auto junk = run_fracpack({"serve", "--config", kExample, "--signing-key", kExample, "--check-config"});
  EXPECT_EQ(junk.exit_code, 1);
  EXPECT_NE(junk.err.find("security.signingKey: " + kExample + ": no PEM private key"), std::string::npos) << junk.err;
}

struct Broken {
  const char* name;
  const char* yaml;
  const char* message;  // expected in stderr, after "<file>:"
};

// Each entry: a broken file and the start of the message that must name the
// key (and the line, counted from 1).
const Broken kBroken[] = {
    {"unknown top-level key", "listen: \":8888\"\nlissten: \":9999\"\n", "2: lissten: unknown key"},
    {"unknown nested key", "policy:\n  nmae: fgd\n", "2: policy.nmae: unknown key"},
    {"duplicate key", "log:\n  level: info\n  level: debug\n", "3: log.level: duplicate key (first on line 2)"},
    {"integer expected", "ioThreads: many\n", "1: ioThreads: expected an integer, got \"many\""},
    {"integer out of range", "\n\nioThreads: 0\n", "3: ioThreads: 0 is out of range [1, 64]"},
    {"float for an integer", "bindWorkers: 2.5\n", "1: bindWorkers: expected an integer"},
    {"size expected", "limits:\n  maxRequestBytes: 12Q\n", "2: limits.maxRequestBytes: expected a size like 64Mi"},
    {"size out of range", "limits:\n  maxRequestBytes: 10\n", "2: limits.maxRequestBytes: 10 is out of range"},
    {"bodies in flight below one request", "limits:\n  maxRequestBytes: 64Mi\n  maxBodyBytesInFlight: 1Mi\n",
     "3: limits.maxBodyBytesInFlight: 1048576 is below limits.maxRequestBytes (67108864)"},
    {"bad duration unit", "tls:\n  reloadInterval: 10 parsecs\n", "2: tls.reloadInterval: unknown unit"},
    {"duration out of range", "cluster:\n  assumeTtl: 10ms\n", "2: cluster.assumeTtl: 10ms is out of range"},
    {"negative duration", "limits:\n  idleTimeout: -5s\n", "2: limits.idleTimeout: expected a duration"},
    {"boolean expected", "cluster:\n  events: yes\n", "2: cluster.events: expected true or false, got \"yes\""},
    {"number expected", "policy:\n  learnHalfLife: soon\n", "2: policy.learnHalfLife: expected a number"},
    {"number out of range", "policy:\n  learnHalfLife: 0\n", "2: policy.learnHalfLife: 0 is out of range"},
    {"unknown policy", "policy:\n  name: magic\n", "2: policy.name: unknown policy \"magic\""},
    {"bad log level", "log:\n  level: loud\n", "2: log.level: expected debug, info, warn or error"},
    {"bad log format", "log:\n  format: xml\n", "2: log.format: expected json or logfmt"},
    {"listen without port", "listen: \"8888\"\n", "1: listen: expected HOST:PORT"},
    {"listen bad port", "listen: \"0.0.0.0:99999\"\n", "1: listen: bad port"},
    {"metricsListen on listen's port", "listen: \"127.0.0.1:8888\"\nmetricsListen: \"0.0.0.0:8888\"\n", "2: metricsListen: the port 8888"},
    {"verbs open to the network", "listen: \":8888\"\n", "1: listen: \":8888\" is reachable from other hosts and its clients are not authenticated"},
    {"records neither signed nor unsigned", "security:\n  records: maybe\n", "2: security.records: expected signed or unsigned"},
    {"unsigned before a non-time", "security:\n  unsignedBefore: yesterday\n", "2: security.unsignedBefore: \"yesterday\" is not an RFC 3339 time"},
    {"webhook without a certificate", "admission:\n  listen: \":9443\"\n", "2: admission.listen: needs admission.certFile and admission.keyFile"},
    {"no scheduler name", "schedulerNames: []\n", "1: schedulerNames: must name at least one scheduler"},
    {"an empty scheduler name", "schedulerNames: [\"\"]\n", "1: schedulerNames: an empty string in the list"},
    {"url prefix without slash", "urlPrefix: scheduler\n", "1: urlPrefix: must start with \"/\""},
    {"certificate without key", "tls:\n  certFile: /tls/tls.crt\n", "2: tls.certFile: needs tls.keyFile"},
    {"key without certificate", "tls:\n  keyFile: /tls/tls.key\n", "2: tls.keyFile: needs tls.certFile"},
    {"kubeconfig and snapshot", "cluster:\n  kubeconfig: /k\n  snapshot: /s.json\n", "3: cluster.snapshot: excludes cluster.kubeconfig"},
    {"workload ConfigMap without namespace", "workload:\n  configMap: justname\n", "2: workload.configMap: expected namespace/name"},
    // One rule for "namespace/name" (common/text.h split_object_key): the
    // ConfigMap's reference was checked only for a '/', so "ns/" passed and
    // the daemon asked the API server for a ConfigMap with no name.
    {"workload ConfigMap without a name", "workload:\n  configMap: ns/\n", "2: workload.configMap: expected namespace/name"},
    {"workload ConfigMap with two slashes", "workload:\n  configMap: ns/a/b\n", "2: workload.configMap: expected namespace/name"},
    {"bind fence marker with two slashes", "cluster:\n  bindFenceMarker: ns/a/b\n", "2: cluster.bindFenceMarker: expected namespace/name of a pod"},
    {"contract name with a space", "contract:\n  gpu: \"my gpu\"\n", "2: contract.gpu: \"my gpu\" is not a valid name"},
    {"unknown contract name", "contract:\n  gpuMem: x.io/m\n", "2: contract.gpuMem: unknown key"},
    {"section not a mapping", "tls: [a, b]\n", "1: tls: expected a mapping of keys"},
    {"list for a string", "listen: [a]\n", "1: listen: expected a string"},
    {"top level not a mapping", "- listen\n", "1: (top level): expected a mapping of keys"},
    {"invalid YAML", "listen: \":8888\"\npolicy: {name: fgd\n", "3: invalid YAML"},
    {"node agent without-devices mode", "nodeAgent:\n  withoutDevices: sleep\n", "2: nodeAgent.withoutDevices: expected fail or idle"},
    // A bind fence read that is none of the four is refused, never taken
    // for auto (server/daemon.cc used to read any other text as auto).
    {"bind fence read misspelt", "cluster:\n  bindFenceRead: Consistent\n",
     "2: cluster.bindFenceRead: expected auto, consistent, marker or resourceVersion, got \"Consistent\""},
    {"unknown profile", "contract:\n  profile: nvidia\n", "2: contract.profile: unknown profile \"nvidia\" (known: fracpack, hami, gpushare, tke)"},
    {"node agent IDs per card", "nodeAgent:\n  idsPerCard: 0\n", "2: nodeAgent.idsPerCard: 0 is out of range [1, 1024]"},
    {"node agent record wait", "nodeAgent:\n  recordWait: 2m\n", "2: nodeAgent.recordWait: 2m is out of range"},
    {"node agent listen", "nodeAgent:\n  listen: nowhere\n", "2: nodeAgent.listen: expected HOST:PORT"},
};

void PrintTo(const Broken& b, std::ostream* os) { *os << b.name; }

class CheckConfig : public ::testing::TestWithParam<Broken> {};

TEST_P(CheckConfig, RefusesTheFileNamingKeyAndLine) {
  const Broken& b = GetParam();
  const std::string path = ::testing::TempDir() + "fracpack-broken-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                           "-" + std::to_string(reinterpret_cast<uintptr_t>(&b)) + ".yaml";
  std::ofstream(path) << b.yaml;
  auto r = run_fracpack({"serve", "--config", path, "--check-config"});
  std::remove(path.c_str());
  EXPECT_EQ(r.exit_code, 1) << b.name;
  EXPECT_EQ(r.out, "") << b.name;
  EXPECT_NE(r.err.find(path + ":" + b.message), std::string::npos) << b.name << ": got: " << r.err;
  // The in-process parser says the same.
  auto parsed = parse_config(b.yaml, "f.yaml");
  ASSERT_FALSE(parsed) << b.name;
  EXPECT_NE(parsed.message().find(std::string("f.yaml:") + b.message), std::string::npos) << parsed.message();
}

std::string case_name(const ::testing::TestParamInfo<Broken>& info) {
  std::string n;
  for (const char* p = info.param.name; *p; ++p) n += std::isalnum(static_cast<unsigned char>(*p)) ? *p : '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(BrokenFiles, CheckConfig, ::testing::ValuesIn(kBroken), case_name);

TEST(CheckConfig, FlagsOverrideTheFileAndAreValidatedToo) {
  const std::string path = ::testing::TempDir() + "fracpack-flags.yaml";
  std::ofstream(path) << "policy:\n  name: magic\n";
  // The file's bad value is refused...
  EXPECT_EQ(run_fracpack({"serve", "--config", path, "--check-config"}).exit_code, 1);
  std::ofstream(path) << "policy:\n  name: fgd\nlisten: \"127.0.0.1:8888\"\nsecurity:\n  signingKey: \"" << testing::test_signing_key_path() << "\"\n";
  // ... a flag's bad value too, naming the key ...
  auto bad = run_fracpack({"serve", "--config", path, "--policy", "magic", "--check-config"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("policy.name: unknown policy \"magic\""), std::string::npos) << bad.err;
  auto bad_listen = run_fracpack({"serve", "--config", path, "--listen", "nowhere", "--check-config"});
  EXPECT_EQ(bad_listen.exit_code, 1);
  EXPECT_NE(bad_listen.err.find("listen: expected HOST:PORT"), std::string::npos) << bad_listen.err;
  // ... and a good flag wins over the file.
  auto good = run_fracpack({"serve", "--config", path, "--policy", "bestfit", "--metrics-listen", ":9090", "--check-config"});
  EXPECT_EQ(good.exit_code, 0) << good.err;
  // Unknown flags and a missing file are usage errors / failures with a message.
  auto unknown = run_fracpack({"serve", "--polcy", "fgd", "--check-config"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown flag --polcy"), std::string::npos) << unknown.err;
  auto missing = run_fracpack({"serve", "--config", path + ".absent", "--check-config"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find(path + ".absent"), std::string::npos) << missing.err;
  std::remove(path.c_str());
}

TEST(CheckConfig, TheNodeAgentTakesItsNodeFromTheFlagThenTheEnvironmentAndSpeaksFracpackOrTke) {
  const std::string path = ::testing::TempDir() + "fracpack-agent.yaml";
  std::ofstream(path) << "nodeAgent:\n  idsPerCard: 8\nsecurity:\n  verifyKeys: [\"" << testing::test_verify_key_path() << "\"]\n";
  auto nameless = run_fracpack({"node-agent", "--config", path, "--check-config"});
  EXPECT_EQ(nameless.exit_code, 1);
  EXPECT_NE(nameless.err.find("no node name: give --node-name or set NODE_NAME"), std::string::npos) << nameless.err;
  EXPECT_EQ(run_fracpack({"node-agent", "--config", path, "--node-name", "gpu-1", "--check-config"}).exit_code, 0);
  auto bad_ids = run_fracpack({"node-agent", "--node-name", "gpu-1", "--ids-per-card", "0", "--check-config"});
  EXPECT_EQ(bad_ids.exit_code, 2);
  EXPECT_NE(bad_ids.err.find("--ids-per-card: expected a whole number 1..1024"), std::string::npos) << bad_ids.err;
  // Records are served only when they verify: no key, no agent.
  auto keyless = run_fracpack({"node-agent", "--node-name", "gpu-1", "--check-config"});
  EXPECT_EQ(keyless.exit_code, 1);
  EXPECT_NE(keyless.err.find("security.verifyKeys: no public key"), std::string::npos) << keyless.err;
  EXPECT_EQ(run_fracpack({"node-agent", "--node-name", "gpu-1", "--verify-keys", testing::test_verify_key_path(), "--check-config"}).exit_code, 0);
  std::ofstream(path) << "contract:\n  profile: hami\n";
  auto hami = run_fracpack({"node-agent", "--config", path, "--node-name", "gpu-1", "--check-config"});
  EXPECT_EQ(hami.exit_code, 1);
  EXPECT_NE(hami.err.find("the node agent carries out the fracpack and tke contracts only"), std::string::npos) << hami.err;
  // GPUManager's pods are served by fracpack's agent, whose IDs are then percent of a card.
  std::ofstream(path) << "contract:\n  profile: tke\nsecurity:\n  verifyKeys: [\"" << testing::test_verify_key_path() << "\"]\n";
  EXPECT_EQ(run_fracpack({"node-agent", "--config", path, "--node-name", "gpu-1", "--check-config"}).exit_code, 0);
  auto tke_ids = run_fracpack({"node-agent", "--config", path, "--node-name", "gpu-1", "--ids-per-card", "8", "--check-config"});
  EXPECT_EQ(tke_ids.exit_code, 2);
  EXPECT_NE(tke_ids.err.find("--ids-per-card: the tke profile advertises 100 IDs a card"), std::string::npos) << tke_ids.err;
  std::remove(path.c_str());
}

// The configuration's enums are parsed once, into the enum every user
// takes: each name gives its value, and the file's spelling is exact.
TEST(ConfigEnums, EachNameParsesIntoItsEnum) {
  const std::pair<const char*, k8s::BindFenceRead> reads[] = {{"auto", k8s::BindFenceRead::kAuto},
                                                              {"consistent", k8s::BindFenceRead::kConsistent},
                                                              {"marker", k8s::BindFenceRead::kMarker},
                                                              {"resourceVersion", k8s::BindFenceRead::kResourceVersion}};
  for (const auto& [name, read] : reads) {
    auto c = parse_config(std::string("cluster:\n  bindFenceRead: ") + name + "\nsecurity:\n  records: unsigned\n", "f.yaml");
    ASSERT_TRUE(c) << name << ": " << c.message();
    EXPECT_EQ(c->cluster.bind_fence_read, read) << name;
    EXPECT_EQ(k8s::bind_fence_read_name(read), name);
  }
  EXPECT_EQ(Config{}.cluster.bind_fence_read, k8s::BindFenceRead::kAuto) << "the default";
  auto c = parse_config("contract:\n  profile: gpushare\nnodeAgent:\n  withoutDevices: idle\nsecurity:\n  records: unsigned\n", "f.yaml");
  ASSERT_TRUE(c) << c.message();
  EXPECT_EQ(c->contract.profile, k8s::Profile::kGpushare);
  EXPECT_EQ(c->node_agent.without_devices, WithoutDevices::kIdle);
  EXPECT_EQ(c->security.records, RecordSigning::kUnsigned);
  EXPECT_EQ(Config{}.log.level, LogLevel::kInfo) << "the default";
  EXPECT_EQ(Config{}.log.format, LogFormat::kJson) << "the default";
  auto log = parse_config("log:\n  level: debug\n  format: logfmt\nsecurity:\n  records: unsigned\n", "f.yaml");
  ASSERT_TRUE(log) << log.message();
  EXPECT_EQ(log->log.level, LogLevel::kDebug);
  EXPECT_EQ(log->log.format, LogFormat::kLogfmt);
  for (const char* bad : {"Auto", "\"auto \"", "resourceversion", "\"\""}) {
    auto refused = parse_config(std::string("cluster:\n  bindFenceRead: ") + bad + "\n", "f.yaml");
    ASSERT_FALSE(refused) << bad;
    EXPECT_NE(refused.message().find("f.yaml:2: cluster.bindFenceRead: expected auto, consistent, marker or resourceVersion"),
              std::string::npos)
        << refused.message();
  }
}

// The flags take the same names through the same parsers.
TEST(CheckConfig, EnumFlagsAreParsedByTheirOneParser) {
  auto profile = run_fracpack({"serve", "--profile", "nvidia", "--check-config"});
  EXPECT_EQ(profile.exit_code, 2);
  EXPECT_NE(profile.err.find("--profile: unknown profile \"nvidia\" (known: fracpack, hami, gpushare, tke)"), std::string::npos) << profile.err;
  auto idle = run_fracpack({"node-agent", "--node-name", "gpu-1", "--without-devices", "sleep", "--check-config"});
  EXPECT_EQ(idle.exit_code, 2);
  EXPECT_NE(idle.err.find("--without-devices: expected fail or idle, got \"sleep\""), std::string::npos) << idle.err;
  // log.level and log.format: refused by name before anything else is checked.
  for (const char* command : {"serve", "node-agent"}) {
    auto level = run_fracpack({command, "--log-level", "loud", "--check-config"});
    EXPECT_EQ(level.exit_code, 2) << command;
    EXPECT_NE(level.err.find("--log-level: expected debug, info, warn or error, got \"loud\""), std::string::npos) << command << ": " << level.err;
    auto format = run_fracpack({command, "--log-format", "xml", "--check-config"});
    EXPECT_EQ(format.exit_code, 2) << command;
    EXPECT_NE(format.err.find("--log-format: expected json or logfmt, got \"xml\""), std::string::npos) << command << ": " << format.err;
  }
}

TEST(Cli, EveryCommandAnswersHelp) {
  for (const std::vector<std::string>& cmd : std::vector<std::vector<std::string>>{
           {"--help"}, {"serve", "--help"}, {"inspect", "--help"}, {"replay", "openb", "--help"}, {"replay", "snapshot", "--help"},
           {"convert", "openb", "--help"}, {"node-agent", "--help"}}) {
    auto r = run_fracpack(cmd);
    std::string joined;
    for (const auto& a : cmd) joined += a + " ";
    EXPECT_EQ(r.exit_code, 0) << joined;
    EXPECT_EQ(r.out.rfind("usage: fracpack", 0), 0u) << joined << ": " << r.out;
  }
  EXPECT_EQ(run_fracpack({}).exit_code, 2);
  EXPECT_EQ(run_fracpack({"frobnicate"}).exit_code, 2);
}

}  // namespace
}  // namespace fracpack::config::config_test
