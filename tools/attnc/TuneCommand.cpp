//===- TuneCommand.cpp - attnc tune plan | run | merge | choose -----------===//
//
// The sweep in two halves: `plan` compiles the candidates into a bundle and
// writes the plan (TunePlanCommand.cpp; needs the compiler), `run` checks
// and times them on a GPU and writes the database (TuneRunner.h; the same
// code as the runtime-only attnc-tune-run). `merge` joins the databases of
// sharded runs; `choose` shows what the runtime would pick and why.
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
  CLI::App *plan = tune->add_subcommand(
      "plan", "Compile a sweep's candidates into DIR/bundle and write "
              "DIR/plan.json (dropping those that spill or exceed shared "
              "memory)");
  auto &p = o.plan;
  plan->add_option("--preset", p.preset,
                   "peers-d128 (PEERS.md D=128 prefill + decode cells) or "
                   "peers (every PEERS.md prefill cell + decode)")
      ->check(CLI::IsMember({"peers-d128", "peers"}));
  plan->add_option("--op", p.spec.op, "Without a preset: the op to sweep")
      ->check(CLI::IsMember({"attention_fwd", "decode"}));
  plan->add_option("--problems", p.problems,
                   "Without a preset: B:SQ:SKV,... (decode: SQ = 1)");
  plan->add_option("--heads", p.spec.heads)->check(CLI::PositiveNumber);
  plan->add_option("--kv-heads", p.spec.kvHeads)->check(CLI::PositiveNumber);
  plan->add_option("--head-dim", p.spec.headDim)->check(CLI::PositiveNumber);
  plan->add_option("--dtype", p.spec.dtype)
      ->check(CLI::IsMember({"bf16", "fp16"}));
  plan->add_flag("--causal", p.spec.causal);
  plan->add_flag("--varlen", p.spec.varlen,
                 "varlen prefill (packed sequences)");
  plan->add_option("--page-size", p.spec.pageSize,
                   "decode, and varlen over a paged cache: tokens per page")
      ->check(CLI::PositiveNumber);
  plan->add_option("--arch", p.arch)->check(CLI::IsMember({"sm_80", "sm_90a"}));
  plan->add_option(
      "--knob", p.knobs,
      "NAME=V1,V2,...: sweep these values of a knob (mapping, "
      "block_m, block_n, warps, stages; decode: block_n, splits, stages)");
  plan->add_option("-o,--output", p.output,
                   "Directory for plan.json + bundle/");
  plan->add_option("-j,--jobs", p.jobs, "Compile threads (default: cores)")
      ->check(CLI::NonNegativeNumber);
  plan->add_flag("--dry-run", p.dryRun,
                 "Enumerate and drop what no mapping takes; compile nothing");
  plan->add_flag("-v,--verbose", p.verbose, "List every dropped combination");
  plan->add_flag("!--no-cubin", p.cubin, "Bundle PTX only");
  plan->add_option("--ptxas", p.ptxasPath, "ptxas for the resource report");
  // Both halves in one command, where the compiler and a GPU are both here.
  plan->add_flag("--run", p.run,
                 "Then run the sweep on this machine's GPU (as `tune run`)");
  plan->add_option("--db", o.run.dbPath, "--run: tuning database to write");
  plan->add_option("--table", o.run.tablePath, "--run: results table");
  plan->add_option("--shard", o.run.shard, "--run: i/n");

  CLI::App *run = tune->add_subcommand(
      "run", "On a GPU: check and time a plan's candidates, write the "
             "tuning database (as attnc-tune-run does)");
  auto &r = o.run;
  run->add_option("--plan", r.planPath, "plan.json")
      ->required()
      ->check(CLI::ExistingFile);
  run->add_option("--bundle", r.bundleDir, "Default: bundle/ beside the plan");
  run->add_option("--db", r.dbPath, "Tuning database to write (merged into)");
  run->add_option("--table", r.tablePath, "Results table (Markdown)");
  run->add_option("--shard", r.shard, "i/n: this process's share of the runs");
  run->add_option("--device", r.device)->check(CLI::NonNegativeNumber);
  run->add_option("--gpu-name", r.gpuName, "Record under this device name");
  run->add_option("--seed", r.seed, "Input seed (default: from the clock)");
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
  if (tune->got_subcommand("plan")) {
    if (o.plan.run && o.plan.dryRun) {
      fmt::print(stderr, "attnc: error: --run needs a compiled plan, not "
                         "--dry-run\n");
      return 1;
    }
    if (o.plan.output.empty() && !o.plan.dryRun) {
      fmt::print(stderr, "attnc: error: tune plan needs -o DIR (or "
                         "--dry-run)\n");
      return 1;
    }
    int rc = runTunePlan(o.plan);
    if (rc != 0 || !o.plan.run)
      return rc;
    TuneRunOptions run = o.run;
    run.planPath = o.plan.output + "/plan.json";
    return runTuneSweep(run);
  }
  if (tune->got_subcommand("run"))
    return runTuneSweep(o.run);
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
  fmt::print("block_m {} block_n {} warps {} stages {}{}{}{}{}{}{} ({}: {})\n",
             c.tuning.blockM, c.tuning.blockN, c.tuning.warps, c.tuning.stages,
             c.tuning.mapping.empty() ? "" : " mapping " + c.tuning.mapping,
             c.tuning.kvSync.empty() ? "" : " kv_sync " + c.tuning.kvSync,
             c.tuning.rescale.empty() ? "" : " rescale " + c.tuning.rescale,
             c.tuning.grid.empty() ? "" : " grid " + c.tuning.grid,
             c.tuning.epilogue.empty() ? "" : " epilogue " + c.tuning.epilogue,
             c.decodeSplits > 0 ? " splits " + std::to_string(c.decodeSplits)
                                : "",
             c.fromDatabase ? "database" : "default", c.why);
  return 0;
}

} // namespace attnc::cli
