// JSON text a parser may read in place. simdjson reads up to 64 bytes past
// the end of what it parses (SIMDJSON_PADDING): PaddedString owns text
// with kPadding zero bytes always after it, and PaddedText is a view of
// such text, made only by a PaddedString, so the padding is a fact of the
// type, never a guess. The HTTP transport reads every request body into a
// PaddedString (server/padded_body.h, Beast's Body concept): a 40 MB
// NodeList is then parsed without a copy. There is no conversion from a
// std::string: text that is not a PaddedString's is unpadded, and a parser
// given it as a std::string_view copies it into a padded buffer first.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

namespace fracpack {

// A view of text followed by at least kPadding readable bytes.
class PaddedText {
 public:
  static constexpr size_t kPadding = 64;

  std::string_view text() const { return text_; }
  const char* data() const { return text_.data(); }
  size_t size() const { return text_.size(); }
  // The readable bytes from data() on: the text and its padding.
  size_t capacity() const { return text_.size() + kPadding; }

 private:
  friend class PaddedString;
  explicit PaddedText(std::string_view text) : text_(text) {}
  std::string_view text_;
};

// Text that owns its padding: kPadding '\0' bytes always follow it, however
// it was made, grown or shrunk.
class PaddedString {
 public:
  static constexpr size_t kPadding = PaddedText::kPadding;

  PaddedString() = default;  // empty (its padding is a shared block of zeros)
  explicit PaddedString(std::string_view text) { append(text.data(), text.size()); }
  // (A moved-from string is empty, with its padding.)
  PaddedString(PaddedString&& other) noexcept : buffer_(std::exchange(other.buffer_, std::string())) {}
  PaddedString& operator=(PaddedString&& other) noexcept {
    buffer_ = std::exchange(other.buffer_, std::string());
    return *this;
  }
  PaddedString(const PaddedString&) = default;
  PaddedString& operator=(const PaddedString&) = default;

  PaddedText padded() const { return PaddedText(text()); }
  std::string_view text() const { return buffer_.empty() ? std::string_view(kZeros, 0) : std::string_view(buffer_.data(), size()); }
  const char* data() const { return text().data(); }
  // Writable text (a reader fills what resize() made room for).
  char* data() { return buffer_.empty() ? nullptr : buffer_.data(); }
  size_t size() const { return buffer_.empty() ? 0 : buffer_.size() - kPadding; }
  bool empty() const { return size() == 0; }

  // Room for `n` bytes of text (and the padding) without growing again.
  void reserve(size_t n) { buffer_.reserve(n + kPadding); }
  // `n` bytes of text: what it had, then '\0' bytes.
  void resize(size_t n) {
    buffer_.resize(n + kPadding);
    std::memset(buffer_.data() + n, 0, kPadding);  // (text bytes a shrink turned into padding)
  }
  void append(const char* text, size_t n) {
    if (buffer_.empty()) buffer_.assign(kPadding, '\0');
    buffer_.insert(buffer_.size() - kPadding, text, n);  // (the padding moves along)
  }
  void clear() { buffer_.clear(); }

 private:
  static constexpr char kZeros[kPadding] = {};
  std::string buffer_;  // empty, or the text then kPadding '\0' bytes
};

}  // namespace fracpack
