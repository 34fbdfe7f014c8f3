//===- JsonTest.cpp - Json values through nlohmann-json -------------------===//

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

// Each malformed input gives "JSON parse error at line L, column C: <what>";
// the what is nlohmann-json's for syntax errors, ours for the rules added on
// top (duplicate keys, nesting).
static void checkError(std::string_view text, std::string_view where,
                       std::string_view what) {
  std::string message = parseError(text);
  INFO(message);
  CHECK(message.rfind("JSON parse error at " + std::string(where) + ": ", 0) ==
        0);
  CHECK(message.find(what) != std::string::npos);
}

TEST_CASE("JSON parse errors say what and where", "[json]") {
  checkError("", "line 1, column 1", "unexpected end of input");
  checkError("{\"a\": 1,}", "line 1, column 9",
             "parsing object key - unexpected '}'");
  checkError("[1, 2,]", "line 1, column 7", "unexpected ']'");
  checkError("{\n  \"a\" 1\n}", "line 2, column 7", "expected ':'");
  checkError("{\"a\": 1 \"b\": 2}", "line 1, column 11", "expected '}'");
  checkError("[1 2]", "line 1, column 4", "expected ']'");
  checkError("{1: 2}", "line 1, column 2", "expected string literal");
  checkError("\"abc", "line 1, column 5", "missing closing quote");
  checkError("\"a\\qb\"", "line 1, column 4",
             "forbidden character after backslash");
  checkError("\"a\nb\"", "line 1, column 3",
             "control character U+000A (LF) must be escaped");
  checkError(std::string("\"a\0b\"", 5), "line 1, column 3",
             "control character U+0000 (NUL) must be escaped");
  checkError("\"\\u12G4\"", "line 1, column 6",
             "'\\u' must be followed by 4 hex digits");
  checkError("\"\\ud83d\"", "line 1, column 8",
             "surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF");
  checkError("\"\\ude00\"", "line 1, column 7",
             "surrogate U+DC00..U+DFFF must follow U+D800..U+DBFF");
  checkError("\"\xC3\"", "line 1, column 3", "ill-formed UTF-8 byte");
  checkError("\"\xED\xA0\x80\"", "line 1, column 3", // an encoded surrogate
             "ill-formed UTF-8 byte");
  checkError("01", "line 1, column 2", "expected end of input");
  checkError("1.", "line 1, column 3", "expected digit after '.'");
  checkError("1e+", "line 1, column 4", "expected digit after exponent sign");
  checkError("-", "line 1, column 2", "expected digit after '-'");
  checkError("1e999", "line 1, column 1", "number overflow parsing '1e999'");
  checkError("NaN", "line 1, column 1", "invalid literal");
  checkError("tru", "line 1, column 4", "invalid literal; last read: 'tru'");
  checkError("{} x", "line 1, column 4", "expected end of input");
  checkError("// comment\n{}", "line 1, column 1", "invalid literal");
  checkError("{\"a\": 1, \"a\": 2}", "line 1, column 13",
             "duplicate object key \"a\"");
  checkError("{\"a\": {\"b\": 1, \"b\": 2}}", "line 1, column 19",
             "duplicate object key \"b\"");
  checkError(std::string(300, '[') + std::string(300, ']'),
             "line 1, column 257", "nesting deeper than 256 levels");
}

TEST_CASE("JSON keeps keys of nested containers apart", "[json]") {
  Json doc = parseOk(R"({"a": {"b": [1, {"c": 2}], "d": 3}, "e": []})");
  REQUIRE(doc.find("a"));
  CHECK(doc.find("a")->find("d")->asInt() == 3);
  CHECK(doc.find("a")->find("b")->asArray()[1].find("c")->asInt() == 2);
  CHECK(doc.find("e")->isArray());
  CHECK(writeJson(doc, -1) == R"({"a":{"b":[1,{"c":2}],"d":3},"e":[]})");
}

TEST_CASE("JSON writing replaces invalid UTF-8", "[json]") {
  // The reader rejects invalid UTF-8, so the writer never produces it.
  std::string text = writeJson(Json(std::string("a\xff")), -1);
  CHECK(text == "\"a\xEF\xBF\xBD\""); // U+FFFD
  CHECK(parseJson(text).isOk());
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
