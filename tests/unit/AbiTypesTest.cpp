//===- AbiTypesTest.cpp - the compiler's signatures from the abi tables ---===//
//
// The compiler declares each fixed-list kernel's arguments from attnc/abi's
// tables (compiler/LaunchABI.h): one argument per entry, in order, of the
// entry's type, so a kernel's signature and the runtime's packing agree by
// construction.
//
//===----------------------------------------------------------------------===//
#include "compiler/LaunchABI.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"

#include <catch2/catch.hpp>

using namespace attnc;
using namespace mlir;

namespace {

template <size_t N>
void checkTypes(MLIRContext &ctx, const std::array<abi::ParamDesc, N> &table,
                ArrayRef<Type> types, Type elt) {
  REQUIRE(types.size() == N);
  for (size_t i = 0; i < N; ++i) {
    INFO(table[i].name);
    Type t = types[i];
    switch (table[i].type) {
    case abi::ParamType::ElementPtr:
    case abi::ParamType::F32Ptr:
    case abi::ParamType::I32Ptr:
    case abi::ParamType::I64Ptr: {
      auto memref = dyn_cast<MemRefType>(t);
      REQUIRE(memref);
      CHECK(memref.getRank() == 0);
      Type want = table[i].type == abi::ParamType::ElementPtr ? elt
                  : table[i].type == abi::ParamType::F32Ptr
                      ? Type(Float32Type::get(&ctx))
                  : table[i].type == abi::ParamType::I32Ptr
                      ? Type(IntegerType::get(&ctx, 32))
                      : Type(IntegerType::get(&ctx, 64));
      CHECK(memref.getElementType() == want);
      break;
    }
    case abi::ParamType::I64:
      CHECK(t == IntegerType::get(&ctx, 64));
      break;
    default:
      FAIL("a fixed-list table holds only pointers and i64 values");
    }
  }
}

} // namespace

TEST_CASE("kernel signatures follow the abi parameter tables", "[abi]") {
  MLIRContext ctx;
  for (Type elt :
       {Type(BFloat16Type::get(&ctx)), Type(Float16Type::get(&ctx))}) {
    checkTypes(ctx, abi::kAttentionFwdParams, attentionFwdParamTypes(&ctx, elt),
               elt);
    checkTypes(ctx, abi::kDecodeSplitParams, decodeSplitParamTypes(&ctx, elt),
               elt);
    checkTypes(ctx, abi::kDecodeCombineParams,
               decodeCombineParamTypes(&ctx, elt), elt);
    checkTypes(ctx, abi::kKVAppendParams, kvAppendParamTypes(&ctx, elt), elt);
    checkTypes(ctx, abi::kLseMergeParams, lseMergeParamTypes(&ctx, elt), elt);
    checkTypes(ctx, abi::kAttentionBwdParams, attentionBwdParamTypes(&ctx, elt),
               elt);
  }
}
