// Incremental splitting of JSON byte streams, for bodies too large or too
// long-lived to hold whole: a watch stream is a sequence of JSON objects
// (one per event, boundaries unrelated to chunks or reads); a LIST of 150 000
// pods is a gigabyte whose items are best decoded one at a time. Both feed
// bytes as they arrive and get complete values back, never waiting for the
// end of the body.
//
// Finding where a value ends means tracking strings (a '}' inside "..." is
// text) and escapes (\" does not close a string, \\" does). JsonScanner
// does it 64 bytes at a time with the bit tricks of simdjson's stage 1
// (escape runs by carry propagation, string regions by carry-less prefix
// XOR), so splitting costs a fraction of decoding.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace fracpack {

// Stepping through JSON text by hand, where a parser would cost more than
// the read (a watch event's two fields, a checked body's node names). The
// one scanner of both: it checks bounds, not grammar (check_json_text and
// the parsers do that).
inline bool json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
inline size_t skip_space(std::string_view t, size_t i) {
  while (i < t.size() && json_space(t[i])) ++i;
  return i;
}
// t[i] is a string's opening quote: the index past its closing one (npos
// when it does not end); `escaped` says whether it holds an escape.
size_t string_end(std::string_view t, size_t i, bool& escaped);
// t[i] starts a value: the index past it (npos when an object, array or
// string does not end). Objects and arrays go 64 bytes at a time
// (JsonScanner); a number or literal ends at the next ',', '}', ']' or space.
size_t value_end(std::string_view t, size_t i);
// The text between a JSON string's quotes, its escapes decoded into `out`
// (UTF-8); false when an escape is malformed or a surrogate unpaired (what
// check_json_text refuses). The project's one string unescaper, for
// strings read by hand (the extender's node names).
bool unescape_json_string(std::string_view in, std::string& out);

// Tracks nesting depth and string state across a JSON text fed in pieces.
class JsonScanner {
 public:
  // Consumes one byte; returns false on a structural error (a closing
  // bracket without an opening one).
  bool step(char c);
  // Consumes bytes of `s` until a closing bracket outside strings brings the
  // depth down to `target` (which must be below depth()). Returns how many
  // bytes were consumed, that bracket included; s.size() if the depth stays
  // above `target` (the state then carries into the next call).
  size_t skip_to_depth(std::string_view s, int target);
  // The same, one byte at a time (the reference for tests, and the path for
  // a tail shorter than a block).
  size_t skip_to_depth_scalar(std::string_view s, int target);

  int depth() const { return depth_; }
  bool in_string() const { return in_string_; }

 private:
  int depth_ = 0;
  bool in_string_ = false;
  bool escape_ = false;  // inside a string, the previous byte was an unpaired backslash
};

// Splits a stream of concatenated top-level JSON objects ("{...}\n{...}").
class ObjectSplitter {
 public:
  static constexpr size_t kMaxObject = 64 << 20;  // a watch event larger than this is refused

  // Calls `on_object` with each complete top-level object. Whitespace
  // between objects is skipped; anything else is an error.
  Status feed(std::string_view data, const std::function<Status(std::string_view)>& on_object);
  // True when no partial object is buffered (a clean end of stream).
  bool idle() const { return scanner_.depth() == 0 && partial_.empty(); }

 private:
  JsonScanner scanner_;
  std::string partial_;  // bytes of an object that spans feeds
};

// Splits a Kubernetes list body ({"kind":..., "metadata":{...}, "items":[...]})
// into its items, and keeps the raw text of the top-level "metadata" value.
class ListSplitter {
 public:
  static constexpr size_t kMaxItem = 64 << 20;   // one object larger than this is refused
  static constexpr size_t kMaxMetadata = 1 << 20;

  Status feed(std::string_view data, const std::function<Status(std::string_view)>& on_item);
  // The text of the top-level "metadata" value ("" if none).
  const std::string& metadata() const { return metadata_; }
  // After the whole body: an error if it ended early.
  Status finish() const;

 private:
  JsonScanner scanner_;
  bool started_ = false;      // the root object opened
  bool done_ = false;         // the root object closed
  bool expect_key_ = false;   // at depth 1, the next string is a key
  bool reading_key_ = false;
  std::string key_;           // the current top-level key
  int value_kind_ = 0;        // 0 none, 1 metadata (captured), 2 items array, 3 other (skipped)
  bool value_started_ = false;
  bool item_open_ = false;    // inside an element of "items"
  std::string buffer_;        // bytes of the value or item spanning feeds
  std::string metadata_;
};

}  // namespace fracpack
