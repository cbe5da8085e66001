// The envelope of one watch event ({"type": ..., "object": {...}}), read by
// scanning, not parsing: the object's text is handed on as it is, to be
// decoded once by whoever wants it (k8s/decode.cc decodes objects; the
// informer decodes an event's object with its own Selection). Only a
// BOOKMARK's resourceVersion is read here.
#include <string>

#include "common/json/stream.h"
#include "k8s/json.h"

namespace fracpack::k8s {

namespace {

// A string starting at s[i] (a quote): its raw content; `i` moves past the
// closing quote. False if it does not end.
bool scan_string(std::string_view s, size_t& i, std::string_view& content) {
  bool escaped = false;
  const size_t end = string_end(s, i, escaped);
  if (end == std::string_view::npos) return false;
  content = s.substr(i + 1, end - i - 2);
  i = end;
  return true;
}

}  // namespace

Result<WatchEvent> parse_watch_event(std::string_view text) {
  WatchEvent ev;
  bool has_object = false;
  auto bad = [](const std::string& why) { return Error{"watch event: " + why}; };
  size_t i = skip_space(text, 0);
  if (i >= text.size() || text[i] != '{') return bad("not a JSON object");
  i = skip_space(text, i + 1);
  if (i < text.size() && text[i] == '}') {
    ++i;
  } else {
    while (true) {
      std::string_view key;
      if (i >= text.size() || text[i] != '"' || !scan_string(text, i, key)) return bad("expected a key");
      i = skip_space(text, i);
      if (i >= text.size() || text[i] != ':') return bad("expected ':' after \"" + std::string(key) + "\"");
      i = skip_space(text, i + 1);
      if (i >= text.size()) return bad("truncated");
      const size_t value_begin = i;
      std::string_view str;
      bool is_string = false;
      if (text[i] == '"') {
        if (!scan_string(text, i, str)) return bad("unterminated string");
        is_string = true;
      } else {
        i = value_end(text, i);
        if (i == std::string_view::npos) return bad("truncated");
      }
      const std::string_view value = text.substr(value_begin, i - value_begin);
      if (key == "type") {
        if (!is_string || str.find('\\') != std::string_view::npos) return bad("\"type\" is not a plain string");
        ev.type.assign(str);
      } else if (key == "object") {
        if (value.empty() || value.front() != '{') return bad("\"object\" is not an object");
        ev.object = value;
        has_object = true;
      }
      i = skip_space(text, i);
      if (i < text.size() && text[i] == ',') {
        i = skip_space(text, i + 1);
        continue;
      }
      if (i < text.size() && text[i] == '}') {
        ++i;
        break;
      }
      return bad(i >= text.size() ? "truncated" : "expected ',' or '}'");
    }
  }
  if (skip_space(text, i) != text.size()) return bad("trailing content after the event");
  if (ev.type.empty()) return Error{"watch event without a type"};
  if (!has_object) return Error{"watch event " + ev.type + " without an object"};
  if (ev.type == "BOOKMARK") {
    Status b = json::with_document(ev.object, [&](json::od::value root) -> Status {
      return json::for_each_field(root, "object", [&](std::string_view key, json::od::value v) -> Status {
        if (key != "metadata") return Status::Ok();
        return json::for_each_field(v, "metadata", [&](std::string_view k, json::od::value mv) -> Status {
          if (k == "resourceVersion") return json::get_string(mv, "metadata.resourceVersion", ev.resource_version);
          return Status::Ok();
        });
      });
    });
    if (!b.ok()) return Error{"BOOKMARK: " + b.message()};
  }
  return ev;
}

}  // namespace fracpack::k8s
