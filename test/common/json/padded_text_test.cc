// PaddedText and PaddedString: padding that is a fact of the type. No
// string converts to padded text; whatever is done to a PaddedString, its
// text is followed by kPadding zero bytes.
#include "common/json/padded_text.h"

#include <string>
#include <string_view>
#include <type_traits>

#include <gtest/gtest.h>

namespace fracpack {
namespace {

// Padded text comes only from a PaddedString: a string, a view or a
// literal is not padded text, explicitly or implicitly.
static_assert(!std::is_convertible_v<std::string, PaddedText>);
static_assert(!std::is_constructible_v<PaddedText, std::string>);
static_assert(!std::is_constructible_v<PaddedText, std::string_view>);
static_assert(!std::is_constructible_v<PaddedText, const char*>);
// A PaddedString is made from text on purpose (a copy), never by accident.
static_assert(!std::is_convertible_v<std::string, PaddedString>);
static_assert(!std::is_convertible_v<std::string_view, PaddedString>);
static_assert(std::is_constructible_v<PaddedString, std::string_view>);
static_assert(std::is_nothrow_move_constructible_v<PaddedString>);

// The text is `want`, and kPadding zero bytes follow it.
void expect_padded(const PaddedString& s, std::string_view want) {
  ASSERT_EQ(s.text(), want);
  const PaddedText t = s.padded();
  ASSERT_EQ(t.text(), want);
  ASSERT_EQ(t.capacity(), want.size() + PaddedText::kPadding);
  for (size_t i = 0; i < PaddedText::kPadding; ++i) ASSERT_EQ(t.data()[want.size() + i], '\0') << i;
}

TEST(PaddedString, EveryWayOfMakingItKeepsThePadding) {
  expect_padded(PaddedString(), "");
  expect_padded(PaddedString(std::string_view("{}")), "{}");
  PaddedString s;
  s.append("ab", 2);
  s.append("cd", 2);
  expect_padded(s, "abcd");
  s.resize(2);  // a shrink: the bytes past the text are padding again
  expect_padded(s, "ab");
  s.resize(4);
  expect_padded(s, std::string_view("ab\0\0", 4));
  s.data()[2] = 'x';
  s.data()[3] = 'y';
  expect_padded(s, "abxy");
  const std::string big(300000, 'z');
  s.reserve(big.size());
  s.append(big.data(), big.size());
  expect_padded(s, "abxy" + big);
  PaddedString copy = s;
  expect_padded(copy, "abxy" + big);
  PaddedString moved = std::move(s);
  expect_padded(moved, "abxy" + big);
  expect_padded(s, "");  // NOLINT(bugprone-use-after-move): a moved-from string is empty and padded
  s = std::move(moved);
  expect_padded(s, "abxy" + big);
  s.clear();
  expect_padded(s, "");
}

}  // namespace
}  // namespace fracpack
