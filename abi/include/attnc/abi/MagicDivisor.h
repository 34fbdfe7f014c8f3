//===- MagicDivisor.h - division by a launch-time constant ------*- C++ -*-===//
//
// Part of the compiler/runtime contract (attnc/abi): a kernel that divides
// by a value known only at launch (the stream-K tail's KV tiles per item)
// takes a multiplier and a shift from the runtime instead, because a
// division takes the loop's values out of ptxas's uniform datapath. The
// runtime computes the pair with magicDivisor; the kernel computes
// magicDivide's expression (a 32-bit multiply-high and a shift, and the
// numerator itself when the divisor is 1), so both sides are this file.
//
// The construction is the round-up method (as CUTLASS's FastDivmod): for
// d >= 2, p = 31 + ceil(log2 d) and mul = ceil(2^p / d) (< 2^32, because
// 2^ceil(log2 d) < 2d); then floor(x / d) = floor(x · mul / 2^p) for every
// 0 <= x < 2^31, since x · (mul · d - 2^p) < 2^31 · d <= 2^p.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_ABI_MAGICDIVISOR_H
#define ATTNC_ABI_MAGICDIVISOR_H

#include <cstdint>

namespace attnc::abi {

/// Numerators must be below this (they are non-negative i32 values).
inline constexpr uint64_t kMagicNumeratorLimit = uint64_t(1) << 31;

struct MagicDivisor {
  uint32_t mul = 0; // passed as the i32 of the same bits
  uint32_t shr = 0;
  bool operator==(const MagicDivisor &) const = default;
};

/// The pair for divisor `d` >= 1; d = 1 gives {0, 0} (2^32 does not fit
/// the multiplier: the kernel takes the numerator itself).
constexpr MagicDivisor magicDivisor(uint32_t d) {
  if (d <= 1)
    return {};
  uint32_t log2 = 0;
  while ((uint64_t(1) << log2) < d)
    ++log2;
  const uint32_t p = 31 + log2;
  const uint64_t mul = ((uint64_t(1) << p) + d - 1) / d;
  return {static_cast<uint32_t>(mul), p - 32};
}

/// floor(x / d) as the kernel computes it from magicDivisor(d), for
/// 0 <= x < kMagicNumeratorLimit: umulhi(x, mul) >> shr, or x when d = 1.
constexpr uint32_t magicDivide(uint32_t x, uint32_t d, MagicDivisor m) {
  if (d == 1)
    return x;
  const uint32_t high = static_cast<uint32_t>((uint64_t(x) * m.mul) >> 32);
  return high >> m.shr;
}

} // namespace attnc::abi

#endif // ATTNC_ABI_MAGICDIVISOR_H
