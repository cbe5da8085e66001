// check_json_text: the large-body validator, held to simdjson's DOM parser
// (which validates small bodies) so that whether a body is JSON never
// depends on its size.
#include "common/json/check.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <random>
#include <string>

namespace fracpack::k8s::check_test {
namespace {

bool dom_accepts(const std::string& text) {
  static simdjson::dom::parser parser;
  return !parser.parse(text).error();
}

TEST(JsonCheck, AcceptsJsonAndNamesWhereAndWhatIsWrong) {
  for (const std::string ok : {"0", " -0.5e+3 ", "\"\"", "[]", "{}", R"({"a":[1,2,{"b":null}],"c":true,"d":false})",
                               R"(["\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00"])", "[\"\x7f\"]", " \t\r\n[ 1 , 2 ] \n"}) {
    EXPECT_TRUE(check_json_text(ok, "the body").ok()) << ok;
    EXPECT_TRUE(dom_accepts(ok)) << ok;
  }
  struct Case {
    std::string text, message;
  } bad[] = {
      {"", "invalid JSON in the body at byte 0: expected a value"},
      {"[1,]", "at byte 3: expected a value"},
      {R"({"a" 1})", "at byte 5: expected ':'"},
      {R"({"a":1,})", "at byte 7: expected a string key"},
      {R"({1:2})", "at byte 1: expected a string key"},
      {"[1 2]", "at byte 3: expected ',' or ']'"},
      {R"({"a":1])", "at byte 6: expected ',' or '}'"},
      {"[NaN]", "at byte 1: expected a value"},
      {"[tru]", "at byte 1: expected a value"},
      {"01", "at byte 1: trailing content after the value"},
      {"[1.]", "at byte 3: a digit must follow a number's '.'"},
      {"[1e]", "at byte 3: a digit must follow a number's exponent"},
      {"[-]", "at byte 1: expected a value"},
      {R"(["\x"])", "at byte 3: an invalid escape"},
      {R"(["\u12"])", "\\u needs four hexadecimal digits"},
      {R"(["\udc00"])", "a lone low surrogate"},
      {R"(["\ud800x"])", "a high surrogate without its low half"},
      {R"(["\ud800\u0041"])", "a high surrogate without its low half"},
      {"[\"a\x01\"]", "at byte 3: a control character in a string"},
      {"[\"abc", "unclosed string"},
      {"[1", "expected ',' or ']'"},
      {"{} {}", "at byte 3: trailing content after the value"},
      // simdjson counts non-empty arrays and objects: 1 023 at most.
      {std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']'), "more than 1023 nested"},
      {std::string(kMaxJsonDepth, '[') + "0" + std::string(kMaxJsonDepth, ']'), "more than 1023 nested"},
      {std::string(kMaxJsonDepth - 1, '[') + "{\"a\":1}" + std::string(kMaxJsonDepth - 1, ']'), "more than 1023 nested"},
  };
  for (const auto& c : bad) {
    const Status s = check_json_text(c.text, "the body");
    ASSERT_FALSE(s.ok()) << c.text;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << c.text << " -> " << s.message();
    EXPECT_FALSE(dom_accepts(c.text)) << c.text;
  }
  // As deep as simdjson allows is still JSON.
  for (const std::string& deep : {std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']'),
                                  std::string(kMaxJsonDepth - 1, '[') + "0" + std::string(kMaxJsonDepth - 1, ']'),
                                  std::string(kMaxJsonDepth - 1, '[') + "{}" + std::string(kMaxJsonDepth - 1, ']')}) {
    EXPECT_TRUE(check_json_text(deep, "").ok()) << deep.size();
    EXPECT_TRUE(dom_accepts(deep)) << deep.size();
  }
}

TEST(JsonCheck, FindsTheWatchedArrayItsElementsAndTheirField) {
  WatchedArray w{"Nodes", "items", "metadata", "name", 0, 0, 0, {}, false, SIZE_MAX, false};
  const std::string text =
      R"({"Pod":{"Nodes":{"items":[1]}},"Nodes":{"x":{"items":[2]},"items":[ {"metadata":{"name":"a\"b","labels":{"name":"no"}}},)"
      R"(7, {"spec":{"metadata":{"name":"no"}}}, {"metadata":{"name":"x","name":null}}, {"metadata":[]}, {"metadata":{"name":1}},)"
      R"({"metadata":{"n\u0061me":"y"}} ]},"items":[3]})";
  ASSERT_TRUE(check_json_text(text, "", &w).ok());
  EXPECT_EQ(w.seen, 1);
  EXPECT_FALSE(w.ambiguous);
  EXPECT_EQ(text.substr(w.begin, 2), "[ ");
  EXPECT_EQ(text.substr(w.end - 2, 2), " ]");
  ASSERT_EQ(w.elements.size(), 7u);
  auto element = [&](size_t i) { return text.substr(w.elements[i].begin, w.elements[i].end - w.elements[i].begin); };
  EXPECT_EQ(element(0), R"({"metadata":{"name":"a\"b","labels":{"name":"no"}}})");
  EXPECT_EQ(w.elements[0].field, WatchedElement::Field::kString);
  EXPECT_EQ(text.substr(w.elements[0].field_begin, w.elements[0].field_end - w.elements[0].field_begin), R"("a\"b")");
  EXPECT_TRUE(w.elements[0].field_escaped);
  EXPECT_EQ(element(1), "7");
  EXPECT_EQ(w.elements[2].field, WatchedElement::Field::kAbsent);
  EXPECT_EQ(w.elements[3].field, WatchedElement::Field::kNull) << "the last of repeated keys";
  EXPECT_TRUE(w.elements[4].parent_not_object);
  EXPECT_TRUE(w.elements[5].field_not_string);
  EXPECT_TRUE(w.elements[6].ambiguous) << "a key with escapes is not compared";
  // Past max_elements the watch stops; the check goes on to the end.
  WatchedArray bounded{"Nodes", "items", "metadata", "name", 0, 0, 0, {}, false, 3, false};
  ASSERT_TRUE(check_json_text(text, "", &bounded).ok());
  EXPECT_TRUE(bounded.too_many);
  EXPECT_EQ(bounded.elements.size(), 3u);
  WatchedArray bounded_bad{"Nodes", "items", "metadata", "name", 0, 0, 0, {}, false, 3, false};
  EXPECT_FALSE(check_json_text(text + " x", "", &bounded_bad).ok());
  // A watched key spelled with escapes makes the whole watch ambiguous.
  WatchedArray escaped{"Nodes", "items", "metadata", "name", 0, 0, 0, {}, false, SIZE_MAX, false};
  ASSERT_TRUE(check_json_text(R"({"N\u006fdes":{"items":[]}})", "", &escaped).ok());
  EXPECT_TRUE(escaped.ambiguous);
}

// Random documents (strings long enough for the eight-byte path, escapes,
// surrogates, numbers, nesting), each then broken a few ways: both
// validators agree on every one.
class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}
  std::string document() {
    std::string out;
    value(out, 0);
    return out;
  }

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  void space(std::string& out) {
    static const char* kSpaces[] = {"", "", "", " ", "\n  ", "\t", "\r\n"};
    out += kSpaces[pick(7)];
  }
  void string(std::string& out) {
    out += '"';
    const int n = pick(3) == 0 ? pick(40) : pick(6);
    for (int i = 0; i < n; ++i) {
      switch (pick(12)) {
        case 0: out += "\\n"; break;
        case 1: out += "\\\""; break;
        case 2: out += "\\\\"; break;
        case 3: out += "\\u00e9"; break;
        case 4: out += "\\ud83d\\ude00"; break;
        case 5: out += "\xc3\xa9"; break;
        default: out += static_cast<char>('a' + pick(26)); break;
      }
    }
    out += '"';
  }
  void number(std::string& out) {
    if (pick(2)) out += '-';
    out += pick(4) == 0 ? "0" : std::to_string(1 + pick(99999));
    if (pick(3) == 0) out += "." + std::to_string(pick(1000));
    if (pick(4) == 0) out += std::string(pick(2) ? "e" : "E") + (pick(2) ? "-" : "") + std::to_string(pick(30));
  }
  void value(std::string& out, int depth) {
    space(out);
    const int kind = depth > 6 ? 2 + pick(5) : pick(7);
    switch (kind) {
      case 0: {
        out += '{';
        const int n = pick(5);
        for (int i = 0; i < n; ++i) {
          if (i) out += ',';
          space(out);
          string(out);
          space(out);
          out += ':';
          value(out, depth + 1);
        }
        space(out);
        out += '}';
        break;
      }
      case 1: {
        out += '[';
        const int n = pick(5);
        for (int i = 0; i < n; ++i) {
          if (i) out += ',';
          value(out, depth + 1);
        }
        space(out);
        out += ']';
        break;
      }
      case 2:
      case 3: string(out); break;
      case 4: number(out); break;
      case 5: out += pick(2) ? "true" : "false"; break;
      default: out += "null"; break;
    }
    space(out);
  }
  std::mt19937_64 rng_;
};

TEST(JsonCheck, AgreesWithSimdjsonOnRandomAndBrokenDocuments) {
  Generator gen(7);
  std::mt19937_64 rng(11);
  // ASCII only, and no digits (a digit run can grow past simdjson's range,
  // which only simdjson refuses): breaks of grammar, not of magnitude.
  const std::string kInserts = "{}[],:\"\\ tfnu-.\x01";
  size_t documents = 0, broken = 0, refused = 0;
  for (int d = 0; d < 3000; ++d) {
    const std::string doc = gen.document();
    ASSERT_TRUE(check_json_text(doc, "").ok()) << doc << ": " << check_json_text(doc, "").message();
    ASSERT_TRUE(dom_accepts(doc)) << doc;
    ++documents;
    for (int m = 0; m < 8; ++m) {
      std::string b = doc;
      const size_t at = b.empty() ? 0 : rng() % b.size();
      switch (rng() % 3) {
        case 0: b.erase(at, 1); break;
        case 1: b.insert(b.begin() + static_cast<long>(at), kInserts[rng() % kInserts.size()]); break;
        default: if (!b.empty()) b[at] = kInserts[rng() % kInserts.size()]; break;
      }
      if (!simdjson::validate_utf8(b.data(), b.size())) continue;  // UTF-8 is stage 1's, not the checker's
      const bool dom = dom_accepts(b);
      ASSERT_EQ(check_json_text(b, "").ok(), dom) << "document: " << doc << "\nbroken: " << b;
      ++broken;
      refused += dom ? 0 : 1;
    }
  }
  // The breaks mostly break it (a test that never refused would prove little).
  EXPECT_GT(refused, broken / 2) << documents << " documents";
}

}  // namespace
}  // namespace fracpack::k8s::check_test
