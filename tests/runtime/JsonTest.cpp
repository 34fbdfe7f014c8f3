//===- JsonTest.cpp - Strict JSON reader/writer ---------------------------===//

#include "attnc/runtime/Json.h"
#include "attnc/runtime/JsonReader.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace attnc;

namespace {
Json parseOk(std::string_view text) {
  Result<Json> result = parseJson(text);
  INFO(text);
  REQUIRE(result.isOk());
  return *result;
}

std::string parseError(std::string_view text) {
  Result<Json> result = parseJson(text);
  INFO(text);
  REQUIRE_FALSE(result.isOk());
  CHECK(result.status().code() == ErrorCode::ParseError);
  return result.status().message();
}
} // namespace

TEST_CASE("JSON scalars parse to the right kinds", "[json]") {
  CHECK(parseOk("null").isNull());
  CHECK(parseOk("true").asBool());
  CHECK_FALSE(parseOk(" false ").asBool());
  CHECK(parseOk("0").asInt() == 0);
  CHECK(parseOk("-12").asInt() == -12);
  CHECK(parseOk("9223372036854775807").asInt() ==
        std::numeric_limits<int64_t>::max());
  CHECK(parseOk("-9223372036854775808").asInt() ==
        std::numeric_limits<int64_t>::min());
  // Beyond int64: a double, not an error.
  Json big = parseOk("9223372036854775808");
  CHECK(big.kind() == Json::Kind::Double);
  CHECK(big.asDouble() == 9223372036854775808.0);
  CHECK(parseOk("1.5").asDouble() == 1.5);
  CHECK(parseOk("-0.25e2").asDouble() == -25.0);
  CHECK(parseOk("1E-3").asDouble() == 0.001);
  CHECK(parseOk("1e2").kind() == Json::Kind::Double);
  CHECK(parseOk("\"hi\"").asString() == "hi");
}

TEST_CASE("JSON string escapes decode and re-encode", "[json]") {
  CHECK(parseOk(R"("a\"b\\c\/d\b\f\n\r\t")").asString() ==
        "a\"b\\c/d\b\f\n\r\t");
  CHECK(parseOk(R"("\u00e9\u20AC")").asString() == "\xC3\xA9\xE2\x82\xAC");
  // A surrogate pair becomes one 4-byte UTF-8 sequence (U+1F600).
  CHECK(parseOk(R"("\ud83d\ude00")").asString() == "\xF0\x9F\x98\x80");
  // Raw UTF-8 passes through.
  CHECK(parseOk("\"\xC3\xA9\"").asString() == "\xC3\xA9");
  // Control characters are escaped on output.
  Json s(std::string("x\x01y\n\"\\"));
  CHECK(writeJson(s, -1) == R"("x\u0001y\n\"\\")");
  CHECK(parseOk(writeJson(s, -1)) == s);
}

TEST_CASE("JSON documents round-trip", "[json]") {
  Json doc = Json::object();
  doc.set("name", "attnc");
  doc.set("count", int64_t(-3));
  doc.set("ratio", 0.1);
  doc.set("whole", 2.0);
  doc.set("flag", true);
  doc.set("nothing", nullptr);
  Json list = Json::array();
  list.push(1);
  list.push("two");
  Json inner = Json::object();
  inner.set("deep", Json::array());
  list.push(inner);
  doc.set("list", list);
  doc.set("empty", Json::object());

  for (int indent : {-1, 0, 2, 4}) {
    std::string text = writeJson(doc, indent);
    INFO(text);
    Json back = parseOk(text);
    CHECK(back == doc);
    // Doubles keep their kind ("2.0", not "2").
    CHECK(back.find("whole")->kind() == Json::Kind::Double);
    CHECK(back.find("ratio")->asDouble() == 0.1);
  }
  // Member order is preserved.
  CHECK(writeJson(doc, -1).rfind(R"({"name":"attnc","count":-3,)", 0) == 0);
  CHECK(writeJson(doc, 2).find("\"list\": [\n") != std::string::npos);
}

TEST_CASE("JSON doubles are written exactly", "[json]") {
  for (double value : {0.1, 1.0 / 3.0, 1e300, -2.5e-300, 0.08838834764831845}) {
    Json back = parseOk(writeJson(Json(value), -1));
    CHECK(back.asDouble() == value);
  }
  // Non-finite numbers have no JSON form.
  CHECK(writeJson(Json(std::nan("")), -1) == "null");
  CHECK(writeJson(Json(std::numeric_limits<double>::infinity()), -1) == "null");
}

TEST_CASE("JSON parse errors say what and where", "[json]") {
  CHECK(parseError("") ==
        "JSON parse error at line 1, column 1: expected a value but found "
        "end of input");
  CHECK(parseError("{\"a\": 1,}") ==
        "JSON parse error at line 1, column 9: trailing comma before '}'");
  CHECK(parseError("[1, 2,]") ==
        "JSON parse error at line 1, column 7: trailing comma before ']'");
  CHECK(parseError("{\n  \"a\" 1\n}") ==
        "JSON parse error at line 2, column 7: expected ':' after object key "
        "but found '1'");
  CHECK(parseError("{\"a\": 1 \"b\": 2}") ==
        "JSON parse error at line 1, column 9: expected ',' or '}' after "
        "object member but found '\"'");
  CHECK(parseError("[1 2]") ==
        "JSON parse error at line 1, column 4: expected ',' or ']' after "
        "array element but found '2'");
  CHECK(parseError("{1: 2}") ==
        "JSON parse error at line 1, column 2: expected a string object key "
        "but found '1'");
  CHECK(parseError("\"abc") ==
        "JSON parse error at line 1, column 1: unterminated string");
  CHECK(parseError("\"a\\qb\"") ==
        "JSON parse error at line 1, column 3: invalid escape '\\q'");
  CHECK(parseError("\"a\nb\"") ==
        "JSON parse error at line 1, column 3: unescaped control character "
        "in string (byte 0x0a)");
  CHECK(parseError("\"\\u12G4\"") ==
        "JSON parse error at line 1, column 6: invalid hex digit in \\u "
        "escape");
  CHECK(parseError("\"\\ud83d\"") ==
        "JSON parse error at line 1, column 2: unpaired high surrogate in "
        "\\u escape");
  CHECK(parseError("\"\\ude00\"") ==
        "JSON parse error at line 1, column 2: unpaired low surrogate in "
        "\\u escape");
  CHECK(parseError("\"\xC3\"") ==
        "JSON parse error at line 1, column 2: invalid UTF-8 in string");
  CHECK(parseError("\"\xED\xA0\x80\"") == // an encoded surrogate
        "JSON parse error at line 1, column 2: invalid UTF-8 in string");
  CHECK(parseError("01") == "JSON parse error at line 1, column 1: leading "
                            "zeros are not allowed in numbers");
  CHECK(parseError("1.") == "JSON parse error at line 1, column 3: expected "
                            "a digit after the decimal point");
  CHECK(parseError("1e+") == "JSON parse error at line 1, column 4: "
                             "expected a digit in the exponent");
  CHECK(parseError("-") ==
        "JSON parse error at line 1, column 1: invalid number");
  CHECK(parseError("1e999") ==
        "JSON parse error at line 1, column 1: number out of range");
  CHECK(parseError("NaN") == "JSON parse error at line 1, column 1: "
                             "expected a value but found 'N'");
  CHECK(parseError("tru") == "JSON parse error at line 1, column 1: "
                             "invalid literal (expected 'true')");
  CHECK(parseError("{} x") == "JSON parse error at line 1, column 4: "
                              "unexpected trailing characters after the "
                              "JSON value");
  CHECK(parseError("// comment\n{}") ==
        "JSON parse error at line 1, column 1: expected a value but found "
        "'/'");
  CHECK(parseError("{\"a\": 1, \"a\": 2}") ==
        "JSON parse error at line 1, column 10: duplicate object key \"a\"");
  CHECK(parseError(std::string(300, '[') + std::string(300, ']'))
            .find("nesting deeper than 256 levels") != std::string::npos);
  CHECK(parseError(std::string("\"a\0b\"", 5)) ==
        "JSON parse error at line 1, column 3: unescaped control character "
        "in string (byte 0x00)");
}

TEST_CASE("JsonObjectReader is strict about keys and kinds", "[json]") {
  Json doc = parseOk(R"({"name": "x", "n": 3, "f": 1.5, "b": true})");
  std::string name;
  int64_t n = 0;
  double f = 0;
  bool b = false;

  JsonObjectReader ok(doc, "thing");
  ok.getString("name", name, true);
  ok.getInt("n", n, true);
  ok.getNumber("f", f, true);
  ok.getBool("b", b, false);
  CHECK(ok.finish().isOk());
  CHECK(name == "x");
  CHECK(n == 3);
  CHECK(f == 1.5);
  CHECK(b);

  JsonObjectReader unknown(doc, "thing");
  unknown.getString("name", name, true);
  Status status = unknown.finish();
  CHECK(status.code() == ErrorCode::ParseError);
  CHECK(status.message() == "thing: unknown key \"n\"");

  JsonObjectReader missing(doc, "thing");
  missing.getString("absent", name, true);
  CHECK(missing.finish().message() == "thing: missing required key \"absent\"");

  JsonObjectReader wrongKind(doc, "thing");
  wrongKind.getInt("f", n, true);
  CHECK(wrongKind.finish().message() ==
        "thing.f: expected integer but found number");

  JsonObjectReader notObject(parseOk("[1]"), "thing");
  CHECK(notObject.finish().message() ==
        "thing: expected an object but found array");
}
