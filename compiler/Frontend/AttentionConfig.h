//===- AttentionConfig.h - an attention problem, as the CLI sees it -*- C++
//-*-===//
#ifndef ATTNC_COMPILER_FRONTEND_ATTENTIONCONFIG_H
#define ATTNC_COMPILER_FRONTEND_ATTENTIONCONFIG_H

#include "attnc/abi/Masks.h"

#include <cstdint>
#include <optional>
#include <string>

namespace attnc {

/// What `attnc emit --op attention` is asked to build. Batch and sequence
/// lengths are not here: kernels are compiled for any of them.
struct AttentionConfig {
  int64_t heads = 32;
  int64_t kvHeads = 8;
  int64_t headDim = 128;
  std::string dtype = "bf16"; // "bf16" | "fp16"
  bool causal = false;
  std::optional<int64_t> windowLeft, windowRight; // -1 = unbounded
  std::optional<float> softcap;
  std::optional<float> scale;
  bool withLse = true;
  /// Attention sinks: one learnt logit per query head in the softmax's
  /// denominator (attn.attention's `sinks` operand).
  bool sinks = false;
  /// Packed variable-length sequences (FlashAttention's varlen contract):
  /// Q/K/V [total, heads, head_dim] with cu_seqlens_q/k (attn.attention's
  /// `varlen` operands); the LSE is [heads, total_q].
  bool varlen = false;
  /// Varlen queries over a paged KV cache (attn.attention's `paged`
  /// operands): K/V [pages, kv_heads, pageSize, head_dim] with a block
  /// table and kv_lens instead of cu_seqlens_k. 0: not paged.
  int64_t pageSize = 0;
  bool paged() const { return pageSize > 0; }

  /// The window's right bound as the IR takes it (abi::windowRight:
  /// causal with (left, -1) is causal with (left, 0)).
  std::optional<int64_t> irWindowRight() const {
    int64_t right = abi::windowRight(causal, windowLeft.value_or(-1),
                                     windowRight.value_or(-1));
    if (right < 0 && !windowRight)
      return std::nullopt;
    return right;
  }
};

} // namespace attnc

#endif
