//===- Hash.cpp - 128-bit FNV-1a content hash -----------------------------===//

#include "attnc/runtime/Hash.h"

namespace attnc {

namespace {
using u128 = unsigned __int128;

// Offset basis and prime from the FNV specification (128-bit parameters).
constexpr u128 kOffsetBasis =
    (static_cast<u128>(0x6c62272e07bb0142ULL) << 64) | 0x62b821756295c58dULL;
// 2^88 + 2^8 + 0x3b.
constexpr u128 kPrime = (static_cast<u128>(1) << 88) | 0x13bULL;
} // namespace

std::string Hash128::hex() const {
  static const char digits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[15 - i] = digits[(hi >> (4 * i)) & 0xf];
    out[31 - i] = digits[(lo >> (4 * i)) & 0xf];
  }
  return out;
}

Fnv1a128::Fnv1a128() : state_(kOffsetBasis) {}

void Fnv1a128::update(const void *data, size_t size) {
  const unsigned char *bytes = static_cast<const unsigned char *>(data);
  u128 h = state_;
  for (size_t i = 0; i < size; ++i) {
    h ^= bytes[i];
    h *= kPrime;
  }
  state_ = h;
}

void Fnv1a128::updateField(std::string_view data) {
  uint64_t size = data.size();
  unsigned char le[8];
  for (int i = 0; i < 8; ++i)
    le[i] = static_cast<unsigned char>(size >> (8 * i));
  update(le, sizeof(le));
  update(data);
}

Hash128 Fnv1a128::digest() const {
  return {static_cast<uint64_t>(state_ >> 64), static_cast<uint64_t>(state_)};
}

Hash128 fnv1a128(std::string_view data) {
  Fnv1a128 hasher;
  hasher.update(data);
  return hasher.digest();
}

} // namespace attnc
