//===- BuildId.cpp - The compiler build id this runtime keys on -----------===//

#include "attnc/runtime/BuildId.h"

// Generated at build time by runtime/cmake/BuildId.cmake; defines
// ATTNC_BUILD_ID.
#include "attnc/BuildId.inc"

namespace attnc {

const std::string &defaultBuildId() {
  static const std::string id = ATTNC_BUILD_ID;
  return id;
}

} // namespace attnc
