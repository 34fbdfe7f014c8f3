//===- Json.h - JSON values, strictly read and written ----------*- C++ -*-===//
//
// The runtime's JSON value; nlohmann-json reads and writes it (Json.cpp), so
// public headers need no third-party include. Reading is strict (RFC 8259:
// no comments, no trailing commas, no NaN, UTF-8 checked, duplicate keys
// rejected) so a damaged cache entry fails loudly instead of half-parsing.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_JSON_H
#define ATTNC_RUNTIME_JSON_H

#include "attnc/runtime/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace attnc {

class Json {
public:
  // Integers that fit int64 keep their exact value (Int); every other number
  // is a Double.
  enum class Kind { Null, Bool, Int, Double, String, Array, Object };
  using Array = std::vector<Json>;
  using Member = std::pair<std::string, Json>;
  // Members keep insertion order so written files are stable and readable.
  using Object = std::vector<Member>;

  Json() = default;
  Json(std::nullptr_t) {}
  Json(bool value) : value_(value) {}
  Json(int value) : value_(static_cast<int64_t>(value)) {}
  Json(int64_t value) : value_(value) {}
  Json(uint32_t value) : value_(static_cast<int64_t>(value)) {}
  Json(double value) : value_(value) {}
  Json(const char *value) : value_(std::string(value)) {}
  Json(std::string value) : value_(std::move(value)) {}
  Json(std::string_view value) : value_(std::string(value)) {}
  Json(Array value) : value_(std::move(value)) {}
  Json(Object value) : value_(std::move(value)) {}

  static Json array() { return Json(Array{}); }
  static Json object() { return Json(Object{}); }

  Kind kind() const { return static_cast<Kind>(value_.index()); }
  bool isNull() const { return kind() == Kind::Null; }
  bool isBool() const { return kind() == Kind::Bool; }
  bool isInt() const { return kind() == Kind::Int; }
  bool isNumber() const {
    return kind() == Kind::Int || kind() == Kind::Double;
  }
  bool isString() const { return kind() == Kind::String; }
  bool isArray() const { return kind() == Kind::Array; }
  bool isObject() const { return kind() == Kind::Object; }

  // Typed access; the kind must match (asserted). asDouble accepts Int too.
  bool asBool() const { return std::get<bool>(value_); }
  int64_t asInt() const { return std::get<int64_t>(value_); }
  double asDouble() const;
  const std::string &asString() const { return std::get<std::string>(value_); }
  const Array &asArray() const { return std::get<Array>(value_); }
  Array &asArray() { return std::get<Array>(value_); }
  const Object &asObject() const { return std::get<Object>(value_); }
  Object &asObject() { return std::get<Object>(value_); }

  // Object member lookup; null when absent or when this is not an object.
  const Json *find(std::string_view key) const;
  // Sets (replacing) an object member; this must be an object.
  Json &set(std::string key, Json value);
  // Appends to an array; this must be an array.
  void push(Json value) { asArray().push_back(std::move(value)); }

  bool operator==(const Json &other) const { return value_ == other.value_; }

private:
  std::variant<std::nullptr_t, bool, int64_t, double, std::string, Array,
               Object>
      value_;
};

const char *jsonKindName(Json::Kind kind);

// Parses a complete document; trailing non-whitespace is an error. Errors are
// ParseError with "line L, column C: ..." positions.
Result<Json> parseJson(std::string_view text);

// Writes JSON. indent < 0 gives one line; otherwise members and elements go
// on their own lines, indented by `indent` spaces per level. Non-finite
// doubles have no JSON form and are written as null.
std::string writeJson(const Json &value, int indent = 2);

} // namespace attnc

#endif // ATTNC_RUNTIME_JSON_H
