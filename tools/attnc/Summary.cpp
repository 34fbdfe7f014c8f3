//===- Summary.cpp - what attnc emit --summary prints ---------------------===//
#include "tools/attnc/Commands.h"

#include "compiler/Analysis/Roofline.h"
#include "compiler/Target/NVPTX/Ptxas.h"
#include "dialects/Attn/IR/AttnOps.h"

#include <fmt/core.h>

namespace attnc::cli {

static AttentionProblem problemOf(attn::AttentionOp op, const EmitOptions &o) {
  AttentionProblem p;
  p.batch = o.batch;
  p.heads = op.getNumHeads();
  p.kvHeads = op.getNumKVHeads();
  p.headDim = op.getHeadDim();
  p.seqQ = p.seqKV = o.seqLen;
  p.eltBytes = 2; // bf16 and fp16 are the only element types attn accepts
  p.causal = op.getCausal();
  if (auto w = op.getWindowAttr()) {
    p.windowLeft = w.getLeft();
    p.windowRight = w.getRight();
  }
  p.withLse = static_cast<bool>(op.getLse());
  return p;
}

static std::string humanBytes(double b) {
  if (b >= 1e9)
    return fmt::format("{:.2f} GB", b / 1e9);
  return fmt::format("{:.1f} MB", b / 1e6);
}

void printSummary(const SummaryInput &in) {
  attn::AttentionOp op;
  mlir::ModuleOp module = in.module;
  module.walk([&](attn::AttentionOp a) {
    op = a;
    return mlir::WalkResult::interrupt();
  });
  if (!op) {
    fmt::print("summary: no attn.attention op in the module\n");
    return;
  }
  const EmitOptions &o = in.opts;
  std::string dtype = op.getElementType().isBF16() ? "bf16" : "fp16";
  std::string mask = op.getCausal() ? "causal" : "no mask";
  if (auto w = op.getWindowAttr())
    mask += fmt::format(", window ({}, {})", w.getLeft(), w.getRight());
  if (op.hasMaskMod())
    mask += ", mask_mod";
  fmt::print("\n== attnc summary: attention forward, {} query / {} kv heads, "
             "head dim {}, {}, {}, target {} ==\n",
             op.getNumHeads(), op.getNumKVHeads(), op.getHeadDim(), dtype, mask,
             o.arch);

  if (in.ptxPath.empty()) {
    fmt::print("PTX:    not written ({})\n", in.ptxMissingReason);
  } else {
    fmt::print("PTX:    {}\n", in.ptxPath);
    PtxasResult r = runPtxas(in.ptx, o.arch, ATTNC_PTXAS_PATH);
    if (!r.ok)
      fmt::print("ptxas:  FAILED for {}:\n{}\n", o.arch, r.log);
    for (const KernelResources &k : r.kernels) {
      auto it = in.launch.find(k.name);
      int64_t dynamicSmem = it == in.launch.end() ? 0 : it->second.first;
      int64_t threads = it == in.launch.end() ? 0 : it->second.second;
      fmt::print("ptxas:  {} ({}): {} registers, {} threads, {} bytes shared "
                 "memory ({} dynamic + {} static), {} bytes stack, spills {} B "
                 "stored / {} B loaded\n",
                 k.name, o.arch, k.registers, threads,
                 dynamicSmem + k.sharedBytes, dynamicSmem, k.sharedBytes,
                 k.stackFrameBytes, k.spillStoreBytes, k.spillLoadBytes);
    }
  }

  AttentionProblem p = problemOf(op, o);
  double flops = attentionFlops(p);
  double fused = fusedBytes(p), unfused = unfusedBytes(p);
  fmt::print("\nProblem: batch {}, sequence {} (queries = keys)\n", p.batch,
             p.seqQ);
  fmt::print("  FLOPs (4·D per visible pair per head): {:.3f} TFLOP\n",
             flops / 1e12);
  fmt::print("  HBM bytes, fused (Q,K,V read once; O{} written once): {}\n",
             p.withLse ? ", LSE" : "", humanBytes(fused));
  fmt::print("  HBM bytes, standard attention (+ n×n S and P: written, read, "
             "written, read): {}\n",
             humanBytes(unfused));
  fmt::print("  arithmetic intensity: fused {:.0f} FLOP/byte, standard {:.1f} "
             "FLOP/byte\n",
             flops / fused, flops / unfused);
  fmt::print("  roofline floor (max of compute time, memory time):\n");
  for (const Device &d : knownDevices()) {
    double tf = floorSeconds(flops, fused, d);
    double tu = floorSeconds(flops, unfused, d);
    fmt::print("    {:<42} fused {:8.3f} ms ({}-bound)   standard {:8.3f} ms "
               "({}-bound)\n",
               d.name, tf * 1e3,
               flops / d.flopsPerSec >= fused / d.bytesPerSec ? "compute"
                                                              : "memory",
               tu * 1e3,
               flops / d.flopsPerSec >= unfused / d.bytesPerSec ? "compute"
                                                                : "memory");
  }
}

} // namespace attnc::cli
