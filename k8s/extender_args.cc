#include "k8s/extender_args.h"

#include "common/json/check.h"
#include "common/json/stream.h"
#include "k8s/extender_body.h"
#include "k8s/json.h"
#include "k8s/limits.h"

namespace fracpack::k8s {
namespace {

namespace od = json::od;
using extender_body::KeyMatch;
using extender_body::TextMap;
using extender_body::is_null;

// A known list the parsers see emptied, and where it is in the body.
struct Blanked {
  const std::shared_ptr<const KnownNodeNames>& list;  // null: none
  size_t at = 0;
  size_t size() const { return list ? list->text.size() : 0; }
};

// A list of strings as views into `body` (no copies: 5 000 node names are
// 5 000 allocations otherwise); a string with escapes is decoded into
// `storage`. `at_body` takes positions in the parsed text (the body's own
// buffer or a copy) to `body`. A list that is one of `known` byte for byte
// is taken from it, its strings left unread.
Status decode_name_list(od::value v, std::string_view path, ExtenderArgs& args, std::string_view body, const TextMap& at_body,
                        std::span<const std::shared_ptr<const KnownNodeNames>> known, const Blanked& blanked, bool& blank_confirmed) {
  Status st = Status::Ok();
  if (is_null(v, st, path)) {
    args.node_names.reset();
    return Status::Ok();
  }
  if (!st.ok()) return st;
  const char* open = nullptr;
  if (v.current_location().get(open) || *open != '[') return json::type_error(path, "an array");
  const size_t at = at_body(open);
  auto take = [&](const std::shared_ptr<const KnownNodeNames>& list) {
    args.node_names = list->names;
    args.node_names_text = body.substr(at, list->text.size());
    args.known_names = list;
    return Status::Ok();  // (the array is skipped unread)
  };
  if (blanked.list != nullptr && at == blanked.at) {  // the array emptied for the parsers: compared already
    blank_confirmed = true;
    return take(blanked.list);
  }
  for (const auto& list : known) {
    // The document is valid JSON: an array whose bytes are a known
    // (complete) array's is that array.
    if (body.compare(at, list->text.size(), list->text) == 0) return take(list);
  }
  std::vector<std::string_view> names;
  bool any_escaped = false;
  size_t end = at + 1;  // just past the last string's closing quote
  Status s = json::for_each_element(v, path, [&](od::value el, size_t i) -> Status {
    if (Status cs = check_node_count(i + 1, path); !cs.ok()) return cs;
    od::raw_json_string raw;
    if (el.get_raw_json_string().get(raw)) return json::type_error(std::string(path) + "[" + std::to_string(i) + "]", "a string");
    const char* p = raw.raw();  // just past the opening quote
    const char* q = p;
    bool escaped = false;
    while (*q != '"') {  // the document is valid JSON: the closing quote exists
      if (*q == '\\') {
        escaped = true;
        ++q;
      }
      ++q;
    }
    const std::string_view text = body.substr(at_body(p), static_cast<size_t>(q - p));
    end = at_body(q) + 1;
    auto where = [&] { return std::string(path) + "[" + std::to_string(i) + "]"; };
    if (!escaped) {
      if (text.size() > kMaxName.bytes) return check_name(text, where());
      names.push_back(text);
      return Status::Ok();
    }
    any_escaped = true;
    std::string decoded;
    if (!unescape_json_string(text, decoded)) return json::type_error(where(), "a valid JSON string");
    if (Status cs = check_name(decoded, where()); !cs.ok()) return cs;
    names.push_back(args.storage.emplace_back(std::move(decoded)));
    return Status::Ok();
  });
  if (!s.ok()) return s;
  args.node_names = std::move(names);
  if (!any_escaped) {
    while (end < body.size() && json_space(body[end])) ++end;  // to the closing bracket
    args.node_names_text = body.substr(at, end + 1 - at);
  }
  return Status::Ok();
}

// Where a known list ends `body` (`...,"NodeNames":[...]}`: Go writes
// ExtenderArgs' fields in order, NodeNames last), or npos.
size_t trailing_list(std::string_view body, std::string_view list) {
  size_t end = body.size();
  while (end > 0 && json_space(body[end - 1])) --end;
  if (end == 0 || body[end - 1] != '}') return std::string_view::npos;
  --end;
  while (end > 0 && json_space(body[end - 1])) --end;
  if (end < list.size() + 1 || body.compare(end - list.size(), list.size(), list) != 0) return std::string_view::npos;
  return end - list.size();
}

// Members of JSON text that was checked whole before (the DOM parser or
// check_json_text) are stepped over with the shared scanner
// (common/json/stream.h: skip_space, string_end, value_end): no index, no
// validation, no allocation.

// t[i] is '{': calls fn(key, value_start) -> value_end for each member (keys
// unescaped into `scratch` when they have escapes); returns the index past
// the closing brace.
template <class Fn>
size_t for_each_member(std::string_view t, size_t i, std::string& scratch, Fn fn) {
  i = skip_space(t, i + 1);
  if (t[i] == '}') return i + 1;
  while (true) {
    bool escaped = false;
    const size_t key_end = string_end(t, i, escaped);
    std::string_view key = t.substr(i + 1, key_end - i - 2);
    if (escaped) {
      unescape_json_string(key, scratch);  // (checked JSON: it unescapes)
      key = scratch;
    }
    i = skip_space(t, skip_space(t, key_end) + 1);  // past the ':'
    i = skip_space(t, fn(key, i));
    if (t[i] == '}') return i + 1;
    i = skip_space(t, i + 1);  // past the ','
  }
}

// A full Node in the body at `at` ('{'): its metadata.name, as decoding it
// would read it (the last of repeated keys wins; null is empty), and its
// text. `where` spells the item's path for errors.
template <class Where>
Status scan_node(std::string_view body, size_t at, Where where, std::deque<std::string>& storage, ExtenderNode& out) {
  Status st = Status::Ok();
  std::string scratch;
  std::string_view name;
  bool name_escaped = false;
  const size_t end = for_each_member(body, at, scratch, [&](std::string_view key, size_t v) -> size_t {
    if (key != "metadata" || !st.ok()) return value_end(body, v);
    if (body[v] == 'n') return value_end(body, v);  // null: an empty object
    if (body[v] != '{') {
      st = json::type_error(where() + ".metadata", "an object");
      return value_end(body, v);
    }
    std::string member_scratch;
    return for_each_member(body, v, member_scratch, [&](std::string_view k, size_t mv) -> size_t {
      const size_t past = value_end(body, mv);
      if (k != "name" || !st.ok()) return past;
      if (body[mv] == 'n') {
        name = {};
      } else if (body[mv] != '"') {
        st = json::type_error(where() + ".metadata.name", "a string");
      } else {
        name = body.substr(mv + 1, past - mv - 2);
        bool escaped = false;
        string_end(body, mv, escaped);
        name_escaped = escaped;
      }
      return past;
    });
  });
  if (!st.ok()) return st;
  if (name_escaped) {
    std::string decoded;
    unescape_json_string(name, decoded);
    name = storage.emplace_back(std::move(decoded));
  }
  out.name = name;
  out.json = body.substr(at, end - at);
  return Status::Ok();
}

// The same from what check_json_text found of the node (its metadata.name
// watched): no second pass over its text.
template <class Where>
Status found_node(std::string_view body, const WatchedElement& found, Where where, std::deque<std::string>& storage, ExtenderNode& out) {
  if (found.parent_not_object) return json::type_error(where() + ".metadata", "an object");
  if (found.field_not_string) return json::type_error(where() + ".metadata.name", "a string");
  std::string_view name;
  if (found.field == WatchedElement::Field::kString) {
    name = body.substr(found.field_begin + 1, found.field_end - found.field_begin - 2);
    if (found.field_escaped) {
      std::string decoded;
      unescape_json_string(name, decoded);
      name = storage.emplace_back(std::move(decoded));
    }
  }
  out.name = name;
  out.json = body.substr(found.begin, found.end - found.begin);
  return Status::Ok();
}

// One parse; with `blanked` (a known list at its place), the JSON parsers
// see that array emptied and `blank_confirmed` says whether NodeNames was it.
Result<ExtenderArgs> parse_args(std::string_view body, const Selection& selection, size_t capacity,
                                std::span<const std::shared_ptr<const KnownNodeNames>> known, const Blanked& blanked,
                                bool& blank_confirmed) {
  ExtenderArgs args;
  KeyMatch pod_key, nodes_key, names_key;
  WatchedArray cut{"Nodes", "items", "metadata", "name", 0, 0, 0, {}, false, kMaxNodesPerRequest, false};
  Status s = extender_body::parse_body(body, capacity, [&](od::value root, const TextMap& at_body) -> Status {
    Status st = Status::Ok();
    if (is_null(root, st, "ExtenderArgs")) return Status::Ok();
    if (!st.ok()) return st;
    return json::for_each_field(root, "ExtenderArgs", [&](std::string_view key, od::value v) -> Status {
      if (pod_key.take(key, "Pod")) return extender_body::decode_pod_value(v, "Pod", selection, args.pod);
      if (names_key.take(key, "NodeNames")) return decode_name_list(v, "NodeNames", args, body, at_body, known, blanked, blank_confirmed);
      if (!nodes_key.take(key, "Nodes")) return Status::Ok();
      Status nst = Status::Ok();
      if (is_null(v, nst, "Nodes")) {
        args.nodes.reset();
        return Status::Ok();
      }
      if (!nst.ok()) return nst;
      std::vector<ExtenderNode> nodes;
      // Item `i` at `at` in the body: its name and its extent, from the
      // text (checked whole already), or as the check found them.
      auto take_node = [&](size_t at, size_t i, const WatchedElement* found) -> Status {
        // The path is only spelled out for an error (5 000 nodes per request).
        auto where = [i] { return "Nodes.items[" + std::to_string(i) + "]"; };
        if (Status cs = check_node_count(i + 1, "Nodes.items"); !cs.ok()) return cs;
        if (body[at] != '{') return json::type_error(where(), "a Node object");
        ExtenderNode n;
        n.item = i;
        if (found != nullptr && !found->ambiguous) {
          if (Status ns = found_node(body, *found, where, args.storage, n); !ns.ok()) return ns;
        } else if (Status ns = scan_node(body, at, where, args.storage, n); !ns.ok()) {
          return ns;
        }
        if (n.name.empty()) return Error{where() + ".metadata.name: missing (every Node has a name, and replies answer by it)"};
        if (Status cs = check_name(n.name, where() + ".metadata.name"); !cs.ok()) return cs;
        nodes.push_back(n);
        return Status::Ok();
      };
      nst = json::for_each_field(v, "Nodes", [&](std::string_view k, od::value items) -> Status {
        if (k != "items") return Status::Ok();
        const char* open = nullptr;
        if (at_body.cut() && cut.seen > 0 && !items.current_location().get(open) && at_body(open) == cut.begin) {
          // The array left out of the parsed text: its elements where the
          // check found them.
          for (size_t i = 0; i < cut.elements.size(); ++i) {
            if (Status ns = take_node(cut.elements[i].begin, i, &cut.elements[i]); !ns.ok()) return ns;
          }
          return json::for_each_element(items, "Nodes.items", [](od::value, size_t) { return Status::Ok(); });  // its "[]"
        }
        return json::for_each_element(items, "Nodes.items", [&](od::value item, size_t i) -> Status {
          const char* start = nullptr;
          if (item.current_location().get(start)) return json::type_error("Nodes.items[" + std::to_string(i) + "]", "a Node object");
          // (the on-demand iterator then skips the object by its index)
          return take_node(at_body(start), i, nullptr);
        });
      });
      if (!nst.ok()) return nst;
      args.nodes = std::move(nodes);
      return Status::Ok();
    });
  }, extender_body::LeftOut{blanked.at, blanked.size()}, &cut);
  if (!s.ok()) return Error{s.message()};
  return args;
}

}  // namespace

std::shared_ptr<const KnownNodeNames> KnownNodeNames::copy_of(std::string_view text, const std::vector<std::string_view>& names) {
  auto out = std::make_shared<KnownNodeNames>();
  out->text.assign(text);
  out->names.reserve(names.size());
  for (std::string_view n : names) {
    if (n.data() < text.data() || n.data() + n.size() > text.data() + text.size()) return nullptr;  // not this list's
    out->names.emplace_back(out->text.data() + (n.data() - text.data()), n.size());
  }
  return out;
}

namespace {

// `capacity`: the readable bytes from body.data() on (0: unpadded).
Result<ExtenderArgs> parse_extender_args_in(std::string_view body, size_t capacity, const Selection& selection,
                                            std::span<const std::shared_ptr<const KnownNodeNames>> known) {
  // A known list at the end of the body (kube-scheduler's repeated
  // candidates) is emptied before the JSON parsers see it: neither indexes
  // its 5 000 strings. Sound only if NodeNames is that very array (then the
  // body is the parsed document with one valid array for another);
  // anything else is parsed again as sent.
  for (const auto& list : known) {
    const size_t at = trailing_list(body, list->text);
    if (at == std::string_view::npos) continue;
    bool confirmed = false;
    auto fast = parse_args(body, selection, capacity, known, Blanked{list, at}, confirmed);
    if (fast.ok() && confirmed) return fast;
    break;
  }
  static const std::shared_ptr<const KnownNodeNames> kNone;
  bool unused = false;
  return parse_args(body, selection, capacity, known, Blanked{kNone, 0}, unused);
}

}  // namespace

Result<ExtenderArgs> parse_extender_args(PaddedText body, const Selection& selection,
                                         std::span<const std::shared_ptr<const KnownNodeNames>> known) {
  return parse_extender_args_in(body.text(), body.capacity(), selection, known);
}

Result<ExtenderArgs> parse_extender_args(std::string_view unpadded_body, const Selection& selection,
                                         std::span<const std::shared_ptr<const KnownNodeNames>> known) {
  return parse_extender_args_in(unpadded_body, 0, selection, known);
}

}  // namespace fracpack::k8s
