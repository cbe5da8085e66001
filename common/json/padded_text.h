// JSON text a parser may read in place: its buffer holds at least kPadding
// readable bytes past the text's end (simdjson reads up to 64 bytes past
// the end of what it parses, SIMDJSON_PADDING). The HTTP transport makes
// one of every request body it reads, reserving the padding as it reads
// (HttpRequest::padded_body, server/http_server.h): a 40 MB NodeList is
// then parsed without a copy. Any other text is unpadded, and a parser
// copies it into a padded buffer first.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace fracpack {

class PaddedText {
 public:
  static constexpr size_t kPadding = 64;

  // Unpadded text (a parser copies it).
  PaddedText(std::string_view text) : text_(text) {}             // NOLINT(google-explicit-constructor)
  PaddedText(const std::string& text) : text_(text) {}           // NOLINT(google-explicit-constructor)
  PaddedText(const char* text) : text_(text) {}                  // NOLINT(google-explicit-constructor)
  // `buffer`'s text, padded when its capacity leaves kPadding bytes past
  // its end (the bytes there are the buffer's own, readable, never read as
  // text).
  static PaddedText of(const std::string& buffer) {
    PaddedText t{std::string_view(buffer)};
    if (buffer.capacity() >= buffer.size() + kPadding) t.capacity_ = buffer.capacity();
    return t;
  }

  std::string_view text() const { return text_; }
  const char* data() const { return text_.data(); }
  size_t size() const { return text_.size(); }
  bool padded() const { return capacity_ != 0; }
  // The readable bytes from data() on (0: unpadded).
  size_t capacity() const { return capacity_; }

 private:
  std::string_view text_;
  size_t capacity_ = 0;
};

}  // namespace fracpack
