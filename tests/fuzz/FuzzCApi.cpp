//===- FuzzCApi.cpp - fuzz target: the C ABI's and the launches' checks
//----===//
//
// The input's bytes fill an attnc_spec and attnc_attention_args (pointers,
// shapes and strides as raw 64-bit values, strings from small tables with
// bad entries), and RowArgs for each row op. Validation must never crash
// or overflow, and what it accepts must be safe to launch: every tensor's
// byte range is representable, outputs give each element its own memory
// and share none with another tensor (checked here independently, in
// 128-bit arithmetic, by brute force on small shapes).
//
//===----------------------------------------------------------------------===//
#include "tests/fuzz/FuzzTarget.h"

#include "attnc/attnc.h"
#include "attnc/runtime/Launch.h"
#include "attnc/runtime/RowLaunch.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

using namespace attnc;

namespace {

// How many inputs each checker accepted: a run that accepts none has only
// exercised the error paths (printed at exit).
long acceptedAttention = 0, acceptedRows = 0;

class Bytes {
public:
  Bytes(const uint8_t *data, size_t size) : data_(data), size_(size) {}
  uint64_t u64() {
    uint64_t v = 0;
    size_t n = std::min<size_t>(8, size_ - pos_);
    std::memcpy(&v, data_ + pos_, n);
    pos_ += n;
    return v;
  }
  uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
  // Mostly small values (shapes that fit a brute-force check), sometimes
  // raw ones (overflow).
  int64_t dim() {
    uint8_t mode = u8();
    if (mode < 200)
      return int64_t(mode % 9) - 1; // -1 .. 7
    return int64_t(u64());
  }
  int64_t stride() {
    uint8_t mode = u8();
    if (mode < 220)
      return int64_t(mode % 40) * 8 - 8; // multiples of 16 bytes, -8 .. 304
    return int64_t(u64());
  }
  const void *pointer() {
    uint8_t mode = u8();
    if (mode < 230) // 4 KiB-spaced, 16-byte aligned, sometimes shared
      return reinterpret_cast<const void *>(0x100000 + (mode % 8) * 0x1000 +
                                            (mode / 8 % 4) * 16);
    return reinterpret_cast<const void *>(u64());
  }
  const char *pick(std::initializer_list<const char *> table) {
    return table.begin()[u8() % table.size()];
  }

private:
  const uint8_t *data_;
  size_t size_, pos_ = 0;
};

struct Tensor {
  unsigned __int128 begin;
  std::vector<int64_t> shape, stride;
  int64_t elem;
};

// Every element's byte addresses, for tensors of at most `limit` elements.
bool addresses(const Tensor &t, std::vector<unsigned __int128> &out,
               size_t limit) {
  size_t count = 1;
  for (int64_t s : t.shape) {
    if (s < 1)
      return false;
    count *= size_t(s);
    if (count > limit)
      return false;
  }
  for (size_t i = 0; i < count; ++i) {
    size_t rest = i;
    __int128 offset = 0;
    for (size_t d = t.shape.size(); d-- > 0;) {
      offset += __int128(rest % size_t(t.shape[d])) * t.stride[d];
      rest /= size_t(t.shape[d]);
    }
    for (int64_t b = 0; b < t.elem; ++b)
      out.push_back(t.begin + (unsigned __int128)(offset * t.elem + b));
  }
  return true;
}

void checkRanges(const std::vector<Tensor> &all,
                 const std::vector<bool> &written) {
  for (const Tensor &t : all) {
    __int128 last = 0;
    for (size_t d = 0; d < t.shape.size(); ++d)
      last += __int128(t.shape[d] - 1) * t.stride[d];
    __int128 bytes = (last + 1) * t.elem;
    if (last < 0 || bytes > __int128(INT64_MAX) ||
        t.begin + (unsigned __int128)bytes > (unsigned __int128)UINT64_MAX + 1)
      fuzzFail("accepted a tensor whose bytes overflow");
  }
  // Brute force on small tensors: a written tensor's bytes are its own.
  std::vector<std::vector<unsigned __int128>> bytes(all.size());
  for (size_t i = 0; i < all.size(); ++i)
    if (!addresses(all[i], bytes[i], 4096))
      return;
  for (size_t i = 0; i < all.size(); ++i) {
    if (!written[i])
      continue;
    std::set<unsigned __int128> own(bytes[i].begin(), bytes[i].end());
    if (own.size() != bytes[i].size())
      fuzzFail("accepted an output whose elements share memory");
    for (size_t j = 0; j < all.size(); ++j)
      if (j != i)
        for (unsigned __int128 b : bytes[j])
          if (own.count(b))
            fuzzFail("accepted an output that shares memory with another "
                     "tensor");
  }
}

void fuzzAttention(Bytes &in) {
  attnc_spec spec;
  attnc_spec_init(&spec);
  spec.op = in.pick({"attention_fwd", "attention_fwd", "decode", "bogus", ""});
  spec.dtype = in.pick({"bf16", "fp16", "fp8"});
  spec.arch = in.pick({"sm_90a", "sm_80", "sm_70"});
  spec.heads = in.dim();
  spec.kv_heads = in.dim();
  const uint8_t headDim = in.u8() % 4;
  spec.head_dim = headDim == 0   ? 64
                  : headDim == 1 ? 128
                  : headDim == 2 ? 100
                                 : int64_t(in.u64());
  spec.has_lse = in.u8() % 2;
  spec.causal = in.u8() % 2;
  spec.window_left = in.u8() % 4 == 0 ? int64_t(in.u64()) : -1;
  spec.softcap = in.u8() % 4 == 0 ? double(int64_t(in.u64())) / 3 : 0;
  if (in.u8() % 8 == 0)
    spec.softcap = std::nan("");
  spec.scale = in.u8() % 4 == 0 ? double(int64_t(in.u64())) : std::nan("");

  attnc_attention_args args;
  attnc_attention_args_init(&args);
  if (in.u8() % 16 == 0) // an older or uninitialised struct
    args.struct_size = in.u64() % (sizeof(args) + 16);
  attnc_tensor *tensors[5] = {&args.q, &args.k, &args.v, &args.o, &args.lse};
  if (in.u8() % 4 == 0) { // raw fields
    for (attnc_tensor *t : tensors) {
      t->data = in.pointer();
      for (int d = 0; d < 4; ++d)
        t->shape[d] = in.dim();
      for (int d = 0; d < 4; ++d)
        t->stride[d] = in.stride();
      // Often well-formed in the places the checks look first.
      if (in.u8() % 2) {
        t->shape[1] = spec.heads;
        t->shape[3] = spec.head_dim;
        t->stride[3] = 1;
      }
    }
  } else { // a valid problem, then a few fields changed
    spec.op = "attention_fwd";
    spec.dtype = "bf16";
    spec.arch = "sm_90a";
    spec.window_left = -1;
    spec.softcap = 0;
    spec.scale = std::nan("");
    spec.heads = int64_t(1) << (in.u8() % 4);
    spec.kv_heads = in.u8() % 2 ? spec.heads : 1;
    spec.head_dim = in.u8() % 2 ? 64 : 128;
    const int64_t b = 1 + in.u8() % 2, sq = 1 + in.u8() % 6,
                  skv = 1 + in.u8() % 6, d = spec.head_dim;
    // Base pointers in slots 16 MiB apart: equal slots alias.
    auto base = [&] {
      return reinterpret_cast<const void *>((uintptr_t(1) << 32) +
                                            (uintptr_t(in.u8() % 6) << 24) +
                                            16 * (in.u8() % 4));
    };
    const bool bshd = in.u8() % 2;
    const int64_t pad = 8 * (in.u8() % 3);
    auto layout = [&](attnc_tensor &t, int64_t h, int64_t s) {
      t.data = base();
      int64_t shape[4] = {b, h, s, d};
      int64_t bshdStrides[4] = {s * (h * d + pad), d, h * d + pad, 1};
      int64_t bhsdStrides[4] = {h * s * (d + pad), s * (d + pad), d + pad, 1};
      for (int i = 0; i < 4; ++i) {
        t.shape[i] = shape[i];
        t.stride[i] = bshd ? bshdStrides[i] : bhsdStrides[i];
      }
    };
    layout(args.q, spec.heads, sq);
    layout(args.k, spec.kv_heads, skv);
    layout(args.v, spec.kv_heads, skv);
    layout(args.o, spec.heads, sq);
    args.lse.data = base();
    int64_t lseShape[4] = {b, spec.heads, sq, 1};
    int64_t lseStride[4] = {spec.heads * sq, sq, 1, 1};
    for (int i = 0; i < 4; ++i) {
      args.lse.shape[i] = lseShape[i];
      args.lse.stride[i] = lseStride[i];
    }
    for (int changes = in.u8() % 4; changes > 0; --changes) {
      attnc_tensor &t = *tensors[in.u8() % 5];
      int field = in.u8() % 9;
      if (field < 4)
        t.stride[field] = in.u8() % 2 ? 0 : in.stride();
      else if (field < 8)
        t.shape[field - 4] = in.dim();
      else
        t.data = in.pointer();
    }
  }
  spec.has_lse = in.u8() % 2;
  if (!spec.has_lse)
    args.lse.data = nullptr;
  args.lse.shape[3] = args.lse.stride[3] = 1;
  if (attnc_attention_validate(&spec, &args) != ATTNC_OK)
    return;
  ++acceptedAttention;
  std::vector<Tensor> all;
  std::vector<bool> written;
  for (int i = 0; i < 5; ++i) {
    const attnc_tensor &t = *tensors[i];
    if (i == 4 && !t.data)
      continue;
    int rank = i == 4 ? 3 : 4;
    all.push_back({reinterpret_cast<uintptr_t>(t.data),
                   std::vector<int64_t>(t.shape, t.shape + rank),
                   std::vector<int64_t>(t.stride, t.stride + rank),
                   i == 4 ? 4 : 2});
    written.push_back(i >= 3);
  }
  checkRanges(all, written);
}

void fuzzRows(Bytes &in) {
  KernelSpec spec;
  spec.op = in.pick({"silu_mul", "gelu_mul", "add_rmsnorm", "rope"});
  spec.hidden = 8 * (1 + in.u8() % 4);
  spec.heads = 1 + in.u8() % 3;
  spec.kvHeads = 1 + in.u8() % 2;
  spec.headDim = 16;
  spec.positionBits = in.u8() % 2 ? 64 : 32;
  std::vector<RowTensorRole> roles = rowTensorRoles(spec);
  RowArgs args;
  args.rows = in.u8() % 8 == 0 ? int64_t(in.u64()) : in.u8() % 6;
  args.count = roles.size();
  for (size_t i = 0; i < roles.size(); ++i) {
    RowTensorArg &t = args.tensors[i];
    t.data = in.pointer();
    t.rows = in.u8() % 4 ? (roles[i].anyRows ? 1 + in.u8() % 4 : args.rows)
                         : int64_t(in.u64());
    t.cols = in.u8() % 8 ? roles[i].cols : int64_t(in.u64());
    t.stride = in.u8() % 2 ? t.cols + 8 * (in.u8() % 4) : in.stride();
    if (roles[i].perRowBytes > 0) // aligned to its elements
      t.data = reinterpret_cast<const void *>(
          reinterpret_cast<uintptr_t>(t.data) & ~uintptr_t(7));
  }
  // Sometimes in place, as vLLM's kernels are used.
  if (in.u8() % 4 == 0 && roles.size() == 5)
    args.tensors[3] = args.tensors[0];
  if (!validateRowArgs(spec, args).isOk())
    return;
  ++acceptedRows;
  const int64_t elt = elementSize(spec);
  std::vector<Tensor> all;
  std::vector<bool> written;
  for (size_t i = 0; i < roles.size(); ++i) {
    const RowTensorArg &t = args.tensors[i];
    uintptr_t begin = reinterpret_cast<uintptr_t>(t.data);
    if (roles[i].perRowBytes > 0)
      all.push_back({begin, {t.rows}, {1}, roles[i].perRowBytes});
    else if (roles[i].vector)
      all.push_back({begin, {t.cols}, {1}, elt});
    else
      all.push_back({begin, {t.rows, t.cols}, {t.stride, 1}, elt});
    written.push_back(
        roles[i].output ||
        (spec.op == "rope" && roles[i].perRowBytes == 0 && !roles[i].anyRows));
  }
  // In-place pairs (an output identical to an input) are allowed: drop the
  // input from the comparison.
  for (size_t i = 0; i < roles.size(); ++i)
    for (size_t j = 0; j < roles.size(); ++j)
      if (written[i] && !written[j] && all[j].shape.size() == 2 &&
          args.tensors[i].data == args.tensors[j].data &&
          args.tensors[i].stride == args.tensors[j].stride &&
          args.tensors[i].cols == args.tensors[j].cols &&
          args.tensors[i].rows == args.tensors[j].rows)
        all[j].shape = {0};
  std::vector<Tensor> kept;
  std::vector<bool> keptWritten;
  for (size_t i = 0; i < all.size(); ++i)
    if (!(all[i].shape.size() == 1 && all[i].shape[0] == 0)) {
      kept.push_back(all[i]);
      keptWritten.push_back(written[i]);
    }
  if (args.rows > 0)
    checkRanges(kept, keptWritten);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  std::atexit([] {
    std::printf("c-abi: accepted %ld attention and %ld row argument sets\n",
                acceptedAttention, acceptedRows);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Bytes in(data, size);
  if (in.u8() % 2)
    fuzzAttention(in);
  else
    fuzzRows(in);
  return 0;
}
