//===- GPUEmitCommon.h - pieces every GPU mapping of tile ops shares -*- C++
//-*-===//
//
// The per-element meaning of tile.score, NVVM's fast exp2/log2, and the
// cooperative staging of a K/V tile into shared memory: the same for the
// SIMT and the mma.sync mappings, which differ only in which thread owns
// which element.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_CONVERSION_TILETOGPU_GPUEMITCOMMON_H
#define ATTNC_COMPILER_CONVERSION_TILETOGPU_GPUEMITCOMMON_H

#include "dialects/Tile/IR/TileOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"

#include <optional>

namespace attnc::gpu_emit {

inline constexpr float kLog2e = 1.4426950408889634f;
inline constexpr float kLn2 = 0.6931471805599453f;
/// Global and shared vector accesses are 16-byte aligned: the runtime
/// checks 16-byte alignment of Q, K, V, O and their strides.
inline constexpr int64_t kVectorAlign = 16;

mlir::Value f32Const(mlir::OpBuilder &b, mlir::Location loc, float v);
mlir::Value indexConst(mlir::OpBuilder &b, mlir::Location loc, int64_t v);

/// `then()` emits, through `b`, the body of an scf.if on `cond` (no else,
/// no results) created where `b` stands; `b` is left after the if.
void emitIfThen(mlir::OpBuilder &b, mlir::Location loc, mlir::Value cond,
                llvm::function_ref<void()> then);

/// A vector of type `t` from its leading elements `rows` (a fragment row
/// per register in the tensor-core mappings).
mlir::Value fromRows(mlir::OpBuilder &b, mlir::Location loc, mlir::VectorType t,
                     llvm::ArrayRef<mlir::Value> rows);
/// Max or sum of `x` over the four lanes of a quad (lanes 4g..4g+3 hold one
/// accumulator row in the mma.sync and wgmma C layouts).
mlir::Value quadReduce(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                       bool max);

/// 2^x with ex2.approx.ftz (exact at -inf -> 0), element-wise on vectors.
mlir::Value exp2(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);

/// The merge of partial softmax states, defined once for every place where
/// states meet: the online update (the running state and a tile's),
/// tile.lse_accumulate (a split's state into the running one), the decode
/// kernel's key warps, the split-KV combine and the stream-K fixup. States
/// i, each a row maximum m_i (log2 domain), a sum l_i and an accumulator
/// O_i, merge into
///   M = max_i m_i,   l = sum_i w_i·l_i,   O = sum_i w_i·O_i,
///   w_i = exp2(m_i - ref),   ref = M, or 0 when M = -inf,
/// so rows that saw no key (every m_i = -inf: masked rows, empty splits)
/// get weights exp2(-inf) = 0 and keep l = 0, O = 0, never NaN. A merge
/// site sums its weighted terms itself (its fragments differ); the maximum,
/// the reference and the weights come from here.
class StateMerge {
public:
  /// M as a chain of maxima over `maxima`, in order.
  StateMerge(mlir::OpBuilder &b, mlir::Location loc,
             llvm::ArrayRef<mlir::Value> maxima);
  /// The merge towards a maximum chosen by the caller: the online update's
  /// rescale threshold may keep the old maximum.
  static StateMerge towards(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::Value max);

  mlir::Value max() const { return maxValue; }
  mlir::Value reference() const { return ref; }
  /// w = exp2(m - ref) of a state whose maximum is `m` (element-wise on
  /// vectors of maxima: ref is broadcast).
  mlir::Value weight(mlir::Value m) const;

private:
  StateMerge(mlir::OpBuilder &b, mlir::Location loc, mlir::Value max);
  mlir::OpBuilder &b;
  mlir::Location loc;
  mlir::Value maxValue, ref;
};

/// A row's final state (max `m`, sum `l`, both in the log2 domain) merged
/// with an attention sink: one more key of logit `sinkLog2` (log2 domain)
/// and value 0 (tile.finalize's `sink`). The accumulator is scaled by
/// `accWeight`; `max` is the new reference (the LSE's log2 offset) and
/// `sum` the new sum, 0 only when the state and the sink are both empty.
struct SinkMerge {
  mlir::Value max, sum, accWeight;
};
SinkMerge mergeSink(mlir::OpBuilder &b, mlir::Location loc, mlir::Value m,
                    mlir::Value l, mlir::Value sinkLog2);
/// A sink's logit (natural units, as the kernel reads it) in the log2
/// domain of the row states.
mlir::Value sinkLog2Of(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::Value sink);
/// The natural-log LSE of a row's final state (max `m` in the log2 domain,
/// sum `l` > 0): (m + log2 l) · ln 2. With a merged sink (`sink` and its
/// `sinkLog2`), a row whose reference is the sink's logit takes the sink
/// itself for m · ln 2 (and 0 for log2 1), so that a row without keys gets
/// LSE = sink exactly, not sink · log2 e · ln 2 rounded twice.
mlir::Value lseOf(mlir::OpBuilder &b, mlir::Location loc, mlir::Value m,
                  mlir::Value l, mlir::Value sink = {},
                  mlir::Value sinkLog2 = {});

/// Inline PTX `text` with LLVM's `constraints`, with side effects (never
/// moved or removed by the optimiser), in AT&T dialect as upstream's PTX
/// builders emit it.
mlir::LLVM::InlineAsmOp inlinePtx(mlir::OpBuilder &b, mlir::Location loc,
                                  mlir::TypeRange results,
                                  mlir::ValueRange operands,
                                  llvm::StringRef text,
                                  llvm::StringRef constraints);

/// An index equal to `x` that LLVM's optimiser cannot see through (a
/// `mov.b32` in inline PTX with side effects, on the low 32 bits): what is
/// computed from it stays where it is emitted. For per-thread addresses in a
/// persistent loop's epilogue, which LICM would otherwise hoist out of the
/// loop and keep live across everything (registers the consumers lack).
mlir::Value opaqueIndex(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
/// log2(x) with lg2.approx (~2^-22 relative error).
mlir::Value log2(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);

/// The value tile.score gives the raw score `s` of query row `row` and key
/// `key` (absolute indices): scaled, soft-capped, score_mod, then -inf where
/// masked, in the log2 domain. `map` gives the per-thread values of the
/// op's index operands.
/// With `masks` false the masks are left out: for tiles known to be wholly
/// visible (see tileNeedsMasks).
/// With `deferScale` (plain ops only: no softcap, no score_mod) the
/// scale·log2(e) multiply is left to the consumer: the raw score or -inf.
/// With kv_bounds, `rowRange` may give the row's [first, end) (i32, from
/// rowKeyRange) so that a caller computing many elements of one row loads
/// them once; otherwise they are loaded here.
mlir::Value scoreElement(mlir::OpBuilder &b, mlir::Location loc,
                         attnc::tile::ScoreOp op, const mlir::IRMapping &map,
                         mlir::Value s, mlir::Value row, mlir::Value key,
                         bool masks = true, bool deferScale = false,
                         mlir::ArrayRef<mlir::Value> rowRange = {});

/// Row `row`'s key range [first, end) from tile.score's kv_bounds (i32
/// values; a row past seq_q reads the last row's: it is never stored).
std::pair<mlir::Value, mlir::Value>
rowKeyRange(mlir::OpBuilder &b, mlir::Location loc, attnc::tile::ScoreOp op,
            const mlir::IRMapping &map, mlir::Value row);

/// Whether any score of the tile of query rows [q0, q0 + rows) and keys
/// [k0, k0 + cols) may be masked (an i1, the same on every thread): a key
/// past seq_kv, a causal/window bound or a row's key range (kv_bounds)
/// crossing the tile, or a mask_mod.
mlir::Value tileNeedsMasks(mlir::OpBuilder &b, mlir::Location loc,
                           attnc::tile::ScoreOp op, const mlir::IRMapping &map,
                           int64_t rows, int64_t cols);

/// Copies rows [row, row + R) of the [B, H, S, D] view `view` at (batch,
/// head) into the shared R x C buffer `buf` (C >= D: padded rows), zero past
/// the sequence end, 8 elements (16 bytes) per access, the work spread over
/// `threads` threads with index `tid`. A barrier first (earlier readers of
/// `buf` are done). Synchronous: loads and stores through registers, then a
/// barrier. Async: cp.async (16 bytes, zero-filled past the end) committed
/// as one group (unless `commit` is false: the caller commits); the caller
/// waits for the group and then synchronises. `barrier` false leaves out the
/// leading barrier when the caller has placed one. `length` (else the
/// view's sequence length) bounds the rows; with `table` the view is a paged
/// cache [pages, heads, page_size, D] and `batch` picks the block table's
/// row (see tile.load). `tilePages` (index values), when the tile lies in
/// tilePageCount(rows, page size) whole pages, are those pages, looked up
/// ahead by the caller (see tilePagesOf); else they are looked up here.
/// `swizzle`: `buf` is unpadded and chunk c of row r lands at chunk
/// swizzledColumn(r, c) (see there). `unrollWholeTile`: an async tile
/// inside the sequence that the threads divide evenly is copied by an
/// unrolled sequence of cp.async from one per-tile base (else by a loop
/// over the chunks from tid); the caller decides, since it is not faster
/// everywhere (see TileToMMA's issueStage).
void stageRows(mlir::OpBuilder &b, mlir::Location loc, mlir::Value view,
               mlir::Value batch, mlir::Value head, mlir::Value row,
               mlir::Value buf, int64_t rows, int64_t dim, mlir::Value tid,
               int64_t threads, bool async = false, bool barrier = true,
               bool commit = true, mlir::Value length = {},
               mlir::Value table = {},
               llvm::ArrayRef<mlir::Value> tilePages = {}, bool swizzle = false,
               bool unrollWholeTile = false);

/// The XOR-swizzled shared-memory layout of a staged tile whose rows are a
/// multiple of 64 elements (128 bytes): the 16-byte chunk c of row r is
/// stored at chunk c ^ (r mod 8), so `col` (a multiple of 8 elements)
/// becomes col ^ 8 (r mod 8). Eight consecutive rows read at one chunk (an
/// ldmatrix 8x8 matrix) fall in eight distinct bank groups, as padding the
/// rows by 16 bytes would give, but every 128-byte segment of a row stays
/// one aligned 128-byte segment: a quarter-warp's 16-byte cp.async copies
/// of it are one shared-memory wavefront and four L2 sectors. With padded
/// rows they straddle segments: 1.5x the L2 sectors of the ideal and 2-3x
/// the wavefronts (ncu; bench/NOTES.md, "decode was L2-bound by its own
/// shared-memory padding", 2026-11-29).
mlir::Value swizzledColumn(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value row, mlir::Value col);

/// Pages a tile of `rows` rows starting on a multiple of `rows` covers,
/// when that is one (the page size a multiple of rows) or a few (rows a
/// multiple of the page size, at most kMaxTilePages pages); else 0 (one
/// lookup per row).
inline constexpr int64_t kMaxTilePages = 4;
int64_t tilePageCount(int64_t rows, int64_t pageSize);

/// The `count` block-table entries of the pages holding rows row,
/// row + page size, ... (each clamped as tilePageOf does).
llvm::SmallVector<mlir::Value> tilePagesOf(mlir::OpBuilder &b,
                                           mlir::Location loc,
                                           mlir::Value table, mlir::Value batch,
                                           mlir::Value row, mlir::Value length,
                                           int64_t pageSize, int64_t count);

/// The block-table entry (index) of the page that holds row `row` of a
/// paged view, the row clamped into [0, length): what stageRows looks up
/// for a tile that lies in one page.
mlir::Value tilePageOf(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::Value table, mlir::Value batch, mlir::Value row,
                       mlir::Value length, int64_t pageSize);

/// Whether a tile.load feeds only the left operand of tile.dots (its rows
/// belong to the program's query rows) rather than being shared by all.
bool isRowOwnedLoad(attnc::tile::LoadOp load);

/// The frame every GPU mapping shares: moves each tile kernel of `module`
/// (a func.func with `tile.launch`) into `gpu.module @kernels` as a kernel
/// gpu.func with the same arguments and `threads(kernel, launch)` threads, and
/// carves one buffer per staged tile (every K/V tile, and the row-owned Q
/// tile too when `stageRowOwned`; rows padded by `rowPad` elements; kernel
/// order) out of dynamic shared memory, so a kernel may use more than the
/// 48 KiB of static shared memory. `emit` writes the body after the
/// buffers; the func.func is erased. The launch geometry of each kernel is
/// recorded on the module (see launchInfo). A load for which `ringStages`
/// returns n > 1 gets a ring of n tiles: one n x rows x cols buffer.
/// When `scratchBytes` returns n > 0, one more buffer, memref<n x i8>, comes
/// last in `buffers`, after the tiles (e.g. mbarrier objects). Shared memory
/// other than these buffers must not be used: the dynamic shared memory is
/// lowered to a function-local `.shared` variable at the start of the
/// block's window, so a static workgroup attribution would alias the first
/// tile.
mlir::LogicalResult mapKernelsToGPU(
    mlir::ModuleOp module, int64_t rowPad, bool stageRowOwned,
    llvm::function_ref<int64_t(mlir::func::FuncOp, attnc::tile::LaunchAttr)>
        threads,
    llvm::function_ref<mlir::LogicalResult(
        mlir::func::FuncOp, mlir::gpu::GPUFuncOp, attnc::tile::LaunchAttr,
        llvm::ArrayRef<mlir::Value> buffers)>
        emit,
    llvm::function_ref<int64_t(attnc::tile::LoadOp)> ringStages = nullptr,
    llvm::function_ref<int64_t(mlir::func::FuncOp, attnc::tile::LaunchAttr)>
        scratchBytes = nullptr);

/// The staged loads of a KV loop that can be copied an iteration ahead:
/// their row is the induction variable, their source, batch and head are
/// loop-invariant, and they are neither paged nor length-bounded.
llvm::SmallVector<attnc::tile::LoadOp> prefetchableLoads(mlir::scf::ForOp loop);

/// The tile kernels (func.func with `tile.launch`) of `module` whose launch
/// rule is `rule`, in module order.
llvm::SmallVector<mlir::func::FuncOp> kernelsWithRule(mlir::ModuleOp module,
                                                      llvm::StringRef rule);

/// The gpu.module @kernels of `module` that kernels are moved into: the
/// last one there is, else a new one at the end; `module` is marked a GPU
/// container module either way.
mlir::gpu::GPUModuleOp kernelsModule(mlir::ModuleOp module);

/// The kernel gpu.func that stands in for tile kernel `kernel`, appended to
/// `gpuModule`: the kernel's name, signature and parameter attributes, its
/// tile.launch, `threads` per block (known_block_size) and `workgroup`
/// buffers of static shared memory. The mapping writes its body.
mlir::gpu::GPUFuncOp createKernelFunc(mlir::OpBuilder &b,
                                      mlir::gpu::GPUModuleOp gpuModule,
                                      mlir::func::FuncOp kernel,
                                      int64_t threads,
                                      mlir::TypeRange workgroup = {});

/// Records kernel `kernel`'s launch geometry on `module` (see launchInfo),
/// beside what earlier mappings recorded there.
void recordLaunchInfo(mlir::ModuleOp module, llvm::StringRef kernel,
                      int64_t threads, int64_t dynamicSmem);

/// What a launch of a mapped kernel needs: threads per block and bytes of
/// dynamic shared memory. mapKernelsToGPU records it on the top-level
/// module (attribute "attnc.launch_info"), where it survives the lowering
/// of the gpu.module to a binary.
struct KernelLaunchInfo {
  int64_t threads = 0;
  int64_t dynamicSmem = 0;
};
std::optional<KernelLaunchInfo> launchInfo(mlir::ModuleOp module,
                                           llvm::StringRef kernel);

/// Records that the wgmma mapping gave kernel `kernel` the stream-K tail's
/// parameters (abi::kAttentionStreamKParams and the workspace, last), and asks
/// whether it did (module attribute "attnc.stream_k", kernel names).
void recordStreamK(mlir::ModuleOp module, llvm::StringRef kernel);
bool hasStreamK(mlir::ModuleOp module, llvm::StringRef kernel);

/// Whether a tile kernel reads cu_seqlens (a varlen attention: each
/// program's views start at its sequence's first row).
bool isVarlenKernel(mlir::func::FuncOp kernel);

} // namespace attnc::gpu_emit

#endif
