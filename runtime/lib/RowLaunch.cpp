//===- RowLaunch.cpp - Launch ABI of the fused elementwise kernels --------===//

#include "attnc/runtime/RowLaunch.h"

#include "attnc/abi/RowTensors.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace attnc {

namespace {

Status bad(const KernelSpec &spec, const std::string &message) {
  return Status(ErrorCode::InvalidArgument,
                "invalid " + spec.op + " arguments: " + message);
}

std::string pointerText(const void *p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%p", p);
  return buf;
}

// A tensor's memory as rows of `width` bytes, `stride` bytes apart.
struct RowSpan {
  uintptr_t begin = 0;
  int64_t rows = 1, width = 0, stride = 0;
  uintptr_t end() const {
    return begin + static_cast<uintptr_t>((rows - 1) * stride + width);
  }
};

// Whether two spans share a byte. Rows of one stride interleave without
// touching (query and key as views of one fused qkv tensor): solved
// exactly; spans of different strides that meet are taken to overlap.
bool overlaps(RowSpan a, RowSpan b) {
  if (a.end() <= b.begin || b.end() <= a.begin)
    return false;
  if (a.rows == 1)
    a.stride = b.stride;
  if (b.rows == 1)
    b.stride = a.stride;
  if (a.stride != b.stride || a.stride <= 0)
    return true;
  // Rows i of a and j of b meet iff, with k = j - i,
  // begin_a - begin_b - width_b < k * stride < begin_a - begin_b + width_a.
  // The spans meet, so the difference of their begins fits in int64.
  const int64_t s = a.stride;
  const int64_t d = static_cast<int64_t>(a.begin - b.begin);
  const int64_t lo = d - b.width; // k * s > lo
  // The smallest k with k * s > lo (a floor division that rounds down).
  int64_t k = lo >= 0 ? lo / s + 1 : -((-lo) / s) + ((-lo) % s == 0 ? 1 : 0);
  k = std::max<int64_t>(k, -(a.rows - 1));
  return k <= b.rows - 1 && k * s < d + a.width;
}

} // namespace

std::vector<RowTensorRole> rowTensorRoles(const KernelSpec &spec) {
  const int64_t d = spec.hidden;
  // The tensors in abi/RowTensors.h's order.
  if (spec.op == "silu_mul" || spec.op == "gelu_mul") {
    const auto &n = abi::kGatedActTensors;
    return {{n[0], false, false, 2 * d}, {n[1], false, true, d}};
  }
  if (spec.op == "add_rmsnorm") {
    const auto &n = abi::kAddRmsNormTensors;
    return {{n[0], false, false, d},
            {n[1], false, false, d},
            {n[2], true, false, d},
            {n[3], false, true, d},
            {n[4], false, true, d}};
  }
  if (spec.op == "rope") {
    const auto &n = abi::kRopeTensors;
    return {{n[0], false, false, 1, spec.positionBits / 8},
            {n[1], false, false, spec.heads * spec.headDim},
            {n[2], false, false, spec.kvHeads * spec.headDim},
            {n[3], false, false, effectiveRotaryDim(spec), 0, true}};
  }
  return {};
}

Status validateRowArgs(const KernelSpec &spec, const RowArgs &args) {
  std::vector<RowTensorRole> roles = rowTensorRoles(spec);
  if (roles.empty())
    return bad(spec, "op is not a row kernel");
  if (args.count != roles.size())
    return bad(spec, "expected " + std::to_string(roles.size()) +
                         " tensors, got " + std::to_string(args.count));
  if (args.rows < 0)
    return bad(spec, "rows must be >= 0, got " + std::to_string(args.rows));
  const int64_t elt = elementSize(spec);
  for (size_t i = 0; i < roles.size(); ++i) {
    const RowTensorRole &role = roles[i];
    const RowTensorArg &t = args.tensors[i];
    std::string name = std::string("tensor '") + role.name + "'";
    if (!t.data)
      return bad(spec, name + " is a null pointer");
    if (role.perRowBytes > 0) { // one integer per row, contiguous
      if (reinterpret_cast<uintptr_t>(t.data) % role.perRowBytes != 0)
        return bad(spec, name + " at " + pointerText(t.data) +
                             " is not aligned to its " +
                             std::to_string(role.perRowBytes) +
                             "-byte elements");
      if (t.rows != args.rows)
        return bad(spec, name + " has " + std::to_string(t.rows) +
                             " entries, expected one per row (" +
                             std::to_string(args.rows) + ")");
      continue;
    }
    // The kernels move rows in abi::kRowVectorBytes vectors.
    if (reinterpret_cast<uintptr_t>(t.data) % abi::kRowVectorBytes != 0)
      return bad(spec, name + " at " + pointerText(t.data) + " is not " +
                           std::to_string(abi::kRowVectorBytes) +
                           "-byte aligned");
    if (t.cols != role.cols)
      return bad(spec,
                 name + " has " + std::to_string(t.cols) +
                     " columns, expected " + std::to_string(role.cols) +
                     (role.vector || spec.op == "rope"
                          ? ""
                          : " (hidden " + std::to_string(spec.hidden) + ")"));
    if (role.vector)
      continue;
    if (role.anyRows ? t.rows < 1 : t.rows != args.rows)
      return bad(spec, name + " has " + std::to_string(t.rows) +
                           " rows, expected " +
                           (role.anyRows ? std::string("at least 1")
                                         : std::to_string(args.rows)));
    if (t.stride < t.cols)
      return bad(spec, name + " has row stride " + std::to_string(t.stride) +
                           ", less than its " + std::to_string(t.cols) +
                           " columns (rows must not overlap)");
    int64_t strideBytes;
    if (__builtin_mul_overflow(t.stride, elt, &strideBytes))
      return bad(spec, name + " has row stride " + std::to_string(t.stride) +
                           " elements, past 2^63 bytes");
    if (strideBytes % abi::kRowVectorBytes != 0)
      return bad(spec, name + " has row stride " + std::to_string(t.stride) +
                           " elements, not a multiple of " +
                           std::to_string(abi::kRowVectorBytes) + " bytes");
  }

  // Every tensor's bytes: offsets that fit in int64 and addresses that do
  // not wrap (the kernels index in i64 from the base pointer).
  std::vector<RowSpan> spans(roles.size());
  for (size_t i = 0; i < roles.size(); ++i) {
    const RowTensorRole &role = roles[i];
    const RowTensorArg &t = args.tensors[i];
    RowSpan &span = spans[i];
    span.begin = reinterpret_cast<uintptr_t>(t.data);
    bool overflow;
    if (role.perRowBytes > 0)
      overflow = __builtin_mul_overflow(t.rows, role.perRowBytes, &span.width);
    else if (role.vector)
      overflow = __builtin_mul_overflow(t.cols, elt, &span.width);
    else {
      span.rows = std::max<int64_t>(t.rows, 1);
      overflow = __builtin_mul_overflow(t.cols, elt, &span.width) ||
                 __builtin_mul_overflow(t.stride, elt, &span.stride);
    }
    int64_t last = 0, bytes = 0;
    uintptr_t end;
    overflow =
        overflow || __builtin_mul_overflow(span.rows - 1, span.stride, &last) ||
        __builtin_add_overflow(last, span.width, &bytes) ||
        __builtin_add_overflow(span.begin, static_cast<uintptr_t>(bytes), &end);
    if (overflow)
      return bad(spec, std::string("tensor '") + role.name + "' at " +
                           pointerText(t.data) + ": its " +
                           std::to_string(t.rows) + " rows of stride " +
                           std::to_string(t.stride) +
                           " reach past 2^63 bytes or the end of the address "
                           "space");
  }
  // A written tensor (an output; rope's query and key, rotated in place)
  // may share memory with nothing, except an input it replaces element for
  // element (same base, row stride and shape: each element is read before
  // it is written, by the same thread).
  auto written = [&](size_t i) {
    return roles[i].output || (spec.op == "rope" && roles[i].perRowBytes == 0 &&
                               !roles[i].anyRows);
  };
  for (size_t i = 0; i < roles.size(); ++i) {
    if (!written(i))
      continue;
    for (size_t j = 0; j < roles.size(); ++j) {
      if (j == i || (written(j) && j < i) || !overlaps(spans[i], spans[j]))
        continue;
      const RowTensorArg &a = args.tensors[i], &b = args.tensors[j];
      if (!written(j) && a.data == b.data && a.stride == b.stride &&
          a.cols == b.cols && a.rows == b.rows && !roles[j].vector)
        continue; // in place
      return bad(spec, std::string("tensor '") + roles[i].name +
                           "' overlaps tensor '" + roles[j].name +
                           "': a written tensor may share memory only with "
                           "an input of its shape it replaces in place");
    }
  }
  return Status::ok();
}

Result<std::vector<RowParamSlot>>
planRowParams(const KernelSpec &spec, const std::vector<KernelParam> &params) {
  std::vector<RowTensorRole> roles = rowTensorRoles(spec);
  if (params.size() > kMaxKernelParams)
    return Status(ErrorCode::Unsupported, "too many kernel parameters");
  std::vector<RowParamSlot> plan;
  for (const KernelParam &p : params) {
    RowParamSlot slot{RowParamSlot::Source::Rows, 0, p.kind};
    bool found = p.name == abi::kRowsParam;
    for (size_t i = 0; i < roles.size() && !found; ++i) {
      if (p.name == roles[i].name) {
        slot = {RowParamSlot::Source::Pointer, static_cast<uint8_t>(i), p.kind};
        found = true;
      } else if (!roles[i].vector && roles[i].perRowBytes == 0 &&
                 p.name == std::string(roles[i].name) +
                               std::string(abi::kRowStrideSuffix)) {
        slot = {RowParamSlot::Source::Stride, static_cast<uint8_t>(i), p.kind};
        found = true;
      }
    }
    if (!found)
      return Status(ErrorCode::Unsupported, "kernel parameter '" + p.name +
                                                "' is unknown to op " +
                                                spec.op);
    bool pointer = slot.source == RowParamSlot::Source::Pointer;
    if (pointer ? p.kind != ParamKind::Ptr
                : (p.kind != ParamKind::I64 && p.kind != ParamKind::I32))
      return Status(ErrorCode::Unsupported,
                    "kernel parameter '" + p.name + "' has kind " +
                        paramKindName(p.kind) + ", expected " +
                        (pointer ? "ptr" : "i64 or i32"));
    plan.push_back(slot);
  }
  return plan;
}

Status packRowParams(const std::vector<RowParamSlot> &plan, const RowArgs &args,
                     PackedParams &out) {
  out.count = plan.size();
  for (size_t i = 0; i < plan.size(); ++i) {
    const RowParamSlot &slot = plan[i];
    uint64_t &cell = out.storage[i];
    cell = 0;
    const RowTensorArg &t = args.tensors[slot.tensor];
    if (slot.source == RowParamSlot::Source::Pointer) {
      std::memcpy(&cell, &t.data, sizeof(void *));
    } else {
      int64_t v =
          slot.source == RowParamSlot::Source::Rows ? args.rows : t.stride;
      if (slot.kind == ParamKind::I32) {
        if (v > INT32_MAX || v < INT32_MIN)
          return Status(ErrorCode::InvalidArgument,
                        "a row-kernel parameter does not fit in 32 bits");
        int32_t narrow = static_cast<int32_t>(v);
        std::memcpy(&cell, &narrow, sizeof(narrow));
      } else {
        std::memcpy(&cell, &v, sizeof(v));
      }
    }
    out.pointers[i] = &cell;
  }
  return Status::ok();
}

Result<LaunchGeometry> rowGeometry(const KernelMetadata &meta,
                                   const RowArgs &args) {
  if (meta.blockM < 1)
    return Status(ErrorCode::CacheCorrupt, "row kernel with block_m < 1");
  int64_t programs = (args.rows + meta.blockM - 1) / meta.blockM;
  if (programs > INT32_MAX)
    return Status(ErrorCode::InvalidArgument,
                  std::to_string(args.rows) + " rows need " +
                      std::to_string(programs) +
                      " programs, more than CUDA's grid allows");
  LaunchGeometry g;
  g.grid = {static_cast<uint32_t>(programs), 1, 1};
  for (int i = 0; i < 3; ++i)
    g.block[i] = static_cast<uint32_t>(meta.block[i]);
  g.dynamicSmem = static_cast<uint32_t>(meta.dynamicSmem);
  return g;
}

RowTraffic rowTraffic(const KernelSpec &spec, int64_t rows) {
  const int64_t e = elementSize(spec), d = spec.hidden, n = rows * d;
  RowTraffic t;
  if (spec.op == "silu_mul" || spec.op == "gelu_mul") {
    t.fused = 3 * n * e; // read 2d, write d
    // act(x[:d]) -> tmp, then tmp * x[d:] -> out: read d, write d; read 2d,
    // write d.
    t.unfused = 5 * n * e;
  } else if (spec.op == "add_rmsnorm") {
    t.fused = 4 * n * e + d * e; // read x, residual, weight; write two
    // x + residual -> h; then the norm reads h (twice: the square-sum and the
    // scaling) and writes out.
    t.unfused = (3 * n + 3 * n) * e + d * e;
  } else if (spec.op == "rope") {
    // Read and write the rotated columns of query and key; read one cache
    // row (cos and sin) and one position per token.
    const int64_t rot = effectiveRotaryDim(spec);
    const int64_t qk = rows * (spec.heads + spec.kvHeads) * rot * e;
    t.fused = 2 * qk + rows * rot * e + rows * spec.positionBits / 8;
    // vLLM's kernel moves the same bytes; unfused (torch ops on views) reads
    // and writes each half separately and gathers cos/sin per head: about
    // twice.
    t.unfused = 2 * t.fused;
  }
  return t;
}

} // namespace attnc
