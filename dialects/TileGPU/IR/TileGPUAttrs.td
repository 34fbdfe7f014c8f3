//===- TileGPUAttrs.td - layouts and schedules of tgpu -----*- tablegen -*-===//
#ifndef ATTNC_TILEGPU_ATTRS
#define ATTNC_TILEGPU_ATTRS

include "dialects/TileGPU/IR/TileGPUDialect.td"
include "dialects/TileGPU/IR/TileGPUEnums.td"
include "mlir/IR/TensorEncoding.td"

//===----------------------------------------------------------------------===//
// Layout interface
//===----------------------------------------------------------------------===//

def Tgpu_DistributedLayout : AttrInterface<"DistributedLayoutAttr"> {
  let cppNamespace = "::attnc::tgpu";
  let description = [{
    A tile spread over the threads of a block: thread `t` holds
    `getRegisters(shape)` elements, and its register `r` is the element at
    `getCoordinate(shape, t, r)` (row, or row and column). Several threads
    may hold the same element (row statistics live in every lane of a
    quad). This is the fragment math the lowering of every op on the tile
    follows.
  }];
  let methods = [
    InterfaceMethod<"Threads the tile is spread over", "int64_t",
                    "getThreads", (ins)>,
    InterfaceMethod<"Elements each thread holds", "int64_t", "getRegisters",
                    (ins "::llvm::ArrayRef<int64_t>":$shape)>,
    InterfaceMethod<"The element register `reg` of thread `thread` holds",
                    "::llvm::SmallVector<int64_t, 2>", "getCoordinate",
                    (ins "::llvm::ArrayRef<int64_t>":$shape,
                         "int64_t":$thread, "int64_t":$reg)>,
  ];
}

//===----------------------------------------------------------------------===//
// Register layouts
//===----------------------------------------------------------------------===//

def Tgpu_MmaLayoutAttr : Tgpu_Attr<"MmaLayout", "mma",
    [DeclareAttrInterfaceMethods<Tgpu_DistributedLayout>,
     DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let summary = "An mma.sync m16n8 accumulator spread over warps";
  let description = [{
    A `M x N` f32 tile over `warps` warps, `rows_per_warp` (16 or 32) rows
    each: warp `w` holds rows `[w·R, (w+1)·R)` as `R/16` m16 tiles, and in
    each, lane `4g + t` holds rows `g` and `g + 8` and columns `2t, 2t + 1`
    of every n8 tile. Register order: m16 tile, n8 tile, row half, column.
    ```mlir
    tensor<64x64xf32, #tgpu.mma<warps = 4, rows_per_warp = 16>>
    ```
  }];
  let parameters = (ins "int64_t":$warps, "int64_t":$rows_per_warp);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Tgpu_WgmmaLayoutAttr : Tgpu_Attr<"WgmmaLayout", "wgmma",
    [DeclareAttrInterfaceMethods<Tgpu_DistributedLayout>,
     DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let summary = "A wgmma m64nN accumulator per warpgroup";
  let description = [{
    A `M x N` f32 tile over `warpgroups` warpgroups of 64 rows each (`M =
    64 · warpgroups`): warp `w % 4` of warpgroup `w / 4` holds rows
    `16w + g` and `16w + g + 8` of every n8 tile (lane `4g + t`, columns
    `2t, 2t + 1`), register `i` of an m64nN wgmma being column
    `8(i/4) + 2t + i%2` of row half `(i/2) % 2`: the m16n8 C layout of
    `#tgpu.mma` with 16 rows per warp, written by an asynchronous wgmma.
    ```mlir
    tensor<128x128xf32, #tgpu.wgmma<warpgroups = 2>>
    ```
  }];
  let parameters = (ins "int64_t":$warpgroups);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Tgpu_DotOperandLayoutAttr : Tgpu_Attr<"DotOperandLayout", "dot_operand",
    [DeclareAttrInterfaceMethods<Tgpu_DistributedLayout>,
     DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let summary = "The register A operand of a dot whose result is `parent`";
  let description = [{
    The 16-bit A operand of m16n8k16 (mma.sync, and wgmma with A from
    registers): per m16 tile of the parent's rows and k16 chunk, lane
    `4g + t` holds four pairs: rows `g`, `g + 8`, `g`, `g + 8` at columns
    `2t + {0, 1}`, `2t + {0, 1}`, `2t + 8 + {0, 1}`, `2t + 8 + {0, 1}`.
    It is what P in the accumulator layout becomes after its conversion to
    16 bits, without leaving registers (FlashAttention-2's P·V).
    ```mlir
    tensor<128x128xbf16, #tgpu.dot_operand<parent = #tgpu.wgmma<warpgroups = 2>>>
    ```
  }];
  let parameters = (ins "::mlir::Attribute":$parent);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Tgpu_RowStatsLayoutAttr : Tgpu_Attr<"RowStatsLayout", "row_stats",
    [DeclareAttrInterfaceMethods<Tgpu_DistributedLayout>,
     DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let summary = "A per-row statistic of an accumulator layout";
  let description = [{
    A `M` tile (running max, running sum, rescale factors, LSE) beside a
    `M x N` accumulator in `parent`: each thread holds the rows its
    accumulator fragments hold (two per m16 tile), so the four lanes of a
    quad hold the same values (reduced with quad shuffles).
    ```mlir
    tensor<128xf32, #tgpu.row_stats<parent = #tgpu.wgmma<warpgroups = 2>>>
    ```
  }];
  let parameters = (ins "::mlir::Attribute":$parent);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Shared memory
//===----------------------------------------------------------------------===//

def Tgpu_SharedLayoutAttr : Tgpu_Attr<"SharedLayout", "shared",
    [DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let summary = "A tile staged in shared memory";
  let description = [{
    Where element `(r, c)` of a `R x C` tile of 16-bit elements lives in its
    buffer (`getOffset`, in elements):
    - `swizzle = 0`: rows of `C + pad` elements (padding against bank
      conflicts of ldmatrix);
    - `swizzle = 128`, `col_block = 0`: rows of `C` elements (a multiple of
      64), the 16-byte chunk `k` of row `r` at chunk `k ^ (r mod 8)`;
    - `swizzle = 128`, `col_block = 64`: the tile as `C / 64` blocks of
      `R x 64` elements one after another, each 128-byte swizzled as above:
      the K-major layout wgmma reads through matrix descriptors and TMA
      writes with `CU_TENSOR_MAP_SWIZZLE_128B`.
    ```mlir
    tensor<128x128xbf16, #tgpu.shared<swizzle = 128, col_block = 64>>
    tensor<64x128xbf16, #tgpu.shared<pad = 8>>
    ```
  }];
  let parameters = (ins DefaultValuedParameter<"int64_t", "0">:$swizzle,
                        DefaultValuedParameter<"int64_t", "0">:$pad,
                        DefaultValuedParameter<"int64_t", "0">:$col_block);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The element offset of (row, col) in the buffer of a `shape` tile.
    int64_t getOffset(::llvm::ArrayRef<int64_t> shape, int64_t row,
                      int64_t col) const;
    /// Elements of the buffer of one `shape` tile (padding included).
    int64_t getBufferElements(::llvm::ArrayRef<int64_t> shape) const;
  }];
}

//===----------------------------------------------------------------------===//
// Schedules
//===----------------------------------------------------------------------===//

def Tgpu_WgmmaScheduleAttr : Tgpu_Attr<"WgmmaSchedule", "wgmma_schedule"> {
  let summary = "The schedule of an sm_90a attention kernel";
  let description = [{
    Attached to a tile kernel (`tgpu.schedule`) by `attnc-assign-layouts`
    and read by `attnc-map-tile-to-wgmma`:
    - `kv_sync`: how the K/V rings are filled and synchronised
      (`barrier`, `mbarrier`, `producer`, `pingpong`, `tma`);
    - `kv_stages`: tiles per K and V ring (2 to 4);
    - `grid`: one block per work item (`tiles`) or `persistent` blocks
      (needs `kv_sync = tma`);
    - `stream_k`: persistent blocks cut the last round of items whose KV
      loops are alike into pieces along the keys (needs `grid = persistent`);
    - `epilogue`: O from `registers` or by a `tma` store (needs
      `kv_sync = tma`);
    - `rescale`: `exact` or `threshold` (FlashAttention-4's).
    ```mlir
    #tgpu.wgmma_schedule<kv_sync = tma, kv_stages = 2, grid = persistent,
                         stream_k = true, epilogue = tma, rescale = threshold>
    ```
  }];
  let parameters = (ins EnumParameter<Tgpu_KVSync>:$kv_sync,
                        "int64_t":$kv_stages,
                        EnumParameter<Tgpu_Grid>:$grid,
                        "bool":$stream_k,
                        EnumParameter<Tgpu_Epilogue>:$epilogue,
                        EnumParameter<Tgpu_Rescale>:$rescale);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// A producer warpgroup copies (the warp-specialised schedules).
    bool hasProducer() const {
      return getKvSync() == KVSync::producer ||
             getKvSync() == KVSync::pingpong || getKvSync() == KVSync::tma;
    }
    /// The consumer warpgroups take turns issuing wgmma.
    bool takesTurns() const {
      return getKvSync() == KVSync::pingpong || getKvSync() == KVSync::tma;
    }
  }];
}

def Tgpu_MmaScheduleAttr : Tgpu_Attr<"MmaSchedule", "mma_schedule"> {
  let summary = "The schedule of a tile kernel on the mma.sync mapping";
  let description = [{
    Attached to a tile kernel (`tgpu.schedule`) by `attnc-choose-mma-schedule`
    and read by `attnc-map-tile-to-mma`:
    - `rows_per_warp`: query rows per warp, 16 or 32 (one or two m16 tiles:
      with two, each K/V fragment feeds two mma chains);
    - `q_in_smem`: Q stays in shared memory and its A fragments are read with
      ldmatrix at each use (else they live in registers);
    - `kv_stages`: tiles per K and V ring of the prefill KV loop (2 to 4; the
      decode split kernel's `tile.prefetch_paged` gives its own);
    - `staging`: staged tiles `padded` or `swizzled` in shared memory;
    - `key_warps`: warps along the keys of each K/V tile (1, 2, 4 or 8; more
      than 1 only in the decode split kernel), whose online-softmax states
      merge after the KV loop.
    ```mlir
    #tgpu.mma_schedule<rows_per_warp = 32, q_in_smem = true, kv_stages = 2,
                       staging = padded, key_warps = 1>
    ```
  }];
  let parameters = (ins "int64_t":$rows_per_warp,
                        "bool":$q_in_smem,
                        "int64_t":$kv_stages,
                        EnumParameter<Tgpu_Staging>:$staging,
                        "int64_t":$key_warps);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // ATTNC_TILEGPU_ATTRS
