//===- Commands.h - the attnc CLI's subcommands -----------------*- C++ -*-===//
#ifndef ATTNC_TOOLS_ATTNC_COMMANDS_H
#define ATTNC_TOOLS_ATTNC_COMMANDS_H

#include "compiler/Frontend/AttentionConfig.h"

#include "mlir/IR/BuiltinOps.h"

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace attnc::cli {

struct EmitOptions {
  std::string op = "attention";
  std::string input; // .mlir file; empty: build from flags
  AttentionConfig attention;
  std::string window; // "L,R"
  std::string arch = "sm_90a";
  std::string stage = "ptx"; // attn | tile | llvm | ptx
  std::string output;        // empty: stdout
  bool printIrAfterAll = false;
  bool summary = false;
  int64_t seqLen = 8192;
  int64_t batch = 1;
};

void addEmitCommand(CLI::App &app, EmitOptions &opts);
/// Returns the process exit code.
int runEmit(EmitOptions &opts);

struct SummaryInput {
  const EmitOptions &opts;
  mlir::ModuleOp module;
  std::string ptxPath; // empty: no PTX was produced
  std::string ptxMissingReason;
};
void printSummary(const SummaryInput &in);

} // namespace attnc::cli

#endif
