//===- Json.cpp - Strict JSON reader and writer ---------------------------===//

#include "attnc/runtime/Json.h"

#include <charconv>
#include <cmath>
#include <cstring>

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

//===----------------------------------------------------------------------===//
// Reader
//===----------------------------------------------------------------------===//

namespace {

// Deep enough for any real file, shallow enough that recursion cannot blow
// the stack on hostile input.
constexpr int kMaxDepth = 256;

class Parser {
public:
  explicit Parser(std::string_view text) : text_(text) {}

  Result<Json> parseDocument() {
    skipSpace();
    Json value;
    if (!parseValue(value, 0))
      return error_;
    skipSpace();
    if (pos_ != text_.size()) {
      fail("unexpected trailing characters after the JSON value");
      return error_;
    }
    return value;
  }

private:
  std::string_view text_;
  size_t pos_ = 0;
  Status error_;

  bool atEnd() const { return pos_ >= text_.size(); }
  char peek() const { return atEnd() ? '\0' : text_[pos_]; }

  // Records the first error with a 1-based line/column of the current
  // position; always returns false so callers can `return fail(...)`.
  bool failAt(size_t pos, const std::string &message) {
    if (!error_.isOk())
      return false;
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    error_ = Status(ErrorCode::ParseError,
                    "JSON parse error at line " + std::to_string(line) +
                        ", column " + std::to_string(column) + ": " + message);
    return false;
  }
  bool fail(const std::string &message) { return failAt(pos_, message); }

  std::string describeHere() const {
    if (atEnd())
      return "end of input";
    char c = peek();
    if (static_cast<unsigned char>(c) < 0x20 ||
        static_cast<unsigned char>(c) >= 0x7f) {
      char buf[16];
      std::snprintf(buf, sizeof(buf), "byte 0x%02x",
                    static_cast<unsigned char>(c));
      return buf;
    }
    return std::string("'") + c + "'";
  }

  void skipSpace() {
    while (!atEnd()) {
      char c = peek();
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
        break;
      ++pos_;
    }
  }

  bool parseValue(Json &out, int depth) {
    if (depth > kMaxDepth)
      return fail("nesting deeper than " + std::to_string(kMaxDepth) +
                  " levels");
    if (atEnd())
      return fail("expected a value but found end of input");
    char c = peek();
    switch (c) {
    case '{':
      return parseObject(out, depth);
    case '[':
      return parseArray(out, depth);
    case '"': {
      std::string s;
      if (!parseString(s))
        return false;
      out = Json(std::move(s));
      return true;
    }
    case 't':
      return parseLiteral("true", Json(true), out);
    case 'f':
      return parseLiteral("false", Json(false), out);
    case 'n':
      return parseLiteral("null", Json(nullptr), out);
    default:
      if (c == '-' || (c >= '0' && c <= '9'))
        return parseNumber(out);
      return fail("expected a value but found " + describeHere());
    }
  }

  bool parseLiteral(std::string_view word, Json value, Json &out) {
    if (text_.substr(pos_, word.size()) != word)
      return fail("invalid literal (expected '" + std::string(word) + "')");
    pos_ += word.size();
    out = std::move(value);
    return true;
  }

  bool parseObject(Json &out, int depth) {
    ++pos_; // '{'
    Json::Object object;
    skipSpace();
    if (peek() == '}') {
      ++pos_;
      out = Json(std::move(object));
      return true;
    }
    while (true) {
      skipSpace();
      if (peek() != '"')
        return fail("expected a string object key but found " + describeHere());
      size_t keyPos = pos_;
      std::string key;
      if (!parseString(key))
        return false;
      for (const Json::Member &member : object)
        if (member.first == key)
          return failAt(keyPos, "duplicate object key \"" + key + "\"");
      skipSpace();
      if (peek() != ':')
        return fail("expected ':' after object key but found " +
                    describeHere());
      ++pos_;
      skipSpace();
      Json value;
      if (!parseValue(value, depth + 1))
        return false;
      object.emplace_back(std::move(key), std::move(value));
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        skipSpace();
        if (peek() == '}')
          return fail("trailing comma before '}'");
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        out = Json(std::move(object));
        return true;
      }
      return fail("expected ',' or '}' after object member but found " +
                  describeHere());
    }
  }

  bool parseArray(Json &out, int depth) {
    ++pos_; // '['
    Json::Array array;
    skipSpace();
    if (peek() == ']') {
      ++pos_;
      out = Json(std::move(array));
      return true;
    }
    while (true) {
      skipSpace();
      Json value;
      if (!parseValue(value, depth + 1))
        return false;
      array.push_back(std::move(value));
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        skipSpace();
        if (peek() == ']')
          return fail("trailing comma before ']'");
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        out = Json(std::move(array));
        return true;
      }
      return fail("expected ',' or ']' after array element but found " +
                  describeHere());
    }
  }

  bool parseHex4(uint32_t &out) {
    if (pos_ + 4 > text_.size())
      return fail("truncated \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_ + i];
      uint32_t digit;
      if (c >= '0' && c <= '9')
        digit = c - '0';
      else if (c >= 'a' && c <= 'f')
        digit = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        digit = c - 'A' + 10;
      else
        return failAt(pos_ + i, "invalid hex digit in \\u escape");
      out = out * 16 + digit;
    }
    pos_ += 4;
    return true;
  }

  static void appendUtf8(std::string &s, uint32_t cp) {
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // Length of a valid UTF-8 sequence starting at pos_, or 0 (overlong forms,
  // surrogates and code points above U+10FFFF are invalid).
  size_t utf8SequenceLength() const {
    auto byte = [&](size_t i) -> uint32_t {
      return pos_ + i < text_.size()
                 ? static_cast<unsigned char>(text_[pos_ + i])
                 : 0u;
    };
    auto cont = [&](size_t i) { return (byte(i) & 0xC0) == 0x80; };
    uint32_t b0 = byte(0);
    if (b0 >= 0xC2 && b0 <= 0xDF)
      return cont(1) ? 2 : 0;
    if (b0 >= 0xE0 && b0 <= 0xEF) {
      if (!cont(1) || !cont(2))
        return 0;
      uint32_t cp = ((b0 & 0x0F) << 12) | ((byte(1) & 0x3F) << 6);
      if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
      return 3;
    }
    if (b0 >= 0xF0 && b0 <= 0xF4) {
      if (!cont(1) || !cont(2) || !cont(3))
        return 0;
      uint32_t cp = ((b0 & 0x07) << 18) | ((byte(1) & 0x3F) << 12);
      if (cp < 0x10000 || cp > 0x10FFFF)
        return 0;
      return 4;
    }
    return 0;
  }

  bool parseString(std::string &out) {
    size_t start = pos_;
    ++pos_; // opening quote
    while (true) {
      if (atEnd())
        return failAt(start, "unterminated string");
      unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20)
        return fail("unescaped control character in string (byte 0x" +
                    hexByte(c) + ")");
      if (c >= 0x80) {
        size_t len = utf8SequenceLength();
        if (len == 0)
          return fail("invalid UTF-8 in string");
        out.append(text_.substr(pos_, len));
        pos_ += len;
        continue;
      }
      if (c != '\\') {
        out += static_cast<char>(c);
        ++pos_;
        continue;
      }
      size_t escapePos = pos_;
      ++pos_;
      if (atEnd())
        return failAt(start, "unterminated string");
      char e = text_[pos_++];
      switch (e) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case '/':
        out += '/';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t cp = 0;
        if (!parseHex4(cp))
          return false;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
          return failAt(escapePos, "unpaired low surrogate in \\u escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (text_.substr(pos_, 2) != "\\u")
            return failAt(escapePos, "unpaired high surrogate in \\u escape");
          pos_ += 2;
          uint32_t low = 0;
          if (!parseHex4(low))
            return false;
          if (low < 0xDC00 || low > 0xDFFF)
            return failAt(escapePos, "unpaired high surrogate in \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        return failAt(escapePos, std::string("invalid escape '\\") + e + "'");
      }
    }
  }

  static std::string hexByte(unsigned char c) {
    char buf[3];
    std::snprintf(buf, sizeof(buf), "%02x", c);
    return buf;
  }

  bool parseNumber(Json &out) {
    size_t start = pos_;
    bool isInteger = true;
    if (peek() == '-')
      ++pos_;
    if (peek() == '0') {
      ++pos_;
      if (peek() >= '0' && peek() <= '9')
        return failAt(start, "leading zeros are not allowed in numbers");
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9')
        ++pos_;
    } else {
      return failAt(start, "invalid number");
    }
    if (peek() == '.') {
      isInteger = false;
      ++pos_;
      if (!(peek() >= '0' && peek() <= '9'))
        return fail("expected a digit after the decimal point");
      while (peek() >= '0' && peek() <= '9')
        ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      isInteger = false;
      ++pos_;
      if (peek() == '+' || peek() == '-')
        ++pos_;
      if (!(peek() >= '0' && peek() <= '9'))
        return fail("expected a digit in the exponent");
      while (peek() >= '0' && peek() <= '9')
        ++pos_;
    }
    const char *first = text_.data() + start;
    const char *last = text_.data() + pos_;
    if (isInteger) {
      int64_t value;
      auto [ptr, ec] = std::from_chars(first, last, value);
      if (ec == std::errc() && ptr == last) {
        out = Json(value);
        return true;
      }
      // Out of int64 range: fall through to a double.
    }
    double value;
    auto [ptr, ec] = std::from_chars(first, last, value);
    if (ec == std::errc::result_out_of_range)
      return failAt(start, "number out of range");
    if (ec != std::errc() || ptr != last)
      return failAt(start, "invalid number");
    out = Json(value);
    return true;
  }
};

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

void writeString(std::string &out, const std::string &s) {
  out += '"';
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      } else {
        out += ch;
      }
    }
  }
  out += '"';
}

void writeDouble(std::string &out, double value) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  // Shortest form that reads back to the same double.
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  (void)ec;
  std::string_view text(buf, ptr - buf);
  out += text;
  // Keep the Double kind on a round trip ("1" would read back as Int).
  if (text.find_first_of(".eE") == std::string_view::npos)
    out += ".0";
}

void newline(std::string &out, int indent, int depth) {
  if (indent < 0)
    return;
  out += '\n';
  out.append(static_cast<size_t>(indent) * depth, ' ');
}

void writeValue(std::string &out, const Json &value, int indent, int depth) {
  switch (value.kind()) {
  case Json::Kind::Null:
    out += "null";
    return;
  case Json::Kind::Bool:
    out += value.asBool() ? "true" : "false";
    return;
  case Json::Kind::Int:
    out += std::to_string(value.asInt());
    return;
  case Json::Kind::Double:
    writeDouble(out, value.asDouble());
    return;
  case Json::Kind::String:
    writeString(out, value.asString());
    return;
  case Json::Kind::Array: {
    const Json::Array &array = value.asArray();
    if (array.empty()) {
      out += "[]";
      return;
    }
    // Arrays of scalars stay on one line ("block": [128, 1, 1]).
    bool flat = true;
    for (const Json &element : array)
      flat = flat && !element.isArray() && !element.isObject();
    out += '[';
    for (size_t i = 0; i < array.size(); ++i) {
      if (i)
        out += flat && indent >= 0 ? ", " : ",";
      if (!flat)
        newline(out, indent, depth + 1);
      writeValue(out, array[i], indent, depth + 1);
    }
    if (!flat)
      newline(out, indent, depth);
    out += ']';
    return;
  }
  case Json::Kind::Object: {
    const Json::Object &object = value.asObject();
    if (object.empty()) {
      out += "{}";
      return;
    }
    out += '{';
    for (size_t i = 0; i < object.size(); ++i) {
      if (i)
        out += ',';
      newline(out, indent, depth + 1);
      writeString(out, object[i].first);
      out += indent >= 0 ? ": " : ":";
      writeValue(out, object[i].second, indent, depth + 1);
    }
    newline(out, indent, depth);
    out += '}';
    return;
  }
  }
}

} // namespace

Result<Json> parseJson(std::string_view text) {
  return Parser(text).parseDocument();
}

std::string writeJson(const Json &value, int indent) {
  std::string out;
  writeValue(out, value, indent, 0);
  if (indent >= 0)
    out += '\n';
  return out;
}

} // namespace attnc
