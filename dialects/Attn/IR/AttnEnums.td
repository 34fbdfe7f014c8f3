//===- AttnEnums.td - enums of the attn dialect ------------*- tablegen -*-===//
#ifndef ATTNC_ATTN_ENUMS
#define ATTNC_ATTN_ENUMS

include "mlir/IR/EnumAttr.td"

// Shared by attn.reduce and tile.reduce_row.
def Attn_ReduceKind : I32EnumAttr<"ReduceKind", "a row reduction", [
    I32EnumAttrCase<"sum", 0>,
    I32EnumAttrCase<"max", 1>,
    I32EnumAttrCase<"mean_sq", 2>]> {
  let cppNamespace = "::attnc::attn";
}

#endif // ATTNC_ATTN_ENUMS
