//===- PtxasTest.cpp - PTX from attnc's NVPTX path assembles with ptxas ---===//
//
// Until the attention lowering lands, the input is a small kernel written at
// the GPU level; it exercises the same path attention kernels take after
// their own lowering: gpu -> nvvm -> LLVM IR -> NVPTX -> ptxas.
//
//===----------------------------------------------------------------------===//
#include "compiler/Target/NVPTX/Ptxas.h"
#include "compiler/Registration.h"
#include "compiler/Target/NVPTX/EmitPTX.h"

#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include <catch2/catch.hpp>
#include <iostream>

using namespace mlir;

static const char *kScaleAdd = R"mlir(
gpu.module @kernels {
  gpu.func @scale_add(%x: memref<?xf32>, %y: memref<?xf32>, %a: f32,
                      %n: index) kernel {
    %tid = gpu.thread_id x
    %bid = gpu.block_id x
    %bdim = gpu.block_dim x
    %base = arith.muli %bid, %bdim : index
    %i = arith.addi %base, %tid : index
    %in = arith.cmpi ult, %i, %n : index
    scf.if %in {
      %xi = memref.load %x[%i] : memref<?xf32>
      %yi = memref.load %y[%i] : memref<?xf32>
      %ax = arith.mulf %a, %xi : f32
      %r = arith.addf %ax, %yi : f32
      memref.store %r, %y[%i] : memref<?xf32>
    }
    gpu.return
  }
}
)mlir";

static std::string lowerAndEmit(MLIRContext &ctx, const std::string &chip) {
  OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(kScaleAdd, &ctx);
  REQUIRE(m);
  PassManager pm(&ctx);
  pm.addPass(createSCFToControlFlowPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps());
  pm.addPass(createReconcileUnrealizedCastsPass());
  REQUIRE(succeeded(pm.run(*m)));
  FailureOr<std::string> ptx = attnc::emitPTX(*m, chip);
  REQUIRE(succeeded(ptx));
  return *ptx;
}

TEST_CASE("PTX emitted in process assembles for sm_80 and sm_90a", "[ptxas]") {
  DialectRegistry registry;
  attnc::registerAllDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();

  for (std::string chip : {"sm_80", "sm_90a"}) {
    std::string ptx = lowerAndEmit(ctx, chip);
    CHECK(ptx.find(".target " + chip) != std::string::npos);
    CHECK(ptx.find(".entry scale_add") != std::string::npos);

    attnc::PtxasResult r = attnc::runPtxas(ptx, chip, ATTNC_PTXAS_PATH);
    INFO(r.log);
    REQUIRE(r.ok);
    REQUIRE(r.kernels.size() == 1);
    const attnc::KernelResources &k = r.kernels[0];
    std::cout << chip << " " << k.name << ": " << k.registers << " registers, "
              << k.sharedBytes << " bytes smem, " << k.spillStoreBytes << "/"
              << k.spillLoadBytes << " bytes spilled (stores/loads)\n";
    CHECK(k.name == "scale_add");
    CHECK(k.registers > 0);
    CHECK_FALSE(k.spills());
  }
}

TEST_CASE("ptxas rejects broken PTX and the log says why", "[ptxas]") {
  attnc::PtxasResult r = attnc::runPtxas(
      ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry "
      "k() { bogus.instruction; }\n",
      "sm_90a", ATTNC_PTXAS_PATH);
  CHECK_FALSE(r.ok);
  CHECK(r.log.find("bogus") != std::string::npos);
}

TEST_CASE("a missing ptxas is reported, not crashed on", "[ptxas]") {
  attnc::PtxasResult r =
      attnc::runPtxas(".version 8.0\n", "sm_90a", "/nonexistent/ptxas");
  CHECK_FALSE(r.ok);
  CHECK(r.log == "ptxas not found at /nonexistent/ptxas");
}

TEST_CASE("the ptxas report parser reads each kernel's resources", "[ptxas]") {
  // The shape of CUDA 13.0's `ptxas -v` output, written out by hand.
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'a' for 'sm_90a'\n"
      "ptxas info    : Function properties for a\n"
      "    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 1 barriers, 1024 bytes smem\n"
      "ptxas info    : Compiling entry function 'b' for 'sm_90a'\n"
      "ptxas info    : Function properties for b\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 12 registers\n";
  auto ks = attnc::parsePtxasReport(log);
  REQUIRE(ks.size() == 2);
  CHECK(ks[0].name == "a");
  CHECK(ks[0].registers == 168);
  CHECK(ks[0].sharedBytes == 1024);
  CHECK(ks[0].stackFrameBytes == 16);
  CHECK(ks[0].spillStoreBytes == 8);
  CHECK(ks[0].spillLoadBytes == 4);
  CHECK(ks[0].spills());
  CHECK(ks[1].name == "b");
  CHECK(ks[1].registers == 12);
  CHECK_FALSE(ks[1].spills());
}
