//===- Masks.h - mask conventions the compiler and runtime share -*- C++
//-*-===//
//
// Part of the compiler/runtime contract: the runtime names a kernel by its
// canonical spec and the compiler builds the IR of that spec, so both must
// read the mask options alike.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_ABI_MASKS_H
#define ATTNC_ABI_MASKS_H

#include <cstdint>

namespace attnc::abi {

/// The window's right bound as the IR takes it (-1: unbounded). Causal
/// attention with a window (left, -1) follows FlashAttention's convention:
/// the right bound is the diagonal (0), which causal implies anyway (the IR
/// rejects causal with any other right bound than 0), so (left, -1) and
/// (left, 0) are one kernel.
constexpr int64_t windowRight(bool causal, int64_t left, int64_t right) {
  return causal && left >= 0 && right < 0 ? 0 : right;
}

} // namespace attnc::abi

#endif
