#include "k8s/extender_filter_reply.h"

#include <algorithm>

#include "common/json/write.h"

namespace fracpack::k8s {

// The reply is written in one buffer that starts with the passing nodes'
// part (as finish() closes it), so that the passing nodes, most of a full
// NodeList's reply, are copied once.
constexpr std::string_view kFullNodesOpen = "{\"Nodes\":{\"metadata\":{},\"items\":[";
constexpr std::string_view kNodeNamesOpen = "{\"Nodes\":null,\"NodeNames\":[";

FilterReplyWriter::FilterReplyWriter(bool full_nodes, size_t expected, size_t max_bytes)
    : full_nodes_(full_nodes), max_bytes_(max_bytes) {
  passed_.reserve(std::min<size_t>(expected * 24 + 64, max_bytes));
  passed_ = full_nodes ? kFullNodesOpen : kNodeNamesOpen;
}

void FilterReplyWriter::reserve(size_t bytes) {
  // (with room for what finish() adds when there is no error to report:
  // the reply is then never copied to grow)
  if (!over_) passed_.reserve(std::min<size_t>(passed_.size() + bytes + 256, max_bytes_));
}

void FilterReplyWriter::charge() {
  if (passed_.size() + failed_.size() + unresolvable_.size() + 160 <= max_bytes_) return;
  over_ = true;
  std::string().swap(passed_);
  std::string().swap(failed_);
  std::string().swap(unresolvable_);
}

void FilterReplyWriter::render_pass(std::string& out, std::string_view name_or_object, bool full_nodes) {
  if (full_nodes) {
    out += name_or_object;
  } else {
    append_json_string(out, name_or_object);
  }
}

std::string printf_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 16);
  for (char c : text) {
    if (c == '%') {
      out += " percent";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

void FilterReplyWriter::render_fail(std::string& out, std::string_view node, std::string_view reason) {
  append_json_string(out, node);
  out.push_back(':');
  if (reason.find('%') == std::string_view::npos) {
    append_json_string_cut(out, reason, kMaxReasonBytes);
  } else {
    append_json_string_cut(out, printf_safe(reason), kMaxReasonBytes);
  }
}

std::string* FilterReplyWriter::next_passed() {
  if (over_) return nullptr;
  if (passes_++ > 0) passed_.push_back(',');
  return &passed_;
}

std::string* FilterReplyWriter::next_failed(bool unresolvable) {
  if (over_) return nullptr;
  std::string& out = unresolvable ? unresolvable_ : failed_;
  if (!out.empty()) out.push_back(',');
  return &out;
}

void FilterReplyWriter::pass(std::string_view name_or_object) {
  if (std::string* out = next_passed()) {
    render_pass(*out, name_or_object, full_nodes_);
    charge();
  }
}

void FilterReplyWriter::fail(std::string_view node, std::string_view reason, bool unresolvable) {
  if (std::string* out = next_failed(unresolvable)) {
    const size_t start = out->size();
    render_fail(*out, node, reason);
    if (unresolvable && unresolvable_as_failed_) also_failed(std::string_view(*out).substr(start));
    charge();
  }
}

void FilterReplyWriter::also_failed(std::string_view entry) {
  // (copied before charge(): `entry` views unresolvable_)
  std::string copy(entry);
  if (std::string* failed = next_failed(false)) *failed += copy;
}

void FilterReplyWriter::pass_rendered(std::string_view entry) {
  if (std::string* out = next_passed()) {
    *out += entry;
    charge();
  }
}

void FilterReplyWriter::fail_rendered(std::string_view entry, bool unresolvable) {
  if (std::string* out = next_failed(unresolvable)) {
    *out += entry;
    if (unresolvable && unresolvable_as_failed_) also_failed(entry);
    charge();
  }
}

std::string FilterReplyWriter::finish(std::string_view error, bool no_nodes) {
  std::string out;
  if (no_nodes || over_) {
    out = "{\"Nodes\":null,\"NodeNames\":null";
  } else {
    out = std::move(passed_);
    out += full_nodes_ ? "]},\"NodeNames\":null" : "]";
  }
  const size_t rest = failed_.size() + unresolvable_.size() + error.size() + 96;
  if (out.capacity() < out.size() + rest) out.reserve(out.size() + rest);
  out += ",\"FailedNodes\":{";
  out += failed_;
  out += "},\"FailedAndUnresolvableNodes\":{";
  out += unresolvable_;
  out += "},\"Error\":";
  append_json_string_cut(out, error.find('%') == std::string_view::npos ? std::string(error) : printf_safe(error), kMaxReasonBytes);
  out.push_back('}');
  return out;
}

}  // namespace fracpack::k8s
