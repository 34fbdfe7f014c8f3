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

#include <CLI/CLI.hpp>

#include <algorithm>

int main(int argc, char **argv) {
  attnc::TuneRunOptions o;
  CLI::App app("Check and time an autotuning plan's candidates on this GPU; "
               "write the fastest correct configuration per problem to a "
               "tuning database",
               "attnc-tune-run");
  app.add_option("--plan", o.planPath, "plan.json from `attnc tune plan`")
      ->required();
  app.add_option("--bundle", o.bundleDir, "Default: bundle/ beside the plan");
  app.add_option("--db", o.dbPath, "Tuning database to write (merged into)");
  app.add_option("--table", o.tablePath, "Results table (Markdown)");
  app.add_option("--shard", o.shard, "i/n: this process's share of the runs");
  app.add_option("--device", o.device, "CUDA device")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--gpu-name", o.gpuName, "Record under this device name");
  app.add_option("--seed", o.seed, "Input seed (default: from the clock)");
  app.add_option("--min-reps", o.minReps, "Fewest timed runs per candidate")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-reps", o.maxReps, "Most timed runs per candidate")
      ->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int code = app.exit(e); // prints the help, or the error
    return code == 0 ? 0 : 2;
  }
  o.maxReps = std::max(o.maxReps, o.minReps);
  return attnc::runTuneSweep(o);
}
