#include "k8s/extender_body.h"

#include <cstring>

#include "common/json/padded_text.h"
#include "k8s/limits.h"

namespace fracpack::k8s::extender_body {
namespace {

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

}  // namespace

static_assert(PaddedText::kPadding >= simdjson::SIMDJSON_PADDING, "a padded body must carry simdjson's padding");

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

ParserLease::~ParserLease() {
  constexpr size_t kKeep = 16 << 20;
  if (parser_.capacity() > kKeep) parser_ = simdjson::ondemand::parser{};
}

Status validate_body(std::string_view body, size_t capacity, LeftOut blank, WatchedArray* cut, ValidatedText& out) {
  constexpr std::string_view kWhere = "the request body";
  const bool large = body.size() > kDomValidationBytes;
  // The text parsed without the array [begin, end) of `body`: the body up
  // to its '[', then "]", then the rest (the positions past it shift).
  auto leave_out = [&](size_t begin, size_t end) {
    const size_t head = begin + 1, tail = body.size() - end;
    out.copy.emplace(head + 1 + tail);
    std::memcpy(out.copy->data(), body.data(), head);
    out.copy->data()[head] = ']';
    std::memcpy(out.copy->data() + head + 1, body.data() + end, tail);
    out.map.cut_at = head + 1;
    out.map.cut_shift = end - begin - 2;
  };
  bool checked = false;
  if (blank.size >= 2) {
    // A known NodeNames list: valid JSON, as the text without it is iff
    // the body is (a few kilobytes of the pod left to validate and parse).
    leave_out(blank.at, blank.at + blank.size);
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
  if (out.copy) {
    out.padded = simdjson::padded_string_view(*out.copy);
  } else if (capacity >= body.size() + simdjson::SIMDJSON_PADDING) {
    // The caller's buffer when it has simdjson's padding (no copy of a
    // 40 MB NodeList), else a padded copy.
    out.padded = simdjson::padded_string_view(body.data(), body.size(), capacity);
  } else {
    out.copy.emplace(body);
    out.padded = simdjson::padded_string_view(*out.copy);
  }
  const simdjson::padded_string_view& padded = out.padded;
  if (checked) {
    // (the whole body, above)
  } else if (padded.size() <= kDomValidationBytes) {
    // (Its capacity never passes kDomValidationBytes: nothing to give back.)
    if (auto e = validating_parser().parse(padded.data(), padded.size(), false).error()) return json::syntax_error(e, kWhere);
  } else if (Status s = check_json_text(std::string_view(padded.data(), padded.size()), kWhere); !s.ok()) {
    return s;
  }
  out.map.base = padded.data();
  return Status::Ok();
}

}  // namespace fracpack::k8s::extender_body
