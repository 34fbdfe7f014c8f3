//===- BuildId.h - The compiler build id in every cache key -----*- C++ -*-===//
#ifndef ATTNC_RUNTIME_BUILDID_H
#define ATTNC_RUNTIME_BUILDID_H

#include <string>

namespace attnc {

// The build id baked into this runtime by runtime/cmake/BuildId.cmake:
// "<version>-<hash of the compiler/ and dialects/ sources>", or the
// ATTNC_BUILD_ID CMake value. Kernels cached by another compiler build
// never match; two checkouts of the same sources agree.
const std::string &defaultBuildId();

} // namespace attnc

#endif // ATTNC_RUNTIME_BUILDID_H
