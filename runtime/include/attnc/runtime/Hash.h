//===- Hash.h - 128-bit FNV-1a content hash ---------------------*- C++ -*-===//
//
// Cache keys and payload checksums. FNV-1a with 128 bits: simple enough to
// write here, well-specified (so keys are reproducible anywhere), and wide
// enough that accidental collisions between specs are not a concern. It is
// not a cryptographic hash: the cache trusts its own directory.
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

class Fnv1a128 {
public:
  Fnv1a128();
  void update(const void *data, size_t size);
  void update(std::string_view data) { update(data.data(), data.size()); }
  // Hashes the length first, so consecutive fields cannot run into each
  // other ("ab"+"c" differs from "a"+"bc").
  void updateField(std::string_view data);
  Hash128 digest() const;

private:
  unsigned __int128 state_;
};

Hash128 fnv1a128(std::string_view data);

} // namespace attnc

#endif // ATTNC_RUNTIME_HASH_H
