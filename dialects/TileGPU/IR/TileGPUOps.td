//===- TileGPUOps.td - operations of the tgpu dialect ------*- tablegen -*-===//
#ifndef ATTNC_TILEGPU_OPS
#define ATTNC_TILEGPU_OPS

include "dialects/TileGPU/IR/TileGPUAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Tgpu_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tgpu_Dialect, mnemonic, traits>;

def Tgpu_ConvertLayoutOp : Tgpu_Op<"convert_layout", [Pure,
    SameOperandsAndResultShape, SameOperandsAndResultElementType]> {
  let summary = "The same tile in another thread layout";
  let description = [{
    Moves a tile's elements between threads (or only renames registers) so
    that it is held in the result's layout. From an accumulator layout to
    its `#tgpu.dot_operand` no element moves: the 16-bit C fragments of two
    adjacent n8 tiles are, register for register, the A fragment of one
    k16 step, which is how P feeds P·V without leaving registers.
    ```mlir
    %pa = tgpu.convert_layout %p
        : tensor<128x64xbf16, #tgpu.wgmma<warpgroups = 2>>
          -> tensor<128x64xbf16, #tgpu.dot_operand<parent = #tgpu.wgmma<warpgroups = 2>>>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$source);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
}

#endif // ATTNC_TILEGPU_OPS
