//===- attnc.cpp - the attnc command line ---------------------------------===//
//
//   attnc emit     build or read attn IR and lower it to a chosen stage
//   attnc bundle   precompile a list of specs into a cache directory
//   attnc cache    list, clear or prune the kernel cache
//   attnc bench    time the fused kernel, optionally beside the unfused one
//   attnc tune     tuning database: merge, choose
//
//===----------------------------------------------------------------------===//
#include "tools/attnc/Commands.h"

#include <fmt/core.h>

int main(int argc, char **argv) {
  CLI::App app{"attnc: a compiler for fused attention and elementwise GPU "
               "kernels"};
  app.require_subcommand(1);
  attnc::cli::EmitOptions emit;
  attnc::cli::addEmitCommand(app, emit);
  attnc::cli::BundleOptions bundle;
  attnc::cli::addBundleCommand(app, bundle);
  attnc::cli::CacheOptions cache;
  attnc::cli::addCacheCommand(app, cache);
  attnc::cli::BenchOptions bench;
  attnc::cli::addBenchCommand(app, bench);
  attnc::cli::TuneOptions tune;
  attnc::cli::addTuneCommand(app, tune);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    fmt::print(stderr, "attnc: error: {}\n", e.what());
    return 1;
  }
  if (app.got_subcommand("emit"))
    return attnc::cli::runEmit(emit);
  if (app.got_subcommand("bundle"))
    return attnc::cli::runBundle(bundle);
  if (app.got_subcommand("cache"))
    return attnc::cli::runCache(cache);
  if (app.got_subcommand("bench"))
    return attnc::cli::runBench(bench, argv[0]);
  if (app.got_subcommand("tune"))
    return attnc::cli::runTune(app, tune);
  return 1;
}
