//===- AttnAttrs.td - attributes of the attn dialect -------*- tablegen -*-===//
#ifndef ATTNC_ATTN_ATTRS
#define ATTNC_ATTN_ATTRS

include "dialects/Attn/IR/AttnDialect.td"
include "mlir/IR/AttrTypeBase.td"

def Attn_WindowAttr : AttrDef<Attn_Dialect, "Window"> {
  let mnemonic = "window";
  let summary = "A sliding attention window (left, right) around the diagonal";
  let description = [{
    Query row `i` attends to key column `j` only when
    `i - left <= j <= i + right` (after bottom-right alignment when the query
    and key lengths differ). `-1` means unbounded on that side.

    ```mlir
    window = #attn.window<4096, 0>   // Mistral-style: 4096 back, none ahead
    ```
  }];
  let parameters = (ins "int64_t":$left, "int64_t":$right);
  let assemblyFormat = "`<` $left `,` $right `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool isLeftUnbounded() const { return getLeft() < 0; }
    bool isRightUnbounded() const { return getRight() < 0; }
  }];
}

#endif // ATTNC_ATTN_ATTRS
