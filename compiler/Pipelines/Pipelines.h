//===- Pipelines.h - attnc's pass pipelines, one per target -----*- C++ -*-===//
#ifndef ATTNC_COMPILER_PIPELINES_PIPELINES_H
#define ATTNC_COMPILER_PIPELINES_PIPELINES_H

#include "dialects/TileGPU/IR/TileGPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <cstdint>
#include <string>

namespace attnc {

struct TileOptions {
  int64_t blockM = 64;
  int64_t blockN = 64;
  // mma.sync mapping: query rows per warp (16 or 32) and whether Q is
  // staged in shared memory rather than held in registers.
  int64_t rowsPerWarp = 16;
  bool qInSmem = false;
  // mma.sync mapping, decode split kernel: warps along the keys of each
  // K/V tile (MapTileToMMA's decode-key-warps).
  int64_t decodeKeyWarps = 1;
  // wgmma mapping: the kernel's schedule, recorded on it by
  // attnc-assign-layouts as #tgpu.wgmma_schedule (see its description):
  // tiles in each of the K and V shared-memory rings and how they are
  // synchronised, when O is rescaled (defaultTileOptions: threshold from head
  // dim 128), one block per item or persistent blocks (kv_sync tma only;
  // defaultTileOptions takes heuristicTuning's grid), the stream-K tail of
  // persistent blocks over items of equal KV length, and how O is written
  // (tma: kv_sync tma only; defaultTileOptions takes heuristicTuning's
  // epilogue where the schedule is tma).
  int64_t kvStages = 2;
  tgpu::KVSync kvSync = tgpu::KVSync::mbarrier;
  tgpu::Rescale rescale = tgpu::Rescale::threshold;
  tgpu::Grid grid = tgpu::Grid::tiles;
  bool streamK = true;
  tgpu::Epilogue epilogue = tgpu::Epilogue::registers;
  bool persistent() const { return grid == tgpu::Grid::persistent; }
};

/// The GPU mapping a kernel is lowered with.
enum class GPUMapping { MMA, SIMT, WGMMA };

/// Tile sizes for a mapping and head dim, with any nonzero request kept
/// (`warps` sets rows per warp = block_m / warps). mma.sync and wgmma: the
/// runtime's heuristicTuning (TuningDb.h); Q goes to shared memory where
/// registers would not hold it (32 rows per warp, or head dim 256). SIMT:
/// 64 rows (threads) and 32 keys, to bound the per-thread registers.
/// `stages` sets the wgmma mapping's K/V ring depth (default 2). `arch` is
/// the target the tiles are for: "sm_90a" takes the wgmma tiles where they
/// apply; anything else (and "" for a forced mma.sync) the mma.sync ones.
/// What of an attention bears on its tiles besides the head dim (registers
/// of the masked tiles' branch and of the soft-cap's tanh): causal, the
/// window's bounds (-1: unbounded) and the soft-cap (0: none).
struct AttentionVariant {
  bool causal = false;
  int64_t windowLeft = -1, windowRight = -1;
  double softcap = 0.0;
  bool varlen = false;  // packed sequences (attn.attention's `varlen`)
  int64_t pageSize = 0; // K/V from a paged cache (attn.attention's `paged`)
};
/// The variant of the (last) attn.attention in `module`; none without one.
AttentionVariant attentionVariantOf(mlir::ModuleOp module);

TileOptions defaultTileOptions(GPUMapping mapping, int64_t headDim,
                               const AttentionVariant &variant,
                               int64_t blockM = 0, int64_t blockN = 0,
                               int64_t warps = 0, int64_t stages = 0,
                               const std::string &arch = "");

/// The last word on a wgmma schedule after a caller applied its requests
/// (spec tuning or CLI flags) to defaultTileOptions: persistent blocks and
/// the TMA epilogue exist only on the wgmma mapping's tma schedule, and an
/// unrequested TMA epilogue stays only where it fits and pays
/// (wgmma::tmaEpilogueByDefault).
void settleWgmmaSchedule(TileOptions &tile, GPUMapping mapping, int64_t headDim,
                         bool epilogueRequested);
/// attn (graph level) -> tile (kernel level).
void buildTilePipeline(mlir::OpPassManager &pm, const TileOptions &options);

/// Decode's kernel-level options: keys per KV tile, most query rows per
/// sequence.
struct DecodeTileOptions {
  // Keys per K/V tile. 16: on the H200 best or within 1% on every row of
  // the decode sweep at pages 16 and 256 (B=64: 3.97 / 4.21 TB/s against
  // 3.64 / 3.89 at 32; bench/NOTES.md, 2026-11-29); 64 spills at D = 128.
  int64_t blockN = 16;
  int64_t maxQLen = 1;
  // K/V tiles per ring: 1 = copy each where it is used, n = keep the next
  // n - 1 in flight (tuning.stages, 1 to 4). 3: with the swizzled tiles and
  // kDecodeProgramsPerSm programs per SM, the fastest on every row of the
  // H200 decode sweep (B1 L128k 4.10, B16 L32k 4.53, B64 L4k 4.33, B64
  // L16k 4.58 TB/s; one stage 3.46-4.54; bench/NOTES.md, 2026-11-29).
  int64_t stages = 3;
};

/// The KV append kernel (attn.kv_append after attnc-tile-decode) -> NVVM:
/// 16-byte vector copies, any sm_80+ GPU.
void buildKVAppendGPUPipeline(mlir::OpPassManager &pm);

/// attn.decode -> the split-KV kernel and its combine (attnc-tile-decode).
void buildDecodeTilePipeline(mlir::OpPassManager &pm,
                             const DecodeTileOptions &options);

/// tile -> LLVM dialect for the host CPU: every program of the grid runs in
/// turn, with the portable (linalg) meaning of each tile op. Pointer
/// parameters use MLIR's memref descriptor convention (allocated, aligned,
/// offset); see HostKernel.
void buildHostPipeline(mlir::OpPassManager &pm);

/// tile -> NVVM for any sm_80+ GPU through the SIMT mapping (one query row
/// per thread, no tensor cores): a gpu.module ready for emitPTX.
void buildSIMTPipeline(mlir::OpPassManager &pm);

/// tile -> NVVM for sm_80+ through the mma.sync m16n8k16 mapping (tensor
/// cores; FlashAttention-2's register layout).
void buildMMAPipeline(mlir::OpPassManager &pm, const TileOptions &options = {});

/// tile -> NVVM (with wgmma as inline PTX) for sm_90a through the wgmma
/// mapping (one warpgroup per 64 query rows; see WGMMAEmitter.h).
void buildWGMMAPipeline(mlir::OpPassManager &pm,
                        const TileOptions &options = {});

/// Row kernels (fused elementwise): 0 = chosen by row length.
struct RowOptions {
  int64_t threadsPerRow = 0;
  int64_t rowsPerProgram = 0;
  int64_t minBlocksPerSm = 0; // 0: no register cap for occupancy
};

/// attn elementwise chain -> one tile-level row kernel.
void buildRowTilePipeline(mlir::OpPassManager &pm, const RowOptions &options);

/// tile row kernel -> NVVM (16-byte vectors, shuffle/shared-memory
/// reductions), for any sm_80+ GPU.
void buildRowGPUPipeline(mlir::OpPassManager &pm);

/// Registers the pipelines as attnc-opt options (-attnc-host-pipeline, ...).
void registerPipelines();

} // namespace attnc

#endif
