//===- AttnDialect.td - the graph-level attention dialect --*- tablegen -*-===//
#ifndef ATTNC_ATTN_DIALECT
#define ATTNC_ATTN_DIALECT

include "mlir/IR/OpBase.td"

def Attn_Dialect : Dialect {
  let name = "attn";
  let summary = "Graph-level attention and elementwise operations on tensors";
  let description = [{
    The `attn` dialect is attnc's input language. Its ops work on ranked
    tensors and say *what* is computed (an attention, a fused elementwise
    chain), never how it is tiled. Tensors for attention use the logical
    layout [batch, heads, seq, head_dim]; the memory layout (BSHD or BHSD)
    is a launch-time stride choice, not part of the op.
  }];
  let cppNamespace = "::attnc::attn";
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
  let useDefaultAttributePrinterParser = 1;
}

class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

#endif // ATTNC_ATTN_DIALECT
