//===- HashTest.cpp - 128-bit FNV-1a --------------------------------------===//

#include "attnc/runtime/Hash.h"

#include <catch2/catch.hpp>

#include <string>

using namespace attnc;

TEST_CASE("FNV-1a 128 matches reference vectors", "[hash]") {
  // Values from the FNV reference parameters (checked with Python's
  // arbitrary-precision integers).
  CHECK(fnv1a128("").hex() == "6c62272e07bb014262b821756295c58d");
  CHECK(fnv1a128("a").hex() == "d228cb696f1a8caf78912b704e4a8964");
  CHECK(fnv1a128("foobar").hex() == "343e1662793c64bf6f0d3597ba446f18");
  std::string bytes;
  for (int i = 0; i < 256; ++i)
    bytes += static_cast<char>(i);
  CHECK(fnv1a128(bytes).hex() == "8097249afae7c21686b07bd6fa33708d");
}

TEST_CASE("FNV-1a 128 streams and frames fields", "[hash]") {
  Fnv1a128 streamed;
  streamed.update("foo");
  streamed.update("bar");
  CHECK(streamed.digest() == fnv1a128("foobar"));

  // Length framing keeps field boundaries apart.
  Fnv1a128 a, b;
  a.updateField("ab");
  a.updateField("c");
  b.updateField("a");
  b.updateField("bc");
  CHECK_FALSE(a.digest() == b.digest());

  Hash128 h{0x0123456789abcdefULL, 0xfedcba9876543210ULL};
  CHECK(h.hex() == "0123456789abcdeffedcba9876543210");
}
