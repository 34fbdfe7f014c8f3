//===- Hash.h - 128-bit content hash (XXH3-128) -----------------*- C++ -*-===//
//
// Cache keys and payload checksums. XXH3-128 (xxHash, compiled into the
// runtime in header-only mode): fast, specified and stable across platforms
// (so keys are reproducible anywhere), and wide enough that accidental
// collisions between specs are not a concern. It is not a cryptographic
// hash: the cache trusts its own directory.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_HASH_H
#define ATTNC_RUNTIME_HASH_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace attnc {

struct Hash128 {
  uint64_t hi = 0;
  uint64_t lo = 0;

  // 32 lowercase hex digits, most significant first.
  std::string hex() const;

  bool operator==(const Hash128 &) const = default;
};

// XXH3-128 of `data` (seed 0).
Hash128 xxh3_128(std::string_view data);

// Hashes a sequence of fields, each preceded by its length (8 bytes, little
// endian), so consecutive fields cannot run into each other ("ab"+"c"
// differs from "a"+"bc").
class FieldHasher {
public:
  void updateField(std::string_view data);
  Hash128 digest() const { return xxh3_128(framed_); }

private:
  std::string framed_;
};

} // namespace attnc

#endif // ATTNC_RUNTIME_HASH_H
