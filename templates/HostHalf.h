//===- HostHalf.h - bf16 / fp16 bit conversions on the host ---------------===//
//
// Host-side conversions between float and the raw 16-bit patterns of bf16 and
// IEEE fp16 (round to nearest even, like __float2bfloat16_rn and
// __float2half_rn), for filling GPU buffers and reading them back in tests.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TEMPLATES_HOSTHALF_H
#define ATTNC_TEMPLATES_HOSTHALF_H

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace attnc::templates {

inline float bf16BitsToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

inline uint16_t floatToBf16Bits(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) // NaN: keep it quiet, keep the sign
    return static_cast<uint16_t>((x >> 16) | 0x0040u);
  const uint32_t roundingBias = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + roundingBias) >> 16);
}

inline float halfBitsToFloat(uint16_t bits) {
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  float magnitude;
  if (exponent == 0)
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  else if (exponent == 31)
    magnitude = mantissa ? std::numeric_limits<float>::quiet_NaN()
                         : std::numeric_limits<float>::infinity();
  else
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400u),
                           static_cast<int>(exponent) - 25);
  return (bits & 0x8000u) ? -magnitude : magnitude;
}

inline uint16_t floatToHalfBits(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) // NaN
    return sign | 0x7e00u;
  if (ax >= 0x477ff000u) // >= 65520 (and inf) rounds to inf
    return sign | 0x7c00u;
  if (ax < 0x38800000u) { // below 2^-14: subnormal (or zero) result
    // |value| * 2^24 is exact; rint rounds half to even (default mode).
    const float scaled = std::bit_cast<float>(ax) * 16777216.0f;
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  const uint32_t mantissa = ax & 0x7fffffu;
  const uint32_t exponent = (ax >> 23) - 127 + 15;
  uint32_t h = (exponent << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
    ++h; // a carry into the exponent is the correct result
  return sign | static_cast<uint16_t>(h);
}

/// Conversion functors for referenceAttention (ReferenceAttention.h).
struct Bf16BitsToDouble {
  double operator()(uint16_t bits) const { return bf16BitsToFloat(bits); }
};
struct HalfBitsToDouble {
  double operator()(uint16_t bits) const { return halfBitsToFloat(bits); }
};

} // namespace attnc::templates

#endif // ATTNC_TEMPLATES_HOSTHALF_H
