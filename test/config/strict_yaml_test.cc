// The strict YAML reader (config/strict_yaml.h): each field reader takes
// only its kind of value within its range, a section refuses keys it does
// not read and keys given twice, and every error names the file, the line
// and the dotted key.
#include "config/strict_yaml.h"

#include <gtest/gtest.h>

namespace fracpack::config::yaml::strict_yaml_test {
namespace {

const std::string kSource = "f.yaml";

// Reads `text` as a section with one field `key` read by `read`.
Status read_one(const std::string& text, const std::string& key, const FieldReader& read) {
  const YAML::Node root = YAML::Load(text);
  Section top(root, "", kSource, nullptr);
  Errors err;
  err += top.check_is_map();
  err += top.field(key, read);
  err += top.finish();
  return err.first;
}

TEST(Section, ReadsKnownKeysAndRefusesUnknownOnesNamingTheLine) {
  std::string listen;
  int64_t threads = 0;
  const YAML::Node root = YAML::Load("listen: \":1\"\nthreads: 4\nlisen: x\n");
  Section top(root, "", kSource, nullptr);
  EXPECT_TRUE(top.field("listen", string_field(listen)).ok());
  EXPECT_TRUE(top.field("threads", int_field(threads, 1, 8)).ok());
  EXPECT_EQ(listen, ":1");
  EXPECT_EQ(threads, 4);
  const Status left = top.finish();
  ASSERT_FALSE(left.ok());
  EXPECT_EQ(left.message(), "f.yaml:3: lisen: unknown key (known here: listen, threads)");
}

TEST(Section, NestedSectionsNameTheirDottedPathAndCollectKeys) {
  std::vector<std::string> keys;
  bool events = true;
  const YAML::Node root = YAML::Load("cluster:\n  events: false\n  extra: 1\n");
  Section top(root, "", kSource, &keys);
  Section cluster = top.sub("cluster");
  EXPECT_TRUE(cluster.field("events", bool_field(events)).ok());
  EXPECT_FALSE(events);
  std::string unread;
  EXPECT_TRUE(cluster.sub("tls").field("certFile", string_field(unread)).ok()) << "an absent section reads nothing";
  EXPECT_EQ(keys, (std::vector<std::string>{"cluster.events", "cluster.tls.certFile"}));
  const Status left = cluster.finish();
  ASSERT_FALSE(left.ok());
  EXPECT_EQ(left.message().rfind("f.yaml:3: cluster.extra: unknown key", 0), 0u) << left.message();
  EXPECT_TRUE(top.finish().ok());
}

TEST(Section, ADuplicateKeyIsAnError) {
  std::string level;
  const Status s = read_one("level: info\nlevel: debug\n", "level", string_field(level));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "f.yaml:2: level: duplicate key (first on line 1)");
}

TEST(Section, OnlyAMappingOrNothingIsASection) {
  EXPECT_TRUE(Section(YAML::Node(), "", kSource, nullptr).check_is_map().ok()) << "an empty file";
  const Status list = Section(YAML::Load("- a\n- b\n"), "", kSource, nullptr).check_is_map();
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.message(), "f.yaml:1: (top level): expected a mapping of keys");
  const YAML::Node root = YAML::Load("tls: [a]\n");
  Section top(root, "", kSource, nullptr);
  const Status sub = top.sub("tls").check_is_map();
  ASSERT_FALSE(sub.ok());
  EXPECT_NE(sub.message().find("tls: expected a mapping of keys"), std::string::npos) << sub.message();
}

TEST(Section, ANullValueLeavesTheDefault) {
  int64_t n = 7;
  EXPECT_TRUE(read_one("n: ~\n", "n", int_field(n, 0, 10)).ok());
  EXPECT_EQ(n, 7);
}

TEST(FieldReaders, IntegersWithinTheirRange) {
  int64_t n = 0;
  EXPECT_TRUE(read_one("n: 10\n", "n", int_field(n, 0, 10)).ok());
  EXPECT_EQ(n, 10);
  EXPECT_EQ(read_one("n: 11\n", "n", int_field(n, 0, 10)).message(), "f.yaml:1: n: 11 is out of range [0, 10]");
  EXPECT_EQ(read_one("n: 2.5\n", "n", int_field(n, 0, 10)).message(), "f.yaml:1: n: expected an integer, got \"2.5\"");
  EXPECT_EQ(read_one("n: [1]\n", "n", int_field(n, 0, 10)).message(), "f.yaml:1: n: expected an integer");
  EXPECT_EQ(n, 10) << "untouched by a refused value";
}

TEST(FieldReaders, NumbersBooleansAndStrings) {
  double x = 0;
  EXPECT_TRUE(read_one("x: 0.5\n", "x", double_field(x, 0, 1)).ok());
  EXPECT_EQ(x, 0.5);
  EXPECT_EQ(read_one("x: nan\n", "x", double_field(x, 0, 1)).message(), "f.yaml:1: x: expected a number, got \"nan\"");
  EXPECT_NE(read_one("x: 2\n", "x", double_field(x, 0, 1)).message().find("2 is out of range"), std::string::npos);
  bool b = false;
  EXPECT_TRUE(read_one("b: true\n", "b", bool_field(b)).ok());
  EXPECT_TRUE(b);
  EXPECT_EQ(read_one("b: yes\n", "b", bool_field(b)).message(), "f.yaml:1: b: expected true or false, got \"yes\"");
  std::string s;
  EXPECT_EQ(read_one("s: {a: 1}\n", "s", string_field(s)).message(), "f.yaml:1: s: expected a string");
}

TEST(FieldReaders, AStringListTakesOneStringOrASequenceWithoutEmpties) {
  std::vector<std::string> names;
  EXPECT_TRUE(read_one("n: a\n", "n", string_list_field(names)).ok());
  EXPECT_EQ(names, std::vector<std::string>{"a"});
  EXPECT_TRUE(read_one("n: [a, b]\n", "n", string_list_field(names)).ok());
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(read_one("n: [a, \"\"]\n", "n", string_list_field(names)).message(), "f.yaml:1: n: an empty string in the list");
  EXPECT_EQ(read_one("n: [[a]]\n", "n", string_list_field(names)).message(), "f.yaml:1: n: expected a list of strings");
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b"}));
}

TEST(FieldReaders, DurationsAndSizesWithinTheirRange) {
  milliseconds d{0};
  EXPECT_TRUE(read_one("d: 1m30s\n", "d", duration_field(d, milliseconds(0), milliseconds(100000))).ok());
  EXPECT_EQ(d.count(), 90000);
  EXPECT_EQ(read_one("d: 2m\n", "d", duration_field(d, milliseconds(0), milliseconds(100000))).message(),
            "f.yaml:1: d: 2m is out of range [0 ms, 100000 ms]");
  EXPECT_NE(read_one("d: 5 parsecs\n", "d", duration_field(d, milliseconds(0), milliseconds(100000))).message().find("unknown unit"),
            std::string::npos);
  int64_t bytes = 0;
  EXPECT_TRUE(read_one("b: 64Mi\n", "b", bytes_field(bytes, 0, int64_t{1} << 40)).ok());
  EXPECT_EQ(bytes, int64_t{64} << 20);
  EXPECT_EQ(read_one("b: -1Mi\n", "b", bytes_field(bytes, 0, int64_t{1} << 40)).message(), "f.yaml:1: b: \"-1Mi\" is not a size in bytes");
  EXPECT_NE(read_one("b: 12Q\n", "b", bytes_field(bytes, 0, int64_t{1} << 40)).message().find("expected a size like 64Mi"), std::string::npos);
  EXPECT_NE(read_one("b: 10\n", "b", bytes_field(bytes, 100, 1000)).message().find("10 is out of range [100, 1000] bytes"), std::string::npos);
}

enum class Colour { kRed, kBlue };
Result<Colour> parse_colour(std::string_view name) {
  if (name == "red") return Colour::kRed;
  if (name == "blue") return Colour::kBlue;
  return Error{"expected red or blue, got \"" + std::string(name) + "\""};
}

TEST(FieldReaders, AnEnumIsReadThroughItsParser) {
  Colour c = Colour::kRed;
  EXPECT_TRUE(read_one("c: blue\n", "c", enum_field(c, &parse_colour)).ok());
  EXPECT_EQ(c, Colour::kBlue);
  EXPECT_EQ(read_one("\nc: green\n", "c", enum_field(c, &parse_colour)).message(), "f.yaml:2: c: expected red or blue, got \"green\"");
  EXPECT_EQ(read_one("c: [red]\n", "c", enum_field(c, &parse_colour)).message(), "f.yaml:1: c: expected a name");
  EXPECT_EQ(c, Colour::kBlue);
}

TEST(Errors, KeepsTheFirst) {
  Errors err;
  err += Status::Ok();
  err += Error{"first"};
  err += Error{"second"};
  ASSERT_FALSE(err.first.ok());
  EXPECT_EQ(err.first.message(), "first");
}

// Asked again and again of one document: line_of walked it by assigning
// to a Node that shared the root's data, which overwrote the root (yaml-cpp
// assigns through the reference), so every later call answered -1.
TEST(LineOf, TheKeysLineOrItsDeepestPresentParents) {
  const YAML::Node root = YAML::Load("a: 1\ntls:\n  certFile: x\n  keyFile: y\n");
  EXPECT_EQ(line_of(root, "a"), 0);
  EXPECT_EQ(line_of(root, "tls.keyFile"), 3);
  EXPECT_EQ(line_of(root, "tls.clientCaFile"), 1) << "its parent's";
  EXPECT_EQ(line_of(root, "nothing.here"), -1);
  EXPECT_EQ(root["a"].as<int>(), 1) << "the document is unchanged";
  EXPECT_EQ(line_of(root, "tls.certFile"), 2);
}

}  // namespace
}  // namespace fracpack::config::yaml::strict_yaml_test
