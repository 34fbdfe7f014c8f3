//===- Json.cpp - Json values read and written with nlohmann-json ---------===//
//
// nlohmann-json parses (RFC 8259, no comments, UTF-8 checked) and writes;
// the runtime's own Json value keeps nlohmann out of its public headers.
//
//===----------------------------------------------------------------------===//

#include "attnc/runtime/Json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

namespace attnc {

double Json::asDouble() const {
  if (isInt())
    return static_cast<double>(asInt());
  return std::get<double>(value_);
}

const Json *Json::find(std::string_view key) const {
  if (!isObject())
    return nullptr;
  for (const Member &member : asObject())
    if (member.first == key)
      return &member.second;
  return nullptr;
}

Json &Json::set(std::string key, Json value) {
  Object &object = asObject();
  for (Member &member : object)
    if (member.first == key) {
      member.second = std::move(value);
      return member.second;
    }
  object.emplace_back(std::move(key), std::move(value));
  return object.back().second;
}

const char *jsonKindName(Json::Kind kind) {
  switch (kind) {
  case Json::Kind::Null:
    return "null";
  case Json::Kind::Bool:
    return "boolean";
  case Json::Kind::Int:
    return "integer";
  case Json::Kind::Double:
    return "number";
  case Json::Kind::String:
    return "string";
  case Json::Kind::Array:
    return "array";
  case Json::Kind::Object:
    return "object";
  }
  return "unknown";
}

namespace {

using OrderedJson = nlohmann::ordered_json;

// Deep enough for any real file, shallow enough that destroying the value
// (recursive) cannot blow the stack on hostile input.
constexpr int kMaxDepth = 256;

// A forward iterator over the text that publishes how far nlohmann's lexer
// has read, so that errors found while building the value (duplicate keys,
// nesting, overflow) can name a line and column like the parser's own.
class TrackedIterator {
public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char *;
  using reference = const char &;

  TrackedIterator() = default;
  TrackedIterator(const char *at, const char **readHead)
      : at_(at), readHead_(readHead) {}
  reference operator*() const { return *at_; }
  TrackedIterator &operator++() {
    ++at_;
    if (readHead_)
      *readHead_ = at_;
    return *this;
  }
  TrackedIterator operator++(int) {
    TrackedIterator old = *this;
    ++*this;
    return old;
  }
  bool operator==(const TrackedIterator &other) const {
    return at_ == other.at_;
  }

private:
  const char *at_ = nullptr;
  const char **readHead_ = nullptr;
};

// "line L, column C" (1-based) of byte `offset` of `text`.
std::string position(std::string_view text, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

// Builds a Json from nlohmann's SAX events, adding what RFC 8259 leaves to
// the reader: duplicate keys are errors, integers that fit int64 stay exact.
class Builder : public nlohmann::json_sax<OrderedJson> {
public:
  Builder(std::string_view text, const char **readHead)
      : text_(text), readHead_(readHead) {}

  Result<Json> result() {
    if (!error_.isOk())
      return error_;
    return std::move(root_);
  }

  bool null() override { return add(Json(nullptr)); }
  bool boolean(bool value) override { return add(Json(value)); }
  bool number_integer(number_integer_t value) override {
    return add(Json(static_cast<int64_t>(value)));
  }
  bool number_unsigned(number_unsigned_t value) override {
    if (value <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return add(Json(static_cast<int64_t>(value)));
    return add(Json(static_cast<double>(value))); // beyond int64: a double
  }
  bool number_float(number_float_t value, const string_t &token) override {
    if (!std::isfinite(value)) {
      size_t start = text_.rfind(token, offset());
      return fail(start == std::string_view::npos ? offset() : start,
                  "number out of range");
    }
    return add(Json(static_cast<double>(value)));
  }
  bool string(string_t &value) override { return add(Json(std::move(value))); }
  bool binary(binary_t &) override {
    return fail(offset(), "binary values are not JSON");
  }
  bool start_object(std::size_t) override { return open(Json::object()); }
  bool key(string_t &key) override {
    for (const Json::Member &member : stack_.back().asObject())
      if (member.first == key)
        return fail(offset(), "duplicate object key \"" + key + "\"");
    key_ = std::move(key);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(Json::array()); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t bytesRead, const std::string &lastToken,
                   const nlohmann::detail::exception &error) override {
    // nlohmann says "[json.exception.parse_error.101] parse error at line
    // L, column C: <what>" or "[json.exception.out_of_range.406] <what>".
    // Keep the what; name the position as every other error here does (the
    // byte that stopped the lexer; an overflowing number's first digit).
    std::string_view what = error.what();
    if (size_t tag = what.find("] "); tag != std::string_view::npos)
      what.remove_prefix(tag + 2);
    if (what.starts_with("parse error"))
      if (size_t colon = what.find(": "); colon != std::string_view::npos)
        what.remove_prefix(colon + 2);
    size_t at = bytesRead ? bytesRead - 1 : 0;
    if (error.id == 406) // number overflow
      at = std::min(at, text_.rfind(lastToken, at));
    return fail(at, std::string(what));
  }

private:
  std::string_view text_;
  const char **readHead_;
  Json root_;
  std::vector<Json> stack_; // the open arrays and objects
  std::string key_;         // the pending member's key in an object
  Status error_;

  size_t offset() const {
    return *readHead_ ? static_cast<size_t>(*readHead_ - text_.data()) : 0;
  }

  bool fail(size_t at, const std::string &message) {
    error_ =
        Status(ErrorCode::ParseError,
               "JSON parse error at " + position(text_, at) + ": " + message);
    return false;
  }

  bool add(Json value) {
    if (stack_.empty())
      root_ = std::move(value);
    else if (stack_.back().isArray())
      stack_.back().push(std::move(value));
    else
      stack_.back().asObject().emplace_back(std::move(key_), std::move(value));
    return true;
  }

  bool open(Json container) {
    if (stack_.size() >= kMaxDepth)
      return fail(offset() ? offset() - 1 : 0, "nesting deeper than " +
                                                   std::to_string(kMaxDepth) +
                                                   " levels");
    stack_.push_back(std::move(container));
    if (stack_.size() > 1 && stack_[stack_.size() - 2].isObject())
      keys_.push_back(std::move(key_));
    else
      keys_.emplace_back();
    return true;
  }

  bool close() {
    Json done = std::move(stack_.back());
    stack_.pop_back();
    key_ = std::move(keys_.back());
    keys_.pop_back();
    return add(std::move(done));
  }

  std::vector<std::string> keys_; // each open container's key in its parent
};

OrderedJson toOrdered(const Json &value) {
  switch (value.kind()) {
  case Json::Kind::Null:
    return nullptr;
  case Json::Kind::Bool:
    return value.asBool();
  case Json::Kind::Int:
    return value.asInt();
  case Json::Kind::Double:
    return value.asDouble();
  case Json::Kind::String:
    return value.asString();
  case Json::Kind::Array: {
    OrderedJson out = OrderedJson::array();
    for (const Json &element : value.asArray())
      out.push_back(toOrdered(element));
    return out;
  }
  case Json::Kind::Object: {
    OrderedJson out = OrderedJson::object();
    for (const Json::Member &member : value.asObject())
      out[member.first] = toOrdered(member.second);
    return out;
  }
  }
  return nullptr;
}

} // namespace

Result<Json> parseJson(std::string_view text) {
  const char *readHead = text.data();
  Builder builder(text, &readHead);
  TrackedIterator first(text.data(), &readHead);
  TrackedIterator last(text.data() + text.size(), nullptr);
  // Strict: the whole input is one value, no comments.
  OrderedJson::sax_parse(first, last, &builder,
                         nlohmann::detail::input_format_t::json,
                         /*strict=*/true, /*ignore_comments=*/false);
  return builder.result();
}

std::string writeJson(const Json &value, int indent) {
  // Invalid UTF-8 in a string is replaced (U+FFFD) rather than written out
  // as bytes the reader would reject.
  std::string out =
      toOrdered(value).dump(indent, ' ', /*ensure_ascii=*/false,
                            OrderedJson::error_handler_t::replace);
  if (indent >= 0)
    out += '\n';
  return out;
}

} // namespace attnc
