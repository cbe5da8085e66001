// A strict check of JSON's grammar (RFC 8259) over a whole text, for request
// bodies too large for simdjson's DOM parser to validate (it holds about 14
// bytes per byte of input). The on-demand decoder reads only the fields it
// needs and skips the rest unchecked, yet the whole body must be JSON (a
// full Node that passes is echoed back as it came): this walks every byte
// once, strings 32 bytes at a time (AVX2; else eight), and allocates only its
// nesting stack (and, when watching, one record per element watched).
//
// What it checks: values, objects (string keys, ':' and ','), arrays,
// strings (escapes, surrogates only in pairs as simdjson wants them, no raw
// control characters), numbers (the grammar, not the magnitude: simdjson
// also refuses integers past 64 bits and doubles past their range, which Go
// accepts in a field it skips and which Go never writes), the literals, and
// nothing but whitespace after the value, nesting as deep as simdjson's
// (its limit counts non-empty arrays and objects). UTF-8 it leaves to the
// caller: simdjson's stage 1 checks it in any text it parses, and a caller
// that leaves part of a text out of the parse checks that part itself
// (simdjson::validate_utf8).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace fracpack {

// simdjson's default depth: a document holds at most kMaxJsonDepth - 1
// non-empty arrays and objects inside one another.
inline constexpr size_t kMaxJsonDepth = 1024;

// One array the check also finds, for free, on its way: root[outer][inner]
// (keys spelled exactly as given; one spelled with escapes is flagged as
// ambiguous, not unescaped), with each element's extent and, in an object
// element, the string at [field_outer][field_inner] as a decoder reads it
// (the last of repeated keys wins; errors stick). So a caller can parse the
// rest of a large body without the array: a full NodeList's items are
// 99.9 % of a filter request, and their extents and names are all it needs
// of them. Past max_elements the watch stops (too_many), the check goes on.
struct WatchedElement {
  size_t begin = 0, end = 0;  // the element's text
  enum class Field : uint8_t { kAbsent, kString, kNull } field = Field::kAbsent;
  size_t field_begin = 0, field_end = 0;  // kString: its text, quotes included
  bool field_escaped = false;             // kString: it has an escape
  bool field_not_string = false;          // some [field_outer][field_inner] was neither a string nor null
  bool parent_not_object = false;         // some [field_outer] was neither an object nor null
  bool ambiguous = false;                 // a key in it or its [field_outer] has escapes: not watched
};
struct WatchedArray {
  std::string_view outer, inner;              // set by the caller
  std::string_view field_outer, field_inner;  // set by the caller
  int seen = 0;                               // how many such arrays the text has
  size_t begin = 0, end = 0;                  // the last one: '[' to past ']'
  std::vector<WatchedElement> elements;       // its elements
  bool ambiguous = false;                     // a key at the root or in root[outer] has escapes: not watched
  size_t max_elements = SIZE_MAX;             // set by the caller: the most elements recorded
  bool too_many = false;                      // more than max_elements: the watch stopped
};

// OK, or "invalid JSON in <where> at byte N: <what was expected>".
Status check_json_text(std::string_view text, std::string_view where, WatchedArray* watch = nullptr);

}  // namespace fracpack
