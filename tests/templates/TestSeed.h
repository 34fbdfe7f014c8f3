//===- TestSeed.h - Per-run random seed for the template tests ------------===//
//
// Fresh inputs each run: the seed comes from the clock unless ATTNC_TEST_SEED
// is set (to reproduce a failure); it is printed once per process.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TESTS_TEMPLATES_TESTSEED_H
#define ATTNC_TESTS_TEMPLATES_TESTSEED_H

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace attnc::templates::test {

inline uint64_t testSeed() {
  static const uint64_t seed = [] {
    uint64_t s;
    if (const char *env = std::getenv("ATTNC_TEST_SEED"); env && *env)
      s = std::stoull(env);
    else
      s = static_cast<uint64_t>(
          std::chrono::high_resolution_clock::now().time_since_epoch().count());
    std::printf("random seed: %llu (set ATTNC_TEST_SEED to reproduce)\n",
                static_cast<unsigned long long>(s));
    std::fflush(stdout);
    return s;
  }();
  return seed;
}

} // namespace attnc::templates::test

#endif // ATTNC_TESTS_TEMPLATES_TESTSEED_H
