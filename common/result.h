// Result<T>: a value or an error message, for every operation that can fail on
// bad input, in every layer. The scheduling core never throws on bad input and
// never crashes: it returns an Error whose message names the object and the
// field at fault. Header-only, standard library only: the one header of
// common/ that scheduling/ includes (it links nothing but the standard library).
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace fracpack {

struct Error {
  std::string message;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}      // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<Error>(v_); }
  const std::string& message() const { return error().message; }

 private:
  std::variant<T, Error> v_;
};

// Status: success or an error, for operations without a value.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error.message)), failed_(true) {}  // NOLINT
  static Status Ok() { return {}; }

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const std::string& message() const { return error_; }

 private:
  std::string error_;
  bool failed_ = false;
};

// Prefixes an error message with context ("pod ml/a: " + "container x: ...").
inline Error with_context(std::string_view context, const Error& e) {
  std::string m;
  m.reserve(context.size() + 2 + e.message.size());
  m.append(context).append(": ").append(e.message);
  return Error{std::move(m)};
}

}  // namespace fracpack
