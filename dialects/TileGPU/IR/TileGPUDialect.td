//===- TileGPUDialect.td - the GPU-level tile dialect ------*- tablegen -*-===//
#ifndef ATTNC_TILEGPU_DIALECT
#define ATTNC_TILEGPU_DIALECT

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Tgpu_Dialect : Dialect {
  let name = "tgpu";
  let summary = "Tiles of one GPU program with their thread distribution";
  let description = [{
    The level between the target-independent `tile` dialect and NVVM. A
    tile's tensor type carries, as its encoding, how the tile is spread over
    the threads of a block (`#tgpu.mma`, `#tgpu.wgmma`, `#tgpu.dot_operand`,
    `#tgpu.row_stats`) or laid out in shared memory (`#tgpu.shared`), and a
    kernel carries its schedule (`#tgpu.wgmma_schedule`) as a typed
    attribute. `attnc-assign-layouts` records these choices; the GPU
    mappings read them instead of pass options, so every choice that shapes
    the generated code is visible in the IR between the two.

    ```mlir
    %s = tile.dot %q, %k {transpose_b}
        : tensor<128x128xbf16, #tgpu.shared<swizzle = 128, col_block = 64>>,
          tensor<128x128xbf16, #tgpu.shared<swizzle = 128, col_block = 64>>
        -> tensor<128x128xf32, #tgpu.wgmma<warpgroups = 2>>
    ```
  }];
  let cppNamespace = "::attnc::tgpu";
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes(); // TileGPUAttrs.cpp
    void registerOps();        // TileGPUOps.cpp
  }];
}

class Tgpu_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Tgpu_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

#endif // ATTNC_TILEGPU_DIALECT
