//===- TuneCommand.cpp - attnc tune merge | choose ------------------------===//
//
// The tuning database's CPU side: merge databases from sharded sweeps, and
// show which configuration the runtime would pick for a problem and why.
// The sweep itself runs on a GPU and is not implemented yet.
//
//===----------------------------------------------------------------------===//
#include "tools/attnc/Commands.h"

#include "attnc/runtime/TuningDb.h"

#include <fmt/core.h>

namespace attnc::cli {

void addTuneCommand(CLI::App &app, TuneOptions &o) {
  CLI::App *tune = app.add_subcommand(
      "tune", "Tuning database: merge databases, show the chosen config");
  tune->require_subcommand(1);
  CLI::App *merge =
      tune->add_subcommand("merge", "Merge databases (per key, the faster)");
  merge->add_option("inputs", o.inputs, "Databases to merge")
      ->required()
      ->check(CLI::ExistingFile);
  merge->add_option("-o,--output", o.output, "Merged database")->required();
  CLI::App *choose = tune->add_subcommand(
      "choose", "Print the configuration the runtime picks, and why");
  choose->add_option("--db", o.db, "Tuning database")->check(CLI::ExistingFile);
  choose->add_option("--gpu", o.gpu, "Device name, e.g. \"NVIDIA H200\"");
  choose->add_option("--heads", o.spec.heads)->check(CLI::PositiveNumber);
  choose->add_option("--kv-heads", o.spec.kvHeads)->check(CLI::PositiveNumber);
  choose->add_option("--head-dim", o.spec.headDim)->check(CLI::PositiveNumber);
  choose->add_option("--dtype", o.spec.dtype)
      ->check(CLI::IsMember({"bf16", "fp16"}));
  choose->add_option("--arch", o.spec.arch)
      ->check(CLI::IsMember({"sm_80", "sm_90a"}));
  choose->add_flag("--causal", o.spec.causal);
  choose->add_option("--batch", o.size.batch)->check(CLI::PositiveNumber);
  choose->add_option("--seq-q", o.size.seqQ)->check(CLI::PositiveNumber);
  choose->add_option("--seq-kv", o.size.seqKV)->check(CLI::PositiveNumber);
}

int runTune(CLI::App &app, const TuneOptions &o) {
  CLI::App *tune = app.get_subcommand("tune");
  if (tune->got_subcommand("merge")) {
    TuningDb merged;
    for (const std::string &path : o.inputs) {
      auto db = TuningDb::load(path);
      if (!db.isOk()) {
        fmt::print(stderr, "attnc: error: {}\n", db.status().message());
        return 1;
      }
      merged.merge(*db);
    }
    if (Status s = merged.save(o.output); !s.isOk()) {
      fmt::print(stderr, "attnc: error: {}\n", s.message());
      return 1;
    }
    fmt::print("merged {} databases: {} records in {}\n", o.inputs.size(),
               merged.size(), o.output);
    return 0;
  }
  std::optional<TuningDb> db;
  if (!o.db.empty()) {
    auto loaded = TuningDb::load(o.db);
    if (!loaded.isOk()) {
      fmt::print(stderr, "attnc: error: {}\n", loaded.status().message());
      return 1;
    }
    db = std::move(loaded).value();
  }
  if (Status s = validateSpec(o.spec); !s.isOk()) {
    fmt::print(stderr, "attnc: error: {}\n", s.message());
    return 1;
  }
  TuningChoice c = chooseTuning(db ? &*db : nullptr, o.gpu, o.spec, o.size);
  fmt::print("block_m {} block_n {} warps {} ({}: {})\n", c.tuning.blockM,
             c.tuning.blockN, c.tuning.warps,
             c.fromDatabase ? "database" : "default", c.why);
  return 0;
}

} // namespace attnc::cli
