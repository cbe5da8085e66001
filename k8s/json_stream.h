// Incremental splitting of JSON byte streams, for bodies too large or too
// long-lived to hold whole: a watch stream is a sequence of JSON objects
// (one per event, boundaries unrelated to chunks or reads); a LIST of 150 000
// pods is a gigabyte whose items are best decoded one at a time. Both feed
// bytes as they arrive and get complete values back, never waiting for the
// end of the body.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "scheduling/result.h"

namespace fracpack::k8s {

// Scans JSON text byte by byte, tracking strings and nesting. Shared by the
// two splitters below.
class JsonScanner {
 public:
  // Depth after consuming `c` (0 outside any value). Returns false on a
  // structural error (a closing bracket without an opening one).
  bool step(char c);
  int depth() const { return depth_; }
  bool in_string() const { return in_string_; }
  // Skips over string content quickly: returns how many bytes of `s` (from
  // its start, which must be inside a string) can be consumed without
  // changing state other than staying inside the string.
  size_t skip_string_run(std::string_view s) const;

 private:
  int depth_ = 0;
  bool in_string_ = false;
  bool escape_ = false;
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

}  // namespace fracpack::k8s
