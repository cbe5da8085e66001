#include "config/strict_yaml.h"

#include <charconv>
#include <cmath>
#include <sstream>

#include "config/values.h"
#include "scheduling/quantity.h"

namespace fracpack::config::yaml {

Result<std::string> scalar(const YAML::Node& v, const Where& w, const char* what) {
  if (!v.IsScalar()) return w.error(std::string("expected ") + what);
  return v.Scalar();
}

FieldReader string_field(std::string& out) {
  return [&out](const YAML::Node& v, const Where& w) -> Status {
    auto s = scalar(v, w, "a string");
    if (!s) return Error{s.message()};
    out = *s;
    return Status::Ok();
  };
}

FieldReader string_list_field(std::vector<std::string>& out) {
  return [&out](const YAML::Node& v, const Where& w) -> Status {
    std::vector<std::string> items;
    if (v.IsScalar()) {
      items.push_back(v.Scalar());
    } else if (v.IsSequence()) {
      for (const auto& item : v) {
        if (!item.IsScalar()) return w.error("expected a list of strings");
        items.push_back(item.Scalar());
      }
    } else {
      return w.error("expected a list of strings");
    }
    for (const auto& item : items) {
      if (item.empty()) return w.error("an empty string in the list");
    }
    out = std::move(items);
    return Status::Ok();
  };
}

FieldReader int_field(int64_t& out, int64_t min, int64_t max) {
  return [&out, min, max](const YAML::Node& v, const Where& w) -> Status {
    auto s = scalar(v, w, "an integer");
    if (!s) return Error{s.message()};
    int64_t x = 0;
    auto [p, ec] = std::from_chars(s->data(), s->data() + s->size(), x);
    if (ec != std::errc() || p != s->data() + s->size()) return w.error("expected an integer, got \"" + *s + "\"");
    if (x < min || x > max) return w.error(std::to_string(x) + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    out = x;
    return Status::Ok();
  };
}

FieldReader double_field(double& out, double min, double max) {
  return [&out, min, max](const YAML::Node& v, const Where& w) -> Status {
    auto s = scalar(v, w, "a number");
    if (!s) return Error{s.message()};
    char* end = nullptr;
    const double x = std::strtod(s->c_str(), &end);
    if (s->empty() || end != s->c_str() + s->size() || !std::isfinite(x)) return w.error("expected a number, got \"" + *s + "\"");
    if (x < min || x > max) {
      std::ostringstream m;
      m << *s << " is out of range [" << min << ", " << max << "]";
      return w.error(m.str());
    }
    out = x;
    return Status::Ok();
  };
}

FieldReader bool_field(bool& out) {
  return [&out](const YAML::Node& v, const Where& w) -> Status {
    auto s = scalar(v, w, "true or false");
    if (!s) return Error{s.message()};
    if (*s == "true") {
      out = true;
    } else if (*s == "false") {
      out = false;
    } else {
      return w.error("expected true or false, got \"" + *s + "\"");
    }
    return Status::Ok();
  };
}

FieldReader duration_field(milliseconds& out, milliseconds min, milliseconds max) {
  return [&out, min, max](const YAML::Node& v, const Where& w) -> Status {
    auto s = scalar(v, w, "a duration like 10s");
    if (!s) return Error{s.message()};
    auto d = parse_duration(*s);
    if (!d) return w.error(d.message());
    if (*d < min || *d > max) {
      return w.error(*s + " is out of range [" + std::to_string(min.count()) + " ms, " + std::to_string(max.count()) + " ms]");
    }
    out = *d;
    return Status::Ok();
  };
}

FieldReader bytes_field(int64_t& out, int64_t min, int64_t max) {
  return [&out, min, max](const YAML::Node& v, const Where& w) -> Status {
    auto s = scalar(v, w, "a size like 64Mi");
    if (!s) return Error{s.message()};
    auto q = Quantity::parse(*s);
    if (!q) return w.error("expected a size like 64Mi or 1000000: " + q.message());
    auto b = q->value();
    if (!b || q->negative()) return w.error("\"" + *s + "\" is not a size in bytes");
    if (*b < min || *b > max) return w.error(*s + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "] bytes");
    out = *b;
    return Status::Ok();
  };
}

int line_of(const YAML::Node& root, const std::string& dotted) {
  YAML::Node node;
  node.reset(root);
  int line = -1;
  size_t start = 0;
  while (start <= dotted.size()) {
    const size_t dot = dotted.find('.', start);
    const std::string key = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node.IsMap()) break;
    YAML::Node next;
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (it->first.Scalar() == key) {
        line = it->first.Mark().line;
        next = it->second;
        break;
      }
    }
    if (!next.IsDefined()) break;
    // reset, not operator=: assigning to a Node that shares root's data
    // would overwrite root itself (yaml-cpp's reference semantics).
    node.reset(next);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return line;
}

}  // namespace fracpack::config::yaml
