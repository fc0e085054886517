// tile-pipeline-buffers: loads that move with the tile are double-buffered
// when a core runs several tiles; a loop-invariant load (gamma) is not.
// tile-expand-structured then alternates the stored result too (EXPAND): the
// next tile's map writes the other copy while this tile's store reads one.
// RUN: ge-opt %s --split-input-file -p tile-pipeline-buffers | filecheck %s
// RUN: ge-opt %s --split-input-file -p tile-pipeline-buffers,tile-expand-structured | filecheck %s --check-prefix=EXPAND

// CHECK-LABEL: tile.program "two_per_core"
// CHECK: %x = tile.load "x" {buffers = 2 : i64} : tensor<64x64xf32>
// CHECK: %g = tile.load "g" : tensor<1x64xf32>
// EXPAND-LABEL: tile.program "two_per_core"
// EXPAND:       %[[G:[0-9]+]] = tile.alloc {shape = array<i64: 64>, layout = "ND", buffers = 1 : i64}
// EXPAND-NEXT:  %[[X:[0-9]+]] = tile.alloc {shape = array<i64: 64>, layout = "ND", buffers = 2 : i64}
// EXPAND-NEXT:  %[[Y:[0-9]+]] = tile.alloc {shape = array<i64: 64>, layout = "ND", buffers = 2 : i64}
// EXPAND:       scf.for
// EXPAND:         tile.vec "mul" %[[Y]], %[[X]], %[[G]]
// EXPAND:         tile.copy %{{[0-9]+}}, %[[Y]] {{.*}} : !tile.ref<gm, f32>, !tile.ref<ub, f32>
// EXPAND:       } {tile.pipeline = "ping-pong"}
tile.program "two_per_core" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<64x64xf32>, layout = "ND"}
  tile.tensor {name = "g", kind = "constant", offset = 16384 : i64, type = tensor<1x64xf32>, layout = "ND", value = dense<1.0> : tensor<1x64xf32>}
  tile.tensor {name = "y", kind = "output", offset = 20480 : i64, type = tensor<64x64xf32>, layout = "ND"}
  tile.kernel "k" attributes {block_dim = 32 : i64, tiling = #tile.tiling<tile = [1, 64], grid = [64, 1], ub_bytes = 512, cycles = 1>, distribution = #tile.distribution<cores = 32, per_core = 2>} {
    %x = tile.load "x" : tensor<64x64xf32>
    %g = tile.load "g" : tensor<1x64xf32>
    %y = tile.map ins(%x, %g : tensor<64x64xf32>, tensor<1x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%a : f32, %b : f32):
      %m = arith.mulf %a, %b : f32
      tile.yield %m : f32
    }
    tile.store %y, "y" : tensor<64x64xf32>
  }
}

// -----

// One tile per core: nothing to overlap.
// CHECK-LABEL: tile.program "one_per_core"
// CHECK: %x = tile.load "x" : tensor<4x64xf32>
// EXPAND-LABEL: tile.program "one_per_core"
// EXPAND-NOT:   buffers = 2
tile.program "one_per_core" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<4x64xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 1024 : i64, type = tensor<4x64xf32>, layout = "ND"}
  tile.kernel "k" attributes {block_dim = 4 : i64, tiling = #tile.tiling<tile = [1, 64], grid = [4, 1], ub_bytes = 512, cycles = 1>, distribution = #tile.distribution<cores = 4, per_core = 1>} {
    %x = tile.load "x" : tensor<4x64xf32>
    tile.store %x, "y" : tensor<4x64xf32>
  }
}
