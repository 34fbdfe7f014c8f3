// RUN: attnc-opt %s -attnc-tile-decode="block-n=32 dependent-launch=true" | FileCheck %s --check-prefix=TILE
// RUN: attnc-opt %s -attnc-tile-decode="block-n=32 dependent-launch=true" -attnc-map-combine-to-gpu -attnc-map-tile-to-mma | FileCheck %s --check-prefix=GPU
// RUN: attnc-opt %s -attnc-tile-decode="block-n=32" -attnc-map-combine-to-gpu -attnc-map-tile-to-mma | FileCheck %s --check-prefix=OFF

// Programmatic dependent launch (sm_90): the split kernel lets the combine
// be scheduled once all its programs have started, and the combine waits
// for the split kernel's partials before it reads one.
// TILE: func.func @decode_split({{.*}}) attributes {tile.launch = #tile.launch<"decode_split_v3", 16, 32, 1>, tile.launch_dependents}
// TILE: func.func @decode_combine({{.*}}) attributes {tile.launch = #tile.launch<"decode_combine_v3", 16, 0, 4>, tile.wait_prerequisites}
// The combine's wait comes before any load.
// GPU-LABEL: gpu.func @decode_combine(
// GPU-NEXT: nvvm.griddepcontrol wait
// GPU-NOT: gpu.func
// GPU: memref.load
// GPU: gpu.return
// GPU-LABEL: gpu.func @decode_split(
// GPU: nvvm.griddepcontrol launch_dependents
// GPU: nvvm.mma.sync
// Without the option (sm_80) neither.
// OFF-NOT: griddepcontrol
func.func @decode(%q: tensor<?x4x?x64xbf16>, %kc: tensor<?x1x16x64xbf16>, %vc: tensor<?x1x16x64xbf16>,
                  %table: tensor<?x?xi32>, %lens: tensor<?xi32>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = attn.decode %q, %kc, %vc, %table, %lens
      : tensor<?x4x?x64xbf16>, tensor<?x1x16x64xbf16>, tensor<?x1x16x64xbf16>, tensor<?x?xi32>, tensor<?xi32>
      -> tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}
