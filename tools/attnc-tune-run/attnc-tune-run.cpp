//===- attnc-tune-run.cpp - run an autotuning sweep on the GPU ------------===//
//
// The running half of `attnc tune` for machines with the runtime only:
//   attnc-tune-run --plan DIR/plan.json [--bundle DIR/bundle] --db tuning.json
//                  [--table results.md] [--shard i/n] [--seed N]
// Exit codes: 0, 1 (error, or a problem with no correct candidate), 2 (bad
// arguments), 77 (no CUDA device).
//
//===----------------------------------------------------------------------===//
#include "tools/attnc-tune-run/TuneRunner.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char **argv) {
  attnc::TuneRunOptions o;
  auto usage = [] {
    std::fprintf(
        stderr, "usage: attnc-tune-run --plan PLAN.json [--bundle DIR] "
                "[--db OUT.json] [--table OUT.md] [--shard i/n] [--device N] "
                "[--gpu-name NAME] [--seed N] [--min-reps N] [--max-reps N]\n");
    return 2;
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char * {
      return i + 1 < argc ? argv[++i] : nullptr;
    };
    const char *v = nullptr;
    if (a == "--help" || a == "-h")
      return usage(), 0;
    if (!(v = value()))
      return usage();
    if (a == "--plan")
      o.planPath = v;
    else if (a == "--bundle")
      o.bundleDir = v;
    else if (a == "--db")
      o.dbPath = v;
    else if (a == "--table")
      o.tablePath = v;
    else if (a == "--shard")
      o.shard = v;
    else if (a == "--device")
      o.device = std::atoi(v);
    else if (a == "--gpu-name")
      o.gpuName = v;
    else if (a == "--seed")
      o.seed = std::strtoull(v, nullptr, 10);
    else if (a == "--min-reps")
      o.minReps = std::max(1, std::atoi(v));
    else if (a == "--max-reps")
      o.maxReps = std::max(1, std::atoi(v));
    else {
      std::fprintf(stderr, "attnc-tune-run: unknown argument %s\n", a.c_str());
      return usage();
    }
  }
  if (o.planPath.empty())
    return usage();
  o.maxReps = std::max(o.maxReps, o.minReps);
  return attnc::runTuneSweep(o);
}
