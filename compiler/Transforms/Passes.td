//===- Passes.td - attnc's passes --------------------------*- tablegen -*-===//
#ifndef ATTNC_COMPILER_TRANSFORMS_PASSES
#define ATTNC_COMPILER_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def TileAttention : Pass<"attnc-tile-attention", "mlir::ModuleOp"> {
  let summary = "Rewrite each attn.attention function into a tiled kernel "
                "with the online softmax";
  let description = [{
    A function whose body is one `attn.attention` on its arguments becomes a
    kernel function in the `tile` dialect: each program takes `block-m` query
    rows, loops over `block-n`-wide K/V tiles (skipping tiles that causal or
    window masks hide entirely), and carries the running max, running sum
    and rescaled accumulator through the loop. The kernel's arguments are
    the runtime's launch ABI (`attention_fwd_v1`): pointers to Q, K, V, O and
    LSE, then batch, seq_q, seq_kv and the element strides of each tensor.
  }];
  let options = [
    Option<"blockM", "block-m", "int64_t", "64", "Query rows per program">,
    Option<"blockN", "block-n", "int64_t", "64", "Keys per KV tile">,
  ];
  let dependentDialects = ["::attnc::tile::TileDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def TileAttentionBackward : Pass<"attnc-tile-attention-bwd",
                                 "mlir::ModuleOp"> {
  let summary = "Rewrite each attn.attention_bwd function into the three "
                "kernels of FlashAttention-2's recompute backward";
  let description = [{
    A function `@f` whose body is one `attn.attention_bwd` on its arguments
    becomes three kernel functions in the `tile` dialect, launched in this
    order, all with the parameters `attention_bwd` of the launch ABI
    (pointers to Q, K, V, O, dO, LSE, dQ, dK, dV and the f32 workspaces
    dq_accum and delta, then batch, seq_q, seq_kv and the strides):
    - `@f_preprocess` (`attention_bwd_preprocess_v1`, one program per
      `block-m` query rows, head and batch): `delta = rowsum(dO ∘ O)`
      (`tile.row_dot`), and zeroes its rows of dq_accum;
    - `@f` (`attention_bwd_v1`, one program per `block-n` keys, KV head and
      batch): loads K_j and V_j once, loops over the query heads of the
      group and the query tiles that see the tile (tiles that causal or
      window masks hide entirely are skipped), recomputes
      `P = exp(s - LSE)` (`tile.score`, `tile.probs_from_lse`),
      accumulates `dV += Pᵀ·dO` and `dK += dSᵀ·Q` (`tile.dot`
      `transpose_a`) with `dS` from `tile.score_grad`, and adds
      `scale · dS·K` into dq_accum (`tile.store_add`);
    - `@f_convert` (`attention_bwd_convert_v1`): `dQ = dq_accum` in the
      input type.
  }];
  let options = [
    Option<"blockM", "block-m", "int64_t", "64", "Query rows per tile">,
    Option<"blockN", "block-n", "int64_t", "64", "Keys per K/V tile (one "
           "main-kernel program)">,
  ];
  let dependentDialects = ["::attnc::tile::TileDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def TileDecode : Pass<"attnc-tile-decode", "mlir::ModuleOp"> {
  let summary = "Rewrite each attn.decode function into a split-KV kernel "
                "and its LSE combine";
  let description = [{
    A function `@f` whose body is one `attn.decode` on its arguments becomes
    two kernel functions: `@f_split` (launch rule `decode_split_v3`, one
    program per (split, KV head, sequence): the online softmax over its
    chunk of the paged cache for the whole GQA group, `max-q-len` rows per
    head, padded to 16; writes a partial O and LSE in f32) and `@f_combine`
    (`decode_combine_v2`: merges the partials by their LSE weights into O
    and LSE). The number of splits is a kernel argument, so the runtime
    picks it per problem. A function holding one `attn.lse_merge` (cascade
    attention) becomes the kernel `lse_merge_v1` of the same name.
  }];
  let options = [
    Option<"blockN", "block-n", "int64_t", "64", "Keys per KV tile">,
    Option<"maxQLen", "max-q-len", "int64_t", "1",
           "Most query rows per sequence (speculative decoding)">,
    Option<"stages", "stages", "int64_t", "1",
           "K/V tiles per ring in the split kernel (1 to 4): 1 copies each "
           "tile where it is used, n >= 2 keeps the next n - 1 tiles in "
           "flight (cp.async rings; marks the kernel "
           "`tile.prefetch_paged = n`)">,
  ];
  let dependentDialects = ["::attnc::tile::TileDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def LowerTileToLinalg : Pass<"attnc-lower-tile-to-linalg"> {
  let summary = "Lower tile ops to linalg, tensor and scf on tensors (host path)";
  let description = [{
    Gives each tile op its portable meaning in upstream ops, so that the
    kernel-level algorithm can be bufferized and run on the host CPU: loads
    and stores become guarded element loops, dots linalg contractions with
    f32 accumulation, the softmax steps linalg.generic maps and row
    reductions.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def HostGrid : Pass<"attnc-host-grid", "mlir::func::FuncOp"> {
  let summary = "Run a kernel's grid of programs as loops on the host";
  let description = [{
    Wraps the body of a kernel function (one with `tile.launch`) in loops
    over its grid, replacing `tile.program_id` by the loop indices, so that
    the host executes every program in turn.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def MapTileToSIMT : Pass<"attnc-map-tile-to-simt", "mlir::ModuleOp"> {
  let summary = "Map tile kernels onto GPU threads, one query row per thread";
  let description = [{
    Moves each tile kernel into a `gpu.module` as a `gpu.func` whose thread
    block is one program: tiles of the program's query rows become per-thread
    vectors (one row per thread, `block_m` threads); K/V tiles read by every
    row are staged in workgroup memory by all threads, between barriers. No
    tensor cores: the portable correctness baseline for the tensor-core
    mappings.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect"];
}

def ChooseMMASchedule : Pass<"attnc-choose-mma-schedule", "mlir::ModuleOp"> {
  let summary = "Record each tile kernel's schedule for the mma.sync mapping";
  let description = [{
    Gives every tile kernel `tgpu.schedule = #tgpu.mma_schedule<...>` from
    this pass's options, for `attnc-map-tile-to-mma` to read: rows per warp,
    Q in shared memory, the K/V ring depth, padded or swizzled staging and
    warps along the keys (the decode split kernel's only). Staged tiles are
    swizzled in a module with a decode split kernel (memory-bound: padded
    rows cost it 1.5x the L2 sectors) or with swizzle-staged, when every
    staged row is a multiple of 64 elements; else padded (prefill keeps the
    padding by default: its XOR'd ldmatrix addresses take registers). Both
    from bench/NOTES.md, "decode was L2-bound by its own shared-memory
    padding", 2026-11-29.
  }];
  let options = [
    Option<"rowsPerWarp", "rows-per-warp", "int64_t", /*default=*/"16",
           "Query rows per warp: 16 or 32">,
    Option<"qInSharedMemory", "q-in-smem", "bool", /*default=*/"false",
           "Stage Q in shared memory instead of registers">,
    Option<"kvStages", "kv-stages", "int64_t", /*default=*/"2",
           "Tiles per K/V ring of the prefill KV loop (2 to 4; a decode "
           "split kernel's `tile.prefetch_paged` gives its own)">,
    Option<"swizzleStaged", "swizzle-staged", "bool", /*default=*/"false",
           "Staged tiles unpadded with XOR-swizzled 16-byte chunks in every "
           "kernel (default: the decode split kernel only); rows must be "
           "multiples of 64 elements, else they stay padded">,
    Option<"decodeKeyWarps", "decode-key-warps", "int64_t",
           /*default=*/"1",
           "Warps along the keys of the decode split kernel (1, 2, 4 or 8): "
           "each takes block_n / warps keys of every K/V tile with its own "
           "online softmax, all copy the tiles, and the warps' states merge "
           "through shared memory after the KV loop">,
  ];
  let dependentDialects = ["::attnc::tgpu::TgpuDialect"];
}

def MapTileToMMA : Pass<"attnc-map-tile-to-mma", "mlir::ModuleOp"> {
  let summary = "Map tile kernels onto warps with mma.sync m16n8k16 (sm_80+)";
  let description = [{
    The tensor-core mapping: each warp owns 16 or 32 query rows (one or two
    m16 tiles: with two, every K/V fragment read from shared memory feeds
    two independent mma chains); S, P and the accumulator live in registers
    in mma.sync's fragment layouts; P is reused as the A operand of P·V
    without leaving registers; K and V tiles are staged in padded or
    swizzled shared memory, and Q too with q_in_smem (its fragments are then
    read with ldmatrix at each use, which frees 4·head_dim/16 registers per
    m16 tile). Block: 32 · block_m / rows_per_warp threads (times key_warps
    in the decode split kernel). Each kernel's choices are its
    `#tgpu.mma_schedule` (attnc-choose-mma-schedule).
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::nvgpu::NVGPUDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect"];
}

def AssignLayouts : Pass<"attnc-assign-layouts", "mlir::ModuleOp"> {
  let summary = "Record the thread layout of every tile and each kernel's "
                "schedule for the sm_90a wgmma mapping";
  let description = [{
    For each attention tile kernel: every tile's tensor type gets, as its
    encoding, how the mapping will hold it (`#tgpu.wgmma` accumulators for
    S, P and O, one warpgroup per 64 query rows; `#tgpu.row_stats` for the
    running max and sum; `#tgpu.dot_operand` for P in 16 bits, the register
    A operand of P·V; `#tgpu.shared` with the 128-byte swizzle in 64-column
    blocks for Q, K and V), and the kernel gets its schedule as
    `tgpu.schedule = #tgpu.wgmma_schedule<...>` from this pass's options.
    `attnc-map-tile-to-wgmma` reads both; a choice that changes the code is
    therefore in the IR, where a lit test or `attnc emit --emit` shows it.
    The schedule's verifier rejects combinations no mapping has (persistent
    blocks or the TMA epilogue without `kv-sync=tma`).
  }];
  let options = [
    Option<"kvStages", "kv-stages", "int64_t", /*default=*/"2",
           "Tiles in each of the K and V shared-memory rings (2-4)">,
    Option<"kvSync", "kv-sync", "::attnc::tgpu::KVSync",
           /*default=*/"::attnc::tgpu::KVSync::mbarrier",
           "How the rings are filled and synchronised",
           [{::llvm::cl::values(
             clEnumValN(::attnc::tgpu::KVSync::barrier, "barrier",
                        "every thread copies; one CTA barrier per tile"),
             clEnumValN(::attnc::tgpu::KVSync::mbarrier, "mbarrier",
                        "every thread copies; per-stage full/empty "
                        "mbarriers"),
             clEnumValN(::attnc::tgpu::KVSync::producer, "producer",
                        "a producer warpgroup copies (warp specialisation, "
                        "setmaxnreg)"),
             clEnumValN(::attnc::tgpu::KVSync::pingpong, "pingpong",
                        "producer, and the consumer warpgroups take turns "
                        "issuing wgmma"),
             clEnumValN(::attnc::tgpu::KVSync::tma, "tma",
                        "pingpong whose producer is one thread issuing TMA "
                        "copies"))}]>,
    Option<"rescale", "rescale", "::attnc::tgpu::Rescale",
           /*default=*/"::attnc::tgpu::Rescale::threshold",
           "When O and the row sums are rescaled as a row's max grows",
           [{::llvm::cl::values(
             clEnumValN(::attnc::tgpu::Rescale::threshold, "threshold",
                        "past a growth of 2^8 (FlashAttention-4's; exact)"),
             clEnumValN(::attnc::tgpu::Rescale::exact, "exact",
                        "at every growth"))}]>,
    Option<"grid", "grid", "::attnc::tgpu::Grid",
           /*default=*/"::attnc::tgpu::Grid::tiles",
           "One block per work item or persistent blocks (kv-sync=tma)",
           [{::llvm::cl::values(
             clEnumValN(::attnc::tgpu::Grid::tiles, "tiles",
                        "one block per (query tile, head, batch)"),
             clEnumValN(::attnc::tgpu::Grid::persistent, "persistent",
                        "min(items, SMs) blocks looping over the items "
                        "(grid rule attention_fwd_persistent_v1)"))}]>,
    Option<"streamK", "stream-k", "bool", /*default=*/"true",
           "grid=persistent only: the stream-K tail where every item has "
           "the same KV tiles and the launch passes a workspace">,
    Option<"epilogue", "epilogue", "::attnc::tgpu::Epilogue",
           /*default=*/"::attnc::tgpu::Epilogue::registers",
           "How O is written",
           [{::llvm::cl::values(
             clEnumValN(::attnc::tgpu::Epilogue::registers, "registers",
                        "each thread stores its accumulator fragments"),
             clEnumValN(::attnc::tgpu::Epilogue::tma, "tma",
                        "stmatrix into swizzled shared memory, then a TMA "
                        "store of the o_tmap parameter (kv-sync=tma)"))}]>,
  ];
  let dependentDialects = ["::attnc::tgpu::TgpuDialect"];
}

def MapTileToWGMMA : Pass<"attnc-map-tile-to-wgmma", "mlir::ModuleOp"> {
  let summary = "Map tile kernels onto warpgroups with wgmma (sm_90a)";
  let description = [{
    The Hopper mapping of the kernels `attnc-assign-layouts` prepared: it
    lowers the layouts their tiles carry (`#tgpu.wgmma` accumulators,
    `#tgpu.row_stats`, `#tgpu.dot_operand` P, `#tgpu.shared` Q/K/V) and
    follows each kernel's `tgpu.schedule` (`#tgpu.wgmma_schedule`). One
    warpgroup (128 threads) per 64 query rows; Q, K and V tiles are staged
    into 128-byte-swizzled shared memory and read by `wgmma.mma_async`
    through matrix descriptors (QKᵀ: `nvvm.wgmma.mma_async`, both operands
    in shared memory; P·V: the register-A form, V N-major with the transpose
    bit). Block: 2 · block_m threads (+ 128 for a producer warpgroup). Head
    dims 64 to 256, 16-bit inputs; other variants are rejected with a
    diagnostic (the drivers fall back to mma.sync). The K and V rings hold
    `kv_stages` tiles, copied `kv_stages - 1` tiles ahead; the softmax of
    tile j runs under the P·V wgmma of tile j - 1.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::nvgpu::NVGPUDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect"];
}

def FuseElementwise : Pass<"attnc-fuse-elementwise", "mlir::ModuleOp"> {
  let summary = "Fuse a function's chain of attn elementwise and row ops "
                "into one row kernel";
  let description = [{
    A function whose body is a chain of `attn.map`, `attn.reduce`,
    `attn.slice` and the named ops (`attn.silu_mul`, `attn.gelu_mul`,
    `attn.add_rmsnorm`) over its `[rows, d]` / `[d]` arguments becomes one
    kernel function in the `tile` dialect, written for one row: each input
    is loaded once (`tile.load_row`, a slice being a column offset), every
    op works on 1-D tiles of the row in registers, row reductions are
    `tile.reduce_row`, and each result is stored once (`tile.store_row`).
    The kernel's arguments follow the `rowwise_v1` launch ABI (see
    attnc/abi/LaunchParams.h); arguments are named by their `attn.param`
    attribute (default `in<i>` / `out<i>`).
  }];
  let options = [
    Option<"threadsPerRow", "threads-per-row", "int64_t", "0",
           "GPU threads per row (a power of two; 0: by row length)">,
    Option<"rowsPerProgram", "rows-per-program", "int64_t", "0",
           "Rows per GPU program (0: by row length)">,
    Option<"minBlocksPerSm", "min-blocks-per-sm", "int64_t", "0",
           "Blocks that must fit one SM at once (registers are capped to "
           "fit; 0: no cap), as `tile.min_blocks_per_sm`">,
  ];
  let dependentDialects = ["::attnc::tile::TileDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::tensor::TensorDialect"];
}

def MapRowsToGPU : Pass<"attnc-map-rows-to-gpu", "mlir::ModuleOp"> {
  let summary = "Map row kernels onto GPU threads with 16-byte vectors";
  let description = [{
    Each `rowwise_v1` kernel becomes a `gpu.func`: `block_n` threads share a
    row, `block_m` rows share a block. A row tile becomes per-thread
    `vector<8xT>` chunks (thread `l` of a row owns chunks `l, l + block_n,
    ...`), loaded and stored with 16-byte vector accesses and kept in
    registers; elementwise ops apply per chunk; `tile.reduce_row` reduces in
    registers, then with warp shuffles, then (past one warp) through shared
    memory.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect"];
}

def MapCombineToGPU : Pass<"attnc-map-combine-to-gpu", "mlir::ModuleOp"> {
  let summary = "Map the split-KV combine onto a block whose warps share "
                "the splits";
  let description = [{
    Each `decode_combine_v2` kernel (from `attnc-tile-decode`) becomes a
    `gpu.func` of 256 threads. Its loop over the splits is a log-sum-exp
    merge, which is associative, so instead of one split after the other
    the block finds the largest LSE of a row first (every thread reads some
    of them), then each warp sums its share of the splits weighted against
    it (16-byte vector loads, four splits in flight per warp), and the
    warps' sums meet in shared memory. Runs before the attention mappings,
    which then map the remaining kernels.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect"];
}

def MapKVAppendToGPU : Pass<"attnc-map-kv-append-to-gpu", "mlir::ModuleOp"> {
  let summary = "Map the KV append kernel onto GPU threads with 16-byte "
                "vectors";
  let description = [{
    Each `kv_append_v1` kernel (from `attnc-tile-decode`) becomes a
    `gpu.func`: `block_n` threads copy one (token, KV head) row of key and
    value with 16-byte vector loads and stores, `block_m` rows share a
    block; the slot check stays a `scf.if` around the row's copies.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect"];
}

def MarkTensorMapParams : Pass<"attnc-mark-tensor-map-params",
                                "mlir::ModuleOp"> {
  let summary = "Pass the TMA tensor maps a kernel names by value, as "
                "__grid_constant__ parameters";
  let description = [{
    A kernel `llvm.func` whose `attnc.tensor_map_args` attribute lists
    argument indices (set by the wgmma mapping for kv-sync=tma) gets, on
    each of those `!llvm.ptr` arguments, `llvm.byval = !llvm.array<128 x
    i8>`, `llvm.align = 64` and `nvvm.grid_constant`: NVPTX then declares a
    `.param .align 64 .b8 name[128]` and the pointer is its generic address
    (`cvta.param`), which `cp.async.bulk.tensor` takes as the tensor map.
    Runs after the GPU-to-NVVM conversion, which keeps function attributes
    but not these argument attributes.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect"];
}

#endif // ATTNC_COMPILER_TRANSFORMS_PASSES
