//===- FuzzTarget.h - the libFuzzer entry points of attnc's fuzz targets --===//
//
// Each target defines LLVMFuzzerTestOneInput (and optionally
// LLVMFuzzerInitialize). Built with clang and -fsanitize=fuzzer
// (ATTNC_LIBFUZZER=ON) libFuzzer drives it; otherwise FuzzDriver.cpp's main
// replays a corpus and runs seeded random mutations of it for a fixed count
// or time, so that every compiler (and CI's g++) runs the same targets.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TESTS_FUZZ_FUZZTARGET_H
#define ATTNC_TESTS_FUZZ_FUZZTARGET_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv);

// A target's invariant did not hold: print and abort (a finding, as a crash).
[[noreturn]] inline void fuzzFail(const char *what) {
  std::fprintf(stderr, "fuzz: invariant failed: %s\n", what);
  std::abort();
}

#endif
