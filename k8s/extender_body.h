// How an extender request body is parsed, for the decoders of the extender's
// wire types (extender_args.cc, extender_binding.cc, extender_preemption.cc)
// and nothing else: like k8s/json.h, which it includes, it keeps simdjson out
// of the headers callers see.
//
// The whole body must be JSON, not only the fields read: the on-demand
// decoder skips the others unchecked ("Junk":NaN would pass), and a full Node
// that passes is echoed back as it came. So a body is validated first
// (simdjson's DOM parser when small, check_json_text when large), then walked
// on demand, in place when the transport padded it (PaddedText), else from a
// padded copy. Keys match as Go's encoding/json matches them.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "common/json/check.h"
#include "common/result.h"
#include "k8s/json.h"
#include "k8s/objects.h"

namespace fracpack::k8s::extender_body {

namespace od = json::od;

// Go's encoding/json matches keys without regard to ASCII case.
inline bool same_key(std::string_view key, std::string_view want) {
  if (key.size() != want.size()) return false;
  for (size_t i = 0; i < key.size(); ++i) {
    char a = key[i], b = want[i];
    if (a >= 'A' && a <= 'Z') a = static_cast<char>(a - 'A' + 'a');
    if (b >= 'A' && b <= 'Z') b = static_cast<char>(b - 'A' + 'a');
    if (a != b) return false;
  }
  return true;
}

// Which of several spellings of a key set a field: an exact match is never
// overridden by a case-insensitive one.
struct KeyMatch {
  bool set = false;
  bool exact = false;
  // True when this occurrence of the key should be taken.
  bool take(std::string_view key, std::string_view want) {
    if (!same_key(key, want)) return false;
    const bool is_exact = key == want;
    if (set && exact && !is_exact) return false;
    set = true;
    exact = is_exact;
    return true;
  }
};

// True (and the null stepped over) when `v` is null; a broken value sets
// `status`.
inline bool is_null(od::value& v, Status& status, std::string_view path) {
  od::json_type t;
  if (auto e = v.type().get(t)) {
    status = json::syntax_error(e, path);
    return false;
  }
  if (t != od::json_type::null) return false;
  json::consume_null(v);
  return true;
}

inline std::string get_plain_string(od::value v, std::string_view path, Status& st) {
  std::string s;
  st = json::get_string(v, path, s);
  return s;
}

// A Pod field (null leaves `out` empty), decoded with the contract's
// selection and checked against Kubernetes' size limits.
Status decode_pod_value(od::value v, std::string_view path, const Selection& sel, std::optional<Pod>& out);

// Where positions in the parsed text are in `body`: the same, except past
// a cut (an array taken out of a large body; its elements' extents are
// known from the check).
struct TextMap {
  const char* base = nullptr;  // the parsed text's start
  size_t cut_at = SIZE_MAX;    // parsed positions from here on are `cut_shift` further on in `body`
  size_t cut_shift = 0;
  bool cut() const { return cut_at != SIZE_MAX; }
  size_t operator()(const char* p) const {
    const auto off = static_cast<size_t>(p - base);
    return off < cut_at ? off : off + cut_shift;
  }
};

// An array of `body` the parsers see as `[]`: [at, at + size) when size >= 2.
struct LeftOut {
  size_t at = 0;
  size_t size = 0;
};

// The text the on-demand parser walks: `body` validated, in place or copied
// with padding, perhaps without an array (see parse_body).
struct ValidatedText {
  std::optional<simdjson::padded_string> copy;
  simdjson::padded_string_view padded;
  TextMap map;  // positions in `padded` to positions in `body`
};

// Validates `body` and makes the text to parse (parse_body's first half).
// `capacity`: readable bytes from body.data() on (0: unpadded).
Status validate_body(std::string_view body, size_t capacity, LeftOut blank, WatchedArray* cut, ValidatedText& out);

// This thread's on-demand parser, given back its memory on leaving when a
// very large body made it grow.
class ParserLease {
 public:
  ParserLease() : parser_(json::thread_parser()) {}
  ~ParserLease();
  ParserLease(const ParserLease&) = delete;
  ParserLease& operator=(const ParserLease&) = delete;
  simdjson::ondemand::parser& parser() { return parser_; }

 private:
  simdjson::ondemand::parser& parser_;
};

// Parses `body` with this thread's parser, giving fn(root, map) where `map`
// takes positions in the parsed text (a padded copy, perhaps) back to `body`.
// `blank`: a known array of the body that is valid JSON already (a NodeNames
// list seen before), left out of what is validated and parsed. With `cut`, a
// large body's array at root[cut->outer][cut->inner] is found while checking
// the body and left out of the text parsed (it reads `[]` there): the
// on-demand parser then indexes a few kilobytes instead of every byte of a
// NodeList.
template <class Fn>
Status parse_body(std::string_view body, size_t capacity, Fn fn, LeftOut blank = {}, WatchedArray* cut = nullptr) {
  ParserLease lease;  // (first: it gives memory back on every way out)
  ValidatedText text;
  if (Status s = validate_body(body, capacity, blank, cut, text); !s.ok()) return s;
  constexpr std::string_view kWhere = "the request body";
  od::document doc;
  if (auto e = lease.parser().iterate(text.padded).get(doc)) return json::syntax_error(e, kWhere);
  od::value root;
  if (auto e = doc.get_value().get(root)) return json::syntax_error(e, kWhere);
  if (Status s = fn(root, static_cast<const TextMap&>(text.map)); !s.ok()) return s;
  if (!doc.current_location().error()) return Error{"invalid JSON: trailing content after the value"};
  return Status::Ok();
}

}  // namespace fracpack::k8s::extender_body
