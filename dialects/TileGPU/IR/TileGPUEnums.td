//===- TileGPUEnums.td - schedule choices of the tgpu dialect -*- tablegen -*-===//
#ifndef ATTNC_TILEGPU_ENUMS
#define ATTNC_TILEGPU_ENUMS

include "mlir/IR/EnumAttr.td"

def Tgpu_KVSync : I32EnumAttr<"KVSync",
    "how the K/V shared-memory rings are filled and synchronised", [
  // Every thread copies (cp.async); one CTA barrier per tile.
  I32EnumAttrCase<"barrier", 0>,
  // Every thread copies; per-stage full/empty mbarriers.
  I32EnumAttrCase<"mbarrier", 1>,
  // Warp specialisation: a producer warpgroup copies, setmaxnreg moves its
  // registers to the consumer warpgroups.
  I32EnumAttrCase<"producer", 2>,
  // producer, and the consumer warpgroups take turns issuing wgmma.
  I32EnumAttrCase<"pingpong", 3>,
  // pingpong whose producer is one thread issuing TMA copies.
  I32EnumAttrCase<"tma", 4>]> {
  let cppNamespace = "::attnc::tgpu";
  let genSpecializedAttr = 0;
}

def Tgpu_Grid : I32EnumAttr<"Grid", "how work items map to blocks", [
  // One block per (query tile, head, batch).
  I32EnumAttrCase<"tiles", 0>,
  // min(items, SMs) blocks, each looping over items.
  I32EnumAttrCase<"persistent", 1>]> {
  let cppNamespace = "::attnc::tgpu";
  let genSpecializedAttr = 0;
}

def Tgpu_Epilogue : I32EnumAttr<"Epilogue", "how O is written", [
  // Each thread stores its accumulator fragments.
  I32EnumAttrCase<"registers", 0>,
  // stmatrix into swizzled shared memory, one TMA store per warpgroup.
  I32EnumAttrCase<"tma", 1>]> {
  let cppNamespace = "::attnc::tgpu";
  let genSpecializedAttr = 0;
}

def Tgpu_Rescale : I32EnumAttr<"Rescale",
    "when O is rescaled as a row's running max grows", [
  // At every growth.
  I32EnumAttrCase<"exact", 0>,
  // Only past a growth of 2^8 (FlashAttention-4's; the result is the same).
  I32EnumAttrCase<"threshold", 1>]> {
  let cppNamespace = "::attnc::tgpu";
  let genSpecializedAttr = 0;
}

def Tgpu_Staging : I32EnumAttr<"Staging",
    "how a staged tile's rows are laid out in shared memory", [
  // Rows padded by 8 elements (16 bytes): the 8 rows an mma.sync fragment
  // reads fall in distinct banks.
  I32EnumAttrCase<"padded", 0>,
  // Unpadded rows whose 16-byte chunks are XOR-swizzled by the row (rows of
  // a multiple of 64 elements): no bytes wasted, read with XOR'd addresses.
  I32EnumAttrCase<"swizzled", 1>]> {
  let cppNamespace = "::attnc::tgpu";
  let genSpecializedAttr = 0;
}

#endif // ATTNC_TILEGPU_ENUMS
