#include "k8s/json_stream.h"

#include <cstring>

namespace fracpack::k8s {

bool JsonScanner::step(char c) {
  if (in_string_) {
    if (escape_) {
      escape_ = false;
    } else if (c == '\\') {
      escape_ = true;
    } else if (c == '"') {
      in_string_ = false;
    }
    return true;
  }
  switch (c) {
    case '"':
      in_string_ = true;
      break;
    case '{':
    case '[':
      ++depth_;
      break;
    case '}':
    case ']':
      if (--depth_ < 0) return false;
      break;
    default:
      break;
  }
  return true;
}

size_t JsonScanner::skip_string_run(std::string_view s) const {
  if (!in_string_ || escape_) return 0;
  // Everything up to the next quote or backslash stays inside the string.
  const char* p = s.data();
  const char* end = p + s.size();
  const char* q = static_cast<const char*>(std::memchr(p, '"', s.size()));
  const char* stop = q != nullptr ? q : end;
  const char* b = static_cast<const char*>(std::memchr(p, '\\', static_cast<size_t>(stop - p)));
  if (b != nullptr) stop = b;
  return static_cast<size_t>(stop - p);
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

}  // namespace

Status ObjectSplitter::feed(std::string_view data, const std::function<Status(std::string_view)>& on_object) {
  size_t start = partial_.empty() && scanner_.depth() == 0 ? std::string_view::npos : 0;
  size_t i = 0;
  while (i < data.size()) {
    if (scanner_.in_string()) {
      const size_t run = scanner_.skip_string_run(data.substr(i));
      if (run > 0) {
        i += run;
        continue;
      }
    }
    const char c = data[i];
    if (scanner_.depth() == 0 && !scanner_.in_string()) {
      if (is_space(c)) {
        ++i;
        continue;
      }
      if (c != '{') return Error{std::string("watch stream: expected '{' between events, got '") + c + "'"};
      start = i;
    }
    if (!scanner_.step(c)) return Error{"watch stream: unbalanced '}'"};
    ++i;
    if (scanner_.depth() == 0 && !scanner_.in_string()) {
      // One object ends here.
      if (!partial_.empty()) {
        partial_.append(data.data() + (start == std::string_view::npos ? 0 : start), i - (start == std::string_view::npos ? 0 : start));
        const std::string object = std::move(partial_);
        partial_.clear();
        if (Status s = on_object(object); !s.ok()) return s;
      } else {
        if (Status s = on_object(data.substr(start, i - start)); !s.ok()) return s;
      }
      start = std::string_view::npos;
    }
  }
  if (scanner_.depth() > 0 || scanner_.in_string()) {
    // An object continues in the next feed: keep its bytes.
    const size_t from = start == std::string_view::npos ? 0 : start;
    partial_.append(data.data() + from, data.size() - from);
    if (partial_.size() > kMaxObject) return Error{"watch stream: an event exceeds 64 MiB"};
  }
  return Status::Ok();
}

Status ListSplitter::feed(std::string_view data, const std::function<Status(std::string_view)>& on_item) {
  // Offsets in `data` where the value or item being buffered began (npos: it
  // began in an earlier feed and its bytes so far are in buffer_).
  size_t mark = (value_kind_ == 1 && value_started_) || item_open_ ? 0 : std::string_view::npos;
  size_t i = 0;
  auto flush_mark = [&](size_t end) -> std::string_view {
    // The bytes [mark, end) plus anything buffered before.
    if (buffer_.empty()) return data.substr(mark, end - mark);
    buffer_.append(data.data() + mark, end - mark);
    return buffer_;
  };
  while (i < data.size()) {
    if (done_) {
      if (!is_space(data[i])) return Error{"list: trailing content after the body"};
      ++i;
      continue;
    }
    if (scanner_.in_string() && !reading_key_) {
      const size_t run = scanner_.skip_string_run(data.substr(i));
      if (run > 0) {
        i += run;
        continue;
      }
    }
    const char c = data[i];
    const int before = scanner_.depth();
    const bool was_string = scanner_.in_string();
    if (!started_) {
      if (is_space(c)) {
        ++i;
        continue;
      }
      if (c != '{') return Error{"list: the body is not a JSON object"};
      started_ = true;
      expect_key_ = true;
      scanner_.step(c);
      ++i;
      continue;
    }
    if (!scanner_.step(c)) return Error{"list: unbalanced brackets"};
    ++i;
    const int after = scanner_.depth();
    if (before == 1 && !was_string) {
      // Between top-level members.
      if (c == '"' && expect_key_) {
        reading_key_ = true;
        key_.clear();
        continue;
      }
      if (c == ':') {
        expect_key_ = false;
        value_kind_ = key_ == "metadata" ? 1 : (key_ == "items" ? 2 : 3);
        value_started_ = false;
        continue;
      }
      if (c == ',') {
        expect_key_ = true;
        value_kind_ = 0;
        continue;
      }
      if (c == '}' && after == 0) {
        done_ = true;
        continue;
      }
      if (is_space(c)) continue;
      // The first byte of a top-level value.
      if (!value_started_) {
        value_started_ = true;
        if (value_kind_ == 1) {
          mark = i - 1;
          buffer_.clear();
          if (after == 1 && c != '{') {  // a scalar metadata (null): nothing to keep
            value_kind_ = 3;
          }
        } else if (value_kind_ == 2 && c != '[') {
          value_kind_ = 3;  // "items": null
        }
      }
      continue;
    }
    if (reading_key_) {
      if (was_string && !scanner_.in_string()) {
        reading_key_ = false;  // closing quote
      } else {
        key_.push_back(c);
        if (key_.size() > 256) return Error{"list: a top-level key is too long"};
      }
      continue;
    }
    if (value_kind_ == 1 && value_started_ && before >= 1) {
      // Inside the metadata object: it ends when depth returns to 1.
      if (after == 1 && !scanner_.in_string()) {
        metadata_ = std::string(flush_mark(i));
        buffer_.clear();
        mark = std::string_view::npos;
        value_kind_ = 3;  // captured
      }
      continue;
    }
    if (value_kind_ == 2) {
      // Inside "items": elements live at depth 2.
      if (before == 2 && !was_string && !item_open_) {
        if (is_space(c) || c == ',') continue;
        if (c == ']' && after == 1) {
          value_kind_ = 3;
          continue;
        }
        if (c != '{') return Error{"list: an item is not an object"};
        item_open_ = true;
        mark = i - 1;
        buffer_.clear();
        continue;
      }
      if (item_open_ && after == 2 && !scanner_.in_string()) {
        item_open_ = false;
        const std::string_view item = flush_mark(i);
        if (Status st = on_item(item); !st.ok()) return st;
        buffer_.clear();
        mark = std::string_view::npos;
      }
      continue;
    }
  }
  // Keep the bytes of a value or item that continues in the next feed.
  if ((item_open_ || (value_kind_ == 1 && value_started_)) && mark != std::string_view::npos) {
    buffer_.append(data.data() + mark, data.size() - mark);
    const size_t limit = item_open_ ? kMaxItem : kMaxMetadata;
    if (buffer_.size() > limit) return Error{"list: an item exceeds 64 MiB"};
  }
  return Status::Ok();
}

Status ListSplitter::finish() const {
  if (!started_) return Error{"list: empty body"};
  if (!done_) return Error{"list: the body ended early"};
  return Status::Ok();
}

}  // namespace fracpack::k8s
