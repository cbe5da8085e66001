#include "test/manifests/chart_renderer.h"

#include <cctype>
#include <functional>
#include <optional>
#include <vector>

namespace fracpack::testing {
namespace {

struct Token {
  bool action = false;
  std::string text;  // text, or the action's content without {{ }} and trim markers
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Splits into text and actions, applying the trim markers to the
// neighbouring text (lexically, as text/template does).
Result<std::vector<Token>> tokenize(std::string_view in) {
  std::vector<Token> out;
  size_t i = 0;
  bool trim_next = false;
  while (i < in.size()) {
    const size_t open = in.find("{{", i);
    std::string text(in.substr(i, open == std::string_view::npos ? std::string_view::npos : open - i));
    if (trim_next) {
      size_t k = 0;
      while (k < text.size() && is_space(text[k])) ++k;
      text.erase(0, k);
      trim_next = false;
    }
    if (open == std::string_view::npos) {
      out.push_back({false, text});
      break;
    }
    size_t start = open + 2;
    if (start + 1 < in.size() && in[start] == '-' && is_space(in[start + 1])) {
      while (!text.empty() && is_space(text.back())) text.pop_back();
      start += 2;
    }
    out.push_back({false, text});
    const size_t close = in.find("}}", start);
    if (close == std::string_view::npos) return Error{"unterminated {{ at offset " + std::to_string(open)};
    size_t end = close;
    if (end >= 2 && in[end - 1] == '-' && is_space(in[end - 2])) {
      trim_next = true;
      end -= 2;
    }
    std::string action(in.substr(start, end - start));
    while (!action.empty() && is_space(action.back())) action.pop_back();
    while (!action.empty() && is_space(action.front())) action.erase(0, 1);
    out.push_back({true, action});
    i = close + 2;
  }
  return out;
}

// A value: a YAML node (from the values) or a string produced by a function.
struct Value {
  YAML::Node node;  // when has_node (a default Node counts as a defined null)
  bool has_node = false;
  std::string str;
  bool is_bool = false, boolean = false;

  static Value of(std::string s) {
    Value v;
    v.str = std::move(s);
    return v;
  }
  static Value of_bool(bool b) {
    Value v;
    v.is_bool = true;
    v.boolean = b;
    v.str = b ? "true" : "false";
    return v;
  }
  bool is_node() const { return has_node; }
  Result<std::string> text() const {
    if (is_bool) return str;
    if (!is_node()) return str;
    if (node.IsScalar()) return node.Scalar();
    if (node.IsNull()) return std::string();
    return Error{"a map or list used as text (use toYaml)"};
  }
  bool truthy() const {
    if (is_bool) return boolean;
    if (!is_node()) return !str.empty();
    if (node.IsNull()) return false;
    if (node.IsMap() || node.IsSequence()) return node.size() > 0;
    const std::string& s = node.Scalar();
    if (node.Tag() == "!") return !s.empty();  // a quoted string
    return !(s.empty() || s == "false" || s == "0");
  }
};

std::vector<std::string> words(const std::string& action, std::string* error) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < action.size()) {
    if (is_space(action[i])) {
      ++i;
      continue;
    }
    if (action[i] == '"') {
      std::string w = "\"";
      ++i;
      while (i < action.size() && action[i] != '"') {
        if (action[i] == '\\' && i + 1 < action.size()) w += action[i++];
        w += action[i++];
      }
      if (i >= action.size()) {
        *error = "unterminated string in {{ " + action + " }}";
        return {};
      }
      out.push_back(w + "\"");
      ++i;
      continue;
    }
    if (action[i] == '|') {
      out.push_back("|");
      ++i;
      continue;
    }
    if (action[i] == '(' || action[i] == ')') {
      *error = "parentheses are outside the supported subset: {{ " + action + " }}";
      return {};
    }
    size_t j = i;
    while (j < action.size() && !is_space(action[j]) && action[j] != '|') ++j;
    out.push_back(action.substr(i, j - i));
    i = j;
  }
  return out;
}

std::string indent(const std::string& s, size_t n) {
  const std::string pad(n, ' ');
  std::string out = pad;
  for (char c : s) {
    out += c;
    if (c == '\n') out += pad;
  }
  return out;
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

class Evaluator {
 public:
  explicit Evaluator(const ChartContext& c) : c_(c) {}

  Result<Value> operand(const std::string& w) const {
    if (w.size() >= 2 && w.front() == '"') {
      std::string s;
      for (size_t i = 1; i + 1 < w.size(); ++i) {
        if (w[i] == '\\' && i + 2 < w.size()) ++i;
        s += w[i];
      }
      return Value::of(s);
    }
    if (!w.empty() && (std::isdigit(static_cast<unsigned char>(w[0])) || w[0] == '-')) return Value::of(w);
    if (w == "true" || w == "false") return Value::of_bool(w == "true");
    if (w == ".Release.Namespace") return Value::of(c_.release_namespace);
    if (w == ".Release.Name") return Value::of(c_.release_name);
    if (w == ".Chart.Name") return Value::of(c_.chart_name);
    if (w == ".Chart.AppVersion") return Value::of(c_.chart_app_version);
    if (w.rfind(".Values.", 0) == 0) {
      YAML::Node node = YAML::Clone(c_.values);
      size_t start = 8;
      while (true) {
        const size_t dot = w.find('.', start);
        const std::string key = w.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        if (!node.IsMap() || !node[key].IsDefined()) return Error{"no value " + w};
        node.reset(node[key]);
        if (dot == std::string::npos) break;
        start = dot + 1;
      }
      Value v;
      v.node = node;
      v.has_node = true;
      return v;
    }
    return Error{"\"" + w + "\" is outside the supported subset"};
  }

  // name args... [piped]
  Result<Value> call(const std::string& name, const std::vector<Value>& args) const {
    auto need = [&](size_t n) -> Status {
      if (args.size() != n) return Error{name + " takes " + std::to_string(n) + " arguments, got " + std::to_string(args.size())};
      return Status::Ok();
    };
    auto text = [&](size_t i) { return args[i].text(); };
    if (name == "quote") {
      if (auto s = need(1); !s.ok()) return Error{s.message()};
      auto t = text(0);
      if (!t) return Error{t.message()};
      return Value::of(quote(*t));
    }
    if (name == "toYaml") {
      if (auto s = need(1); !s.ok()) return Error{s.message()};
      if (!args[0].is_node()) return Value::of(args[0].str);
      // Helm's toYaml writes block style whatever the values file used.
      YAML::Node block = YAML::Clone(args[0].node);
      std::function<void(YAML::Node)> to_block = [&](YAML::Node n) {
        if (!n.IsMap() && !n.IsSequence()) return;
        n.SetStyle(YAML::EmitterStyle::Block);
        for (auto it = n.begin(); it != n.end(); ++it) to_block(n.IsMap() ? it->second : *it);
      };
      to_block(block);
      YAML::Emitter e;
      e << block;
      return Value::of(e.c_str());
    }
    if (name == "indent" || name == "nindent") {
      if (auto s = need(2); !s.ok()) return Error{s.message()};
      auto n = text(0), t = text(1);
      if (!n || !t) return Error{"indent: bad arguments"};
      const std::string out = indent(*t, std::stoul(*n));
      return Value::of(name == "nindent" ? "\n" + out : out);
    }
    if (name == "trimSuffix") {
      if (auto s = need(2); !s.ok()) return Error{s.message()};
      auto suffix = text(0), t = text(1);
      if (!suffix || !t) return Error{"trimSuffix: bad arguments"};
      std::string out = *t;
      if (out.size() >= suffix->size() && out.compare(out.size() - suffix->size(), suffix->size(), *suffix) == 0) out.resize(out.size() - suffix->size());
      return Value::of(out);
    }
    if (name == "default") {
      if (auto s = need(2); !s.ok()) return Error{s.message()};
      return args[1].truthy() ? args[1] : args[0];
    }
    if (name == "eq" || name == "ne") {
      if (auto s = need(2); !s.ok()) return Error{s.message()};
      auto a = text(0), b = text(1);
      if (!a || !b) return Error{name + ": bad arguments"};
      return Value::of_bool((*a == *b) == (name == "eq"));
    }
    return Error{"function \"" + name + "\" is outside the supported subset"};
  }

  Result<Value> pipeline(const std::string& action) const {
    std::string error;
    auto ws = words(action, &error);
    if (!error.empty()) return Error{error};
    std::optional<Value> piped;
    size_t i = 0;
    while (i < ws.size()) {
      size_t j = i;
      while (j < ws.size() && ws[j] != "|") ++j;
      if (j == i) return Error{"empty command in {{ " + action + " }}"};
      const std::string& head = ws[i];
      const bool is_function = head[0] != '.' && head[0] != '"' && !std::isdigit(static_cast<unsigned char>(head[0])) && head != "true" && head != "false";
      if (is_function) {
        std::vector<Value> args;
        for (size_t k = i + 1; k < j; ++k) {
          auto v = operand(ws[k]);
          if (!v) return Error{v.message() + " in {{ " + action + " }}"};
          args.push_back(*v);
        }
        if (piped) args.push_back(*piped);
        auto r = call(head, args);
        if (!r) return Error{r.message() + " in {{ " + action + " }}"};
        piped = *r;
      } else {
        if (j - i != 1 || piped) return Error{"a value cannot take arguments in {{ " + action + " }}"};
        auto v = operand(head);
        if (!v) return Error{v.message() + " in {{ " + action + " }}"};
        piped = *v;
      }
      i = j + 1;
    }
    if (!piped) return Error{"empty action"};
    return *piped;
  }

 private:
  const ChartContext& c_;
};

}  // namespace

Result<std::string> render_template(std::string_view text, const ChartContext& context) {
  auto tokens = tokenize(text);
  if (!tokens) return Error{tokens.message()};
  Evaluator eval(context);
  struct Frame {
    bool parent_active;
    bool taken;   // the branch being emitted
    bool in_else;
  };
  std::vector<Frame> stack;
  auto active = [&] { return stack.empty() || (stack.back().parent_active && stack.back().taken); };
  std::string out;
  for (const Token& t : *tokens) {
    if (!t.action) {
      if (active()) out += t.text;
      continue;
    }
    const std::string& a = t.text;
    if (a.rfind("/*", 0) == 0) continue;
    if (a.rfind("if ", 0) == 0) {
      const bool parent = active();
      bool cond = false;
      if (parent) {
        auto v = eval.pipeline(a.substr(3));
        if (!v) return Error{v.message()};
        cond = v->truthy();
      }
      stack.push_back({parent, cond, false});
    } else if (a == "else") {
      if (stack.empty() || stack.back().in_else) return Error{"{{ else }} without {{ if }}"};
      stack.back().taken = !stack.back().taken;
      stack.back().in_else = true;
    } else if (a == "end") {
      if (stack.empty()) return Error{"{{ end }} without {{ if }}"};
      stack.pop_back();
    } else if (a.rfind("range ", 0) == 0 || a.rfind("with ", 0) == 0 || a.rfind("define ", 0) == 0 || a.rfind("include ", 0) == 0 ||
               a.rfind("else if", 0) == 0 || a.rfind("template ", 0) == 0) {
      return Error{"{{ " + a + " }} is outside the supported subset"};
    } else if (active()) {
      auto v = eval.pipeline(a);
      if (!v) return Error{v.message()};
      auto s = v->text();
      if (!s) return Error{s.message() + " in {{ " + a + " }}"};
      out += *s;
    }
  }
  if (!stack.empty()) return Error{"{{ if }} without {{ end }}"};
  return out;
}

YAML::Node merge_values(const YAML::Node& base, const YAML::Node& overrides) {
  if (!base.IsMap() || !overrides.IsMap()) return YAML::Clone(overrides);
  YAML::Node out = YAML::Clone(base);
  for (auto it = overrides.begin(); it != overrides.end(); ++it) {
    const std::string key = it->first.Scalar();
    out[key] = out[key].IsDefined() ? merge_values(out[key], it->second) : YAML::Clone(it->second);
  }
  return out;
}

}  // namespace fracpack::testing
