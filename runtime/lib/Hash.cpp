//===- Hash.cpp - 128-bit content hash (XXH3-128) -------------------------===//

#include "attnc/runtime/Hash.h"

// Header-only xxHash: every function inlined here, nothing to link.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace attnc {

std::string Hash128::hex() const {
  static const char digits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[15 - i] = digits[(hi >> (4 * i)) & 0xf];
    out[31 - i] = digits[(lo >> (4 * i)) & 0xf];
  }
  return out;
}

Hash128 xxh3_128(std::string_view data) {
  XXH128_hash_t h = XXH3_128bits(data.data(), data.size());
  return {h.high64, h.low64};
}

void FieldHasher::updateField(std::string_view data) {
  uint64_t size = data.size();
  for (int i = 0; i < 8; ++i)
    framed_ += static_cast<char>(size >> (8 * i));
  framed_.append(data);
}

} // namespace attnc
