// Reading YAML strictly, as the configuration wants it: a mapping's keys are
// checked off as they are read and any key left over is an error; a value of
// the wrong type or out of its range is an error; every error names the
// file, the line and the dotted key ("fracpack.yaml:7: limits.maxConnections:
// ..."). config.cc reads its sections with these.
#pragma once

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace fracpack::config::yaml {

using std::chrono::milliseconds;

// An error at a node: "<source>:<line>: <key>: <message>".
struct Where {
  const std::string& source;
  std::string key;
  int line;
  Error error(const std::string& message) const {
    return Error{source + ":" + std::to_string(line + 1) + ": " + key + ": " + message};
  }
};

// Reads one present, non-null value into its target.
using FieldReader = std::function<Status(const YAML::Node&, const Where&)>;

// A mapping whose keys are checked off as they are read; what is left at
// the end is unknown.
class Section {
 public:
  Section(const YAML::Node& node, std::string path, const std::string& source, std::vector<std::string>* keys)
      : node_(node), path_(std::move(path)), source_(source), keys_(keys) {}

  Status check_is_map() const {
    if (node_.IsNull() || node_.IsMap()) return Status::Ok();
    return Where{source_, path_.empty() ? "(top level)" : path_, node_.Mark().line}.error("expected a mapping of keys");
  }

  // Calls read(value, where) when the key is present and not null.
  Status field(const std::string& key, const FieldReader& read) {
    known_[key] = true;
    if (keys_) keys_->push_back(full(key));
    if (!node_.IsMap()) return Status::Ok();
    const YAML::Node& map = node_;  // const: reading never inserts
    const YAML::Node v = map[key];
    if (!v.IsDefined() || v.IsNull()) return Status::Ok();
    return read(v, Where{source_, full(key), v.Mark().line});
  }

  Section sub(const std::string& key) {
    known_[key] = true;
    const YAML::Node& map = node_;
    YAML::Node v = node_.IsMap() ? map[key] : YAML::Node();
    return Section(v.IsDefined() ? v : YAML::Node(), full(key), source_, keys_);
  }

  Status finish() const {
    if (!node_.IsMap()) return Status::Ok();
    std::map<std::string, int> seen;
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      const std::string key = it->first.Scalar();
      // yaml-cpp keeps the first of two equal keys; Kubernetes' strict
      // decoding calls that an error, and so do we.
      if (seen.count(key)) {
        return Where{source_, full(key), it->first.Mark().line}.error("duplicate key (first on line " + std::to_string(seen[key] + 1) + ")");
      }
      seen[key] = it->first.Mark().line;
      if (!known_.count(key)) {
        std::string known;
        for (const auto& [k, unused] : known_) known += (known.empty() ? "" : ", ") + k;
        return Where{source_, full(key), it->first.Mark().line}.error("unknown key (known here: " + known + ")");
      }
    }
    return Status::Ok();
  }

 private:
  std::string full(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  YAML::Node node_;
  std::string path_;
  const std::string& source_;
  std::vector<std::string>* keys_;  // every leaf key read, when asked (config_keys)
  std::map<std::string, bool> known_;
};

// The value as a scalar's text; `what` names the expected kind in the error.
Result<std::string> scalar(const YAML::Node& v, const Where& w, const char* what);

FieldReader string_field(std::string& out);
// A YAML sequence of strings (or one string, a list of one); no empty strings.
FieldReader string_list_field(std::vector<std::string>& out);
FieldReader int_field(int64_t& out, int64_t min, int64_t max);
FieldReader double_field(double& out, double min, double max);
FieldReader bool_field(bool& out);
// "10s", "1m30s" (parse_duration).
FieldReader duration_field(milliseconds& out, milliseconds min, milliseconds max);
// "64Mi", "1000000" (a Kubernetes quantity of bytes).
FieldReader bytes_field(int64_t& out, int64_t min, int64_t max);

// A name of an enum, read through the one parser of its names (whose error
// says what it expected and got).
template <class E>
FieldReader enum_field(E& out, Result<E> (*parse)(std::string_view)) {
  return [&out, parse](const YAML::Node& v, const Where& w) -> Status {
    auto s = scalar(v, w, "a name");
    if (!s) return Error{s.message()};
    auto e = parse(*s);
    if (!e) return w.error(e.message());
    out = *e;
    return Status::Ok();
  };
}

// Collects the first error of a sequence of reads.
struct Errors {
  Status first = Status::Ok();
  void operator+=(Status s) {
    if (first.ok() && !s.ok()) first = std::move(s);
  }
};

// The line of a dotted key ("tls.certFile") in the document, or of its
// deepest present parent; -1 when none is present.
int line_of(const YAML::Node& root, const std::string& dotted);

}  // namespace fracpack::config::yaml
