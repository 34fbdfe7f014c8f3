//===- TileDialect.td - the kernel-level tile dialect ------*- tablegen -*-===//
#ifndef ATTNC_TILE_DIALECT
#define ATTNC_TILE_DIALECT

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Tile_Dialect : Dialect {
  let name = "tile";
  let summary = "Kernel-level, target-independent tiles of one GPU program";
  let description = [{
    One kernel is a function run by a grid of programs (`tile.program_id`).
    Each program works on tiles: small statically shaped tensors loaded from
    and stored to memory (`tile.load`, `tile.store`), multiplied
    (`tile.dot`), and transformed by the online-softmax steps
    (`tile.score`, `tile.softmax_update`, `tile.rescale`, `tile.finalize`),
    with the softmax state carried through an `scf.for` over KV tiles.
    Nothing here says how a tile is spread over threads: that is the
    target mapping's job (row per thread, mma.sync fragments, wgmma). A
    GPU pipeline records the choice as the encoding of each tile's tensor
    type (the `tgpu` dialect's layouts); the tile ops accept any encoding.

    A kernel function marked `tile.dim0_major` (a unit attribute; causal
    attention) wants its programs started with program id 0 varying
    slowest. The set of programs is the same; a mapping that launches one
    block per program permutes block ids to honour it (a persistent
    mapping schedules its items itself, and the host path ignores it).
  }];
  let cppNamespace = "::attnc::tile";
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
  let useDefaultAttributePrinterParser = 1;
}

class Tile_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tile_Dialect, mnemonic, traits>;

def Tile_LaunchAttr : AttrDef<Tile_Dialect, "Launch"> {
  let mnemonic = "launch";
  let summary = "How a kernel function is launched: grid rule and tile sizes";
  let description = [{
    Attached to a kernel function. `rule` names how the runtime derives the
    grid from the problem (`attention_fwd_v1`: grid = (ceil(seq_q / block_m),
    heads, batch)); `block_m` / `block_n` are the query and key tile sizes,
    `heads` the number of query heads (of KV heads for `attention_bwd_v1`,
    whose grid runs over them).
    ```mlir
    func.func @k(...) attributes {tile.launch = #tile.launch<"attention_fwd_v1", 64, 64, 32>}
    ```
  }];
  let parameters = (ins StringRefParameter<>:$rule, "int64_t":$blockM,
                        "int64_t":$blockN, "int64_t":$heads);
  let assemblyFormat = "`<` $rule `,` $blockM `,` $blockN `,` $heads `>`";
}

#endif // ATTNC_TILE_DIALECT
