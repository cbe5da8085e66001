#include "k8s/extender_codec.h"

#include "common/error_body.h"

#include <cstring>
#include <deque>
#include <optional>

#include "k8s/json.h"
#include "common/json/check.h"
#include "common/json/stream.h"
#include "k8s/limits.h"
#include "common/json/write.h"

namespace fracpack::k8s {
namespace {

namespace od = json::od;

// Go's encoding/json matches keys without regard to ASCII case.
bool same_key(std::string_view key, std::string_view want) {
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

bool is_null(od::value& v, Status& status, std::string_view path) {
  od::json_type t;
  if (auto e = v.type().get(t)) {
    status = json::syntax_error(e, path);
    return false;
  }
  if (t != od::json_type::null) return false;
  json::consume_null(v);
  return true;
}

Status decode_pod_value(od::value v, std::string_view path, const Selection& sel, std::optional<Pod>& out) {
  Status st = Status::Ok();
  if (is_null(v, st, path)) {
    out.reset();
    return Status::Ok();
  }
  if (!st.ok()) return st;
  od::object obj;
  if (v.get_object().get(obj)) return json::type_error(path, "a Pod object");
  Pod pod;
  if (Status s = json::decode_pod(obj, sel, pod); !s.ok()) return with_context(std::string(path), Error{s.message()});
  if (Status s = check_pod_limits(pod, path); !s.ok()) return s;
  out = std::move(pod);
  return Status::Ok();
}

// A known list the parsers see emptied, and where it is in the body.
struct Blanked {
  const std::shared_ptr<const KnownNodeNames>& list;  // null: none
  size_t at = 0;
  size_t size() const { return list ? list->text.size() : 0; }
};

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

std::string get_plain_string(od::value v, std::string_view path, Status& st) {
  std::string s;
  st = json::get_string(v, path, s);
  return s;
}

// Bodies up to this size are validated by simdjson's DOM parser (fastest
// for them; it holds ~14 bytes per byte of capacity, so it is kept only
// this large); larger ones by check_json_text (one pass, no index), which
// also finds a full NodeList's items so that simdjson need not index them.
// (parse_extender_args of extender_bench's 36 MiB filter body: 44 ms when
// the on-demand document was walked again to validate it and every Node
// decoded, 14.5 ms now; medians of nine on the 2-core development machine.)
constexpr size_t kDomValidationBytes = 1 << 20;

simdjson::dom::parser& validating_parser() {
  thread_local simdjson::dom::parser parser(kDomValidationBytes);  // (its most: a larger parse fails, never grows it)
  return parser;
}

// Parses `body` with this thread's parser, giving fn(root, map) where `map`
// takes positions in the parsed text (a padded copy, perhaps) back to `body`.
// The whole document must be JSON, not only the fields read: the on-demand
// decoder skips the others unchecked ("Junk":NaN would pass), and a full
// Node that passes is echoed back as it came. With `cut`, a large body's
// array at root[cut->outer][cut->inner] is found while checking the body and
// left out of the text parsed (it reads `[]` there): the on-demand parser
// then indexes a few kilobytes instead of every byte of a NodeList.
template <class Fn>
Status with_body(std::string_view body, size_t capacity, Fn fn, size_t blank_at = 0, size_t blank_size = 0,
                 WatchedArray* cut = nullptr) {
  simdjson::ondemand::parser& parser = json::thread_parser();
  // A parser that grew for a very large body gives its memory back, on
  // every way out.
  struct Shrink {
    simdjson::ondemand::parser& parser;
    ~Shrink() {
      constexpr size_t kKeep = 16 << 20;
      if (parser.capacity() > kKeep) parser = simdjson::ondemand::parser{};
    }
  } shrink{parser};
  constexpr std::string_view kWhere = "the request body";
  const bool large = body.size() > kDomValidationBytes;
  std::optional<simdjson::padded_string> copy;
  simdjson::padded_string_view padded;
  TextMap map;
  // The text parsed without the array [begin, end) of `body`: the body up
  // to its '[', then "]", then the rest (the positions past it shift).
  auto leave_out = [&](size_t begin, size_t end) {
    const size_t head = begin + 1, tail = body.size() - end;
    copy.emplace(head + 1 + tail);
    std::memcpy(copy->data(), body.data(), head);
    copy->data()[head] = ']';
    std::memcpy(copy->data() + head + 1, body.data() + end, tail);
    map.cut_at = head + 1;
    map.cut_shift = end - begin - 2;
  };
  bool checked = false;
  if (blank_size >= 2) {
    // A known NodeNames list: valid JSON, as the text without it is iff
    // the body is (a few kilobytes of the pod left to validate and parse).
    leave_out(blank_at, blank_at + blank_size);
  } else if (large && cut != nullptr) {
    if (Status s = check_json_text(body, kWhere, cut); !s.ok()) return s;
    checked = true;
    if (cut->seen > 0 && !cut->ambiguous && !cut->too_many && cut->end - cut->begin > 2) {
      // simdjson's stage 1 checks UTF-8 only in what it parses.
      if (!simdjson::validate_utf8(body.data() + cut->begin, cut->end - cut->begin)) {
        return json::syntax_error(simdjson::UTF8_ERROR, kWhere);
      }
      leave_out(cut->begin, cut->end);
    } else {
      cut->seen = 0;  // (nothing left out: every items array is read from the parsed text)
    }
  }
  if (copy) {
    padded = simdjson::padded_string_view(*copy);
  } else if (capacity >= body.size() + simdjson::SIMDJSON_PADDING) {
    // The caller's buffer when it has simdjson's padding (no copy of a
    // 40 MB NodeList), else a padded copy.
    padded = simdjson::padded_string_view(body.data(), body.size(), capacity);
  } else {
    copy.emplace(body);
    padded = simdjson::padded_string_view(*copy);
  }
  if (checked) {
    // (the whole body, above)
  } else if (padded.size() <= kDomValidationBytes) {
    // (Its capacity never passes kDomValidationBytes: nothing to give back.)
    if (auto e = validating_parser().parse(padded.data(), padded.size(), false).error()) return json::syntax_error(e, kWhere);
  } else if (Status s = check_json_text(std::string_view(padded.data(), padded.size()), kWhere); !s.ok()) {
    return s;
  }
  map.base = padded.data();
  od::document doc;
  if (auto e = parser.iterate(padded).get(doc)) return json::syntax_error(e, kWhere);
  od::value root;
  if (auto e = doc.get_value().get(root)) return json::syntax_error(e, kWhere);
  if (Status s = fn(root, static_cast<const TextMap&>(map)); !s.ok()) return s;
  if (!doc.current_location().error()) return Error{"invalid JSON: trailing content after the value"};
  return Status::Ok();
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
  Status s = with_body(body, capacity, [&](od::value root, const TextMap& at_body) -> Status {
    Status st = Status::Ok();
    if (is_null(root, st, "ExtenderArgs")) return Status::Ok();
    if (!st.ok()) return st;
    return json::for_each_field(root, "ExtenderArgs", [&](std::string_view key, od::value v) -> Status {
      if (pod_key.take(key, "Pod")) return decode_pod_value(v, "Pod", selection, args.pod);
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
  }, blanked.at, blanked.size(), &cut);
  if (!s.ok()) return Error{s.message()};
  return args;
}

}  // namespace

static_assert(PaddedText::kPadding >= simdjson::SIMDJSON_PADDING, "a padded body must carry simdjson's padding");

Result<ExtenderArgs> parse_extender_args(PaddedText padded_body, const Selection& selection,
                                         std::span<const std::shared_ptr<const KnownNodeNames>> known) {
  const std::string_view body = padded_body.text();
  const size_t capacity = padded_body.capacity();
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

void write_score(char* at, int64_t score) {
  at[0] = score >= 10 ? static_cast<char>('0' + score / 10) : ' ';
  at[1] = static_cast<char>('0' + score % 10);
}

size_t append_host_priority(std::string& out, std::string_view host, int64_t score) {
  out += "{\"Host\":";
  append_json_string(out, host);
  out += ",\"Score\":";
  const size_t at = out.size();
  if (score >= 0 && score <= 10) {
    out += "  ";
    write_score(out.data() + at, score);
  } else {
    out += std::to_string(score);
  }
  out.push_back('}');
  return at;
}

std::string format_host_priorities(const std::vector<HostPriority>& list) {
  std::string out = "[";
  out.reserve(list.size() * 32 + 2);
  for (size_t i = 0; i < list.size(); ++i) {
    if (i) out.push_back(',');
    append_host_priority(out, list[i].host, list[i].score);
  }
  out.push_back(']');
  return out;
}

Result<BindingArgs> parse_binding_args(std::string_view body) {
  BindingArgs args;
  KeyMatch name_key, ns_key, uid_key, node_key;
  Status s = with_body(body, 0, [&](od::value root, const TextMap&) -> Status {
    return json::for_each_field(root, "ExtenderBindingArgs", [&](std::string_view key, od::value v) -> Status {
      Status st = Status::Ok();
      if (name_key.take(key, "PodName")) args.pod_name = get_plain_string(v, "PodName", st);
      else if (ns_key.take(key, "PodNamespace")) args.pod_namespace = get_plain_string(v, "PodNamespace", st);
      else if (uid_key.take(key, "PodUID")) args.pod_uid = get_plain_string(v, "PodUID", st);
      else if (node_key.take(key, "Node")) args.node = get_plain_string(v, "Node", st);
      return st;
    });
  });
  if (!s.ok()) return Error{s.message()};
  if (args.pod_name.empty()) return Error{"ExtenderBindingArgs: PodName is empty"};
  if (args.node.empty()) return Error{"ExtenderBindingArgs: Node is empty"};
  for (Status cs : {check_name(args.pod_name, "ExtenderBindingArgs.PodName"),
                    check_name(args.pod_namespace, "ExtenderBindingArgs.PodNamespace", kMaxNamespace),
                    check_name(args.pod_uid, "ExtenderBindingArgs.PodUID", kMaxUid), check_name(args.node, "ExtenderBindingArgs.Node")}) {
    if (!cs.ok()) return Error{cs.message()};
  }
  return args;
}

// The same shape as every error body fracpack answers with.
std::string format_binding_result(std::string_view error) { return error_body(error); }

Result<PreemptionArgs> parse_preemption_args(std::string_view body, const Selection& selection) {
  PreemptionArgs args;
  KeyMatch pod_key, full_key, meta_key;
  bool saw_meta = false, saw_full = false;
  std::map<std::string, std::vector<std::string>> full, meta;
  std::map<std::string, int64_t> full_pdb, meta_pdb;
  // Victims per node: {"Pods":[...],"NumPDBViolations":n}; a pod is either a
  // MetaPod {"UID":...} or a full Pod whose metadata.uid counts.
  auto decode_victims = [&](od::value v, std::string_view path, bool is_meta, std::map<std::string, std::vector<std::string>>& out,
                            std::map<std::string, int64_t>& pdb) -> Status {
    return json::for_each_field(v, path, [&](std::string_view node, od::value victims) -> Status {
      if (Status cs = check_name(node, std::string(path) + " key"); !cs.ok()) return cs;
      const std::string where = std::string(path) + "." + std::string(node);
      std::vector<std::string>& uids = out[std::string(node)];
      if (Status cs = check_node_count(out.size(), path); !cs.ok()) return cs;
      KeyMatch pods_key, pdb_key;
      return json::for_each_field(victims, where, [&](std::string_view k, od::value x) -> Status {
        if (pdb_key.take(k, "NumPDBViolations")) {
          Status st = Status::Ok();
          if (is_null(x, st, where)) return Status::Ok();
          int64_t n = 0;
          if (x.get_int64().get(n)) return json::type_error(where + ".NumPDBViolations", "an integer");
          pdb[std::string(node)] = n;
          return Status::Ok();
        }
        if (!pods_key.take(k, "Pods")) return Status::Ok();
        return json::for_each_element(x, where + ".Pods", [&](od::value pod, size_t i) -> Status {
          const std::string pw = where + ".Pods[" + std::to_string(i) + "]";
          std::string uid;
          Status ps = json::for_each_field(pod, pw, [&](std::string_view pk, od::value pv) -> Status {
            if (is_meta) {
              if (!same_key(pk, "UID")) return Status::Ok();
              return json::get_string(pv, pw + ".UID", uid);
            }
            if (pk != "metadata") return Status::Ok();
            return json::for_each_field(pv, pw + ".metadata", [&](std::string_view mk, od::value mv) -> Status {
              if (mk != "uid") return Status::Ok();
              return json::get_string(mv, pw + ".metadata.uid", uid);
            });
          });
          if (!ps.ok()) return ps;
          if (uid.empty()) return Error{pw + ": a victim without a UID"};
          if (Status cs = check_name(uid, pw + ".UID", kMaxUid); !cs.ok()) return cs;
          uids.push_back(std::move(uid));
          return Status::Ok();
        });
      });
    });
  };
  Status s = with_body(body, 0, [&](od::value root, const TextMap&) -> Status {
    return json::for_each_field(root, "ExtenderPreemptionArgs", [&](std::string_view key, od::value v) -> Status {
      if (pod_key.take(key, "Pod")) return decode_pod_value(v, "Pod", selection, args.pod);
      Status st = Status::Ok();
      if (meta_key.take(key, "NodeNameToMetaVictims")) {
        if (is_null(v, st, "NodeNameToMetaVictims")) return Status::Ok();
        if (!st.ok()) return st;
        saw_meta = true;
        meta.clear();
        return decode_victims(v, "NodeNameToMetaVictims", true, meta, meta_pdb);
      }
      if (full_key.take(key, "NodeNameToVictims")) {
        if (is_null(v, st, "NodeNameToVictims")) return Status::Ok();
        if (!st.ok()) return st;
        saw_full = true;
        full.clear();
        return decode_victims(v, "NodeNameToVictims", false, full, full_pdb);
      }
      return Status::Ok();
    });
  });
  if (!s.ok()) return Error{s.message()};
  // The scheduler fills one of the two (nodeCacheCapable picks which).
  args.meta = saw_meta || !saw_full;
  args.victims = args.meta ? std::move(meta) : std::move(full);
  args.pdb_violations = args.meta ? std::move(meta_pdb) : std::move(full_pdb);
  return args;
}

std::string format_preemption_result(const std::map<std::string, MetaVictims>& victims) {
  std::string out = "{\"NodeNameToMetaVictims\":{";
  bool first = true;
  for (const auto& [node, v] : victims) {
    if (!first) out.push_back(',');
    first = false;
    append_json_string(out, node);
    out += ":{\"Pods\":[";
    for (size_t i = 0; i < v.uids.size(); ++i) {
      if (i) out.push_back(',');
      out += "{\"UID\":";
      append_json_string(out, v.uids[i]);
      out.push_back('}');
    }
    out += "],\"NumPDBViolations\":" + std::to_string(v.pdb_violations) + "}";
  }
  out += "}}";
  return out;
}

}  // namespace fracpack::k8s
