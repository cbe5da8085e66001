// Internal to the adapters: simdjson on-demand decoders of Kubernetes
// objects, for the translation units that parse API bodies (lists, watch
// events, extender requests). Keep this header out of other headers: the
// amalgamated simdjson.h is large and costs every file that includes it.
#pragma once

#include <simdjson.h>

#include <string>
#include <string_view>
#include <vector>

#include "k8s/objects.h"

namespace fracpack::k8s::json {

namespace od = simdjson::ondemand;

// "expected a string at metadata.name" and the like.
Error type_error(std::string_view path, std::string_view expected);
Error syntax_error(simdjson::error_code code, std::string_view where);

// Steps over a null value (the iterator must move past it).
inline void consume_null(od::value& v) {
  bool is_null = false;
  auto e = v.is_null().get(is_null);
  (void)e;
}

// Iterates an object's fields, calling fn(key, value) -> Status.
template <class Fn>
Status for_each_field(od::object obj, std::string_view path, Fn fn) {
  for (auto fr : obj) {
    od::field f;
    if (auto e = std::move(fr).get(f)) return syntax_error(e, path);
    std::string_view key;
    if (auto e = f.unescaped_key().get(key)) return syntax_error(e, path);
    if (Status s = fn(key, f.value()); !s.ok()) return s;
  }
  return Status::Ok();
}

// The same over a value; null stands for an empty object (Kubernetes sends
// "labels": null).
template <class Fn>
Status for_each_field(od::value v, std::string_view path, Fn fn) {
  od::json_type t;
  if (auto e = v.type().get(t)) return syntax_error(e, path);
  if (t == od::json_type::null) {
    consume_null(v);
    return Status::Ok();
  }
  if (t != od::json_type::object) return type_error(path, "an object");
  od::object obj;
  if (auto e = v.get_object().get(obj)) return syntax_error(e, path);
  return for_each_field(obj, path, fn);
}

// Iterates an array's elements, calling fn(value, index) -> Status; null
// stands for an empty array.
template <class Fn>
Status for_each_element(od::value v, std::string_view path, Fn fn) {
  od::json_type t;
  if (auto e = v.type().get(t)) return syntax_error(e, path);
  if (t == od::json_type::null) {
    consume_null(v);
    return Status::Ok();
  }
  if (t != od::json_type::array) return type_error(path, "an array");
  od::array arr;
  if (auto e = v.get_array().get(arr)) return syntax_error(e, path);
  size_t i = 0;
  for (auto er : arr) {
    od::value el;
    if (auto e = std::move(er).get(el)) return syntax_error(e, path);
    if (Status s = fn(el, i++); !s.ok()) return s;
  }
  return Status::Ok();
}

// Iterates the objects of an array, calling fn(object, where) -> Status;
// `where` is "<prefix>[i]". An element that is not an object is an error
// naming it.
template <class Fn>
Status for_each_object(od::array arr, std::string_view prefix, Fn fn) {
  size_t i = 0;
  for (auto er : arr) {
    const std::string where = std::string(prefix) + "[" + std::to_string(i++) + "]";
    od::object obj;
    if (er.get_object().get(obj)) return Error{where + ": expected an object"};
    if (Status s = fn(obj, where); !s.ok()) return s;
  }
  return Status::Ok();
}

// The same over a value; `not_array` is the error when it is another type.
template <class Fn>
Status for_each_object(od::value v, std::string_view prefix, std::string_view not_array, Fn fn) {
  od::array arr;
  if (auto e = v.get_array().get(arr)) {
    return e == simdjson::INCORRECT_TYPE ? Error{std::string(not_array)} : syntax_error(e, prefix);
  }
  return for_each_object(arr, prefix, fn);
}

// Appends one T per object of the array `v` to `out`, each read by
// parse(object, where, T&) -> Status.
template <class T, class Parse>
Status append_objects(od::value v, std::string_view prefix, std::string_view not_array, std::vector<T>& out, Parse parse) {
  return for_each_object(v, prefix, not_array, [&](od::object obj, const std::string& where) -> Status {
    T item;
    if (Status s = parse(obj, where, item); !s.ok()) return s;
    out.push_back(std::move(item));
    return Status::Ok();
  });
}

// Typed reads of one field of a record (an annotation's JSON), with errors
// "<where><sep><key> must be ...".
class FieldValue {
 public:
  FieldValue(od::value v, std::string_view where, std::string_view key, std::string_view sep = ": ")
      : v_(v), where_(where), key_(key), sep_(sep) {}
  Status integer(int64_t lo, int64_t hi, int64_t& out) {
    auto e = v_.get_int64().get(out);
    if (broken(e)) return syntax_error(e, where_);
    if (e || out < lo || out > hi) return fail("must be an integer " + std::to_string(lo) + ".." + std::to_string(hi));
    return Status::Ok();
  }
  template <class Int>
  Status integer(int64_t lo, int64_t hi, Int& out) {
    int64_t x = 0;
    Status s = integer(lo, hi, x);
    if (s.ok()) out = static_cast<Int>(x);
    return s;
  }
  Status string(std::string& out) {
    std::string_view s;
    auto e = v_.get_string().get(s);
    if (broken(e)) return syntax_error(e, where_);
    if (e) return fail("must be a string");
    out = std::string(s);
    return Status::Ok();
  }
  Status boolean(bool& out) {
    auto e = v_.get_bool().get(out);
    if (broken(e)) return syntax_error(e, where_);
    if (e) return fail("must be true or false");
    return Status::Ok();
  }
  od::value& value() { return v_; }
  // The document itself is malformed (not merely a value of another type).
  static bool broken(simdjson::error_code e) {
    return e != simdjson::SUCCESS && e != simdjson::INCORRECT_TYPE && e != simdjson::NUMBER_ERROR &&
           e != simdjson::NUMBER_OUT_OF_RANGE;
  }
  Error fail(const std::string& what) const {
    return Error{std::string(where_) + std::string(sep_) + std::string(key_) + " " + what};
  }

 private:
  od::value v_;
  std::string_view where_, key_, sep_;
};

// Runs fn(root value) over the text, padding it into a buffer, and checks
// that nothing follows the value.
// This thread's parser (one per thread, whatever the caller: a parser keeps
// buffers sized for the largest document it has seen).
simdjson::ondemand::parser& thread_parser();

template <class Fn>
Status with_document(std::string_view text, Fn fn) {
  simdjson::ondemand::parser& parser = thread_parser();
  simdjson::padded_string padded(text);
  simdjson::ondemand::document doc;
  if (auto e = parser.iterate(padded).get(doc)) return syntax_error(e, "");
  simdjson::ondemand::value root;
  if (auto e = doc.get_value().get(root)) return syntax_error(e, "");
  if (Status s = fn(root); !s.ok()) return s;
  if (!doc.current_location().error()) return Error{"invalid JSON: trailing content after the value"};
  return Status::Ok();
}

// for_each_object over a whole document (an annotation's JSON record),
// which must be an array with nothing after it. Not with_document: a
// document that is no array (a bare word) must say "expected <not_array>".
template <class Fn>
Status for_each_object_in(std::string_view text, std::string_view prefix, std::string_view not_array, Fn fn) {
  simdjson::padded_string padded(text);
  od::document doc;
  if (auto e = thread_parser().iterate(padded).get(doc)) return syntax_error(e, "");
  od::array arr;
  if (auto e = doc.get_array().get(arr)) {
    return e == simdjson::INCORRECT_TYPE ? Error{std::string(not_array)} : syntax_error(e, "");
  }
  if (Status s = for_each_object(arr, prefix, fn); !s.ok()) return s;
  if (!doc.current_location().error()) return Error{"invalid JSON: trailing content after the array"};
  return Status::Ok();
}

// Decode an object (consumed) into the structure.
Status decode_meta(od::value v, const Selection& sel, ObjectMeta& out);
Status decode_pod(od::object v, const Selection& sel, Pod& out);
Status decode_node(od::object v, const Selection& sel, Node& out);
Status decode_config_map(od::object v, const Selection& sel, ConfigMap& out);
Status decode_resource_quota(od::object v, const Selection& sel, ResourceQuota& out);

// A string, or "" for null. Errors name `path`.
Status get_string(od::value v, std::string_view path, std::string& out);
// A quantity: a JSON string, or a bare number (Kubernetes accepts both); its text.
Status get_quantity_text(od::value v, std::string_view path, std::string& out);

}  // namespace fracpack::k8s::json
