//===- AttnDialect.cpp - the attn dialect ---------------------------------===//
#include "dialects/Attn/IR/AttnDialect.h"
#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace attnc::attn;

#include "dialects/Attn/IR/AttnDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Attn/IR/AttnAttrs.cpp.inc"

void AttnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Attn/IR/AttnOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Attn/IR/AttnAttrs.cpp.inc"
      >();
}

LogicalResult WindowAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t left, int64_t right) {
  if (left < -1 || right < -1)
    return emitError() << "window bounds must be >= -1 (-1 means unbounded), "
                          "got <"
                       << left << ", " << right << ">";
  if (left < 0 && right < 0)
    return emitError() << "a window unbounded on both sides masks nothing; "
                          "drop the window attribute";
  return success();
}
