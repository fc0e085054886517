// tile-expand-structured: a tiled structured kernel becomes a loop over the
// core's tiles of DMA copies, vector ops and reductions on UB buffers.
// RUN: ge-opt %s --split-input-file -p tile-expand-structured | filecheck %s

// Softmax-like rows: 64 tiles of one row on 32 cores, 2 per core; the load
// is double-buffered and the loop pipelined. The reduction's source is still
// needed afterwards, so it reduces a copy; the row max is broadcast back
// over the row with brcb (a replicated block per row).
// CHECK-LABEL: tile.kernel "rows" attributes {{.*}}block_dim = 32 : i64
// CHECK:      %[[X:.*]] = tile.alloc {shape = array<i64: 64>, layout = "ND", buffers = 2 : i64} : !tile.ref<ub, f32>
// CHECK:      tile.block_idx
// CHECK:      scf.for
// CHECK:      tile.copy %[[X]], %{{.*}} {shape = array<i64: 1, 64>, dst_strides = array<i64: 64, 1>, src_strides = array<i64: 0, 1>}
// CHECK:      tile.vec "adds" %[[COPY:.*]], %[[X]] {{.*}}scalar = 0.000000e+00
// CHECK:      tile.reduce "max" %[[M:.*]], %[[COPY]] {rows = 1 : i64, cols = 64 : i64, row_stride = 64 : i64}
// CHECK:      tile.vec "brcb" %[[R:.*]], %[[M]]
// CHECK:      tile.vec "sub" %[[Y:.*]], %[[X]], %[[R]] {shape = array<i64: 1, 64>, strides = array<i64: 64, 1, 64, 1, 8, 0>}
// CHECK:      tile.copy %{{.*}}, %[[Y]]
// CHECK:      } {tile.pipeline = "ping-pong"}
tile.program "p" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<64x64xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 16448 : i64, type = tensor<64x64xf32>, layout = "ND"}
  tile.kernel "rows" attributes {block_dim = 1 : i64, tiling = #tile.tiling<tile = [1, 64], grid = [64, 1], ub_bytes = 1, cycles = 1>, distribution = #tile.distribution<cores = 32, per_core = 2>} {
    %x = tile.load "x" {buffers = 2 : i64} : tensor<64x64xf32>
    %m = tile.reduction "max" %x : tensor<64x64xf32> -> tensor<64x1xf32>
    %y = tile.map ins(%x, %m : tensor<64x64xf32>, tensor<64x1xf32>) -> tensor<64x64xf32> {
    ^bb0(%a : f32, %b : f32):
      %d = arith.subf %a, %b : f32
      tile.yield %d : f32
    }
    tile.store %y, "y" : tensor<64x64xf32>
  }
}

// -----

// A constant operand becomes the instruction's immediate; c - x is a negate
// then an add; a per-column operand (1x32) is loaded once, before the loop.
// CHECK-LABEL: tile.kernel "scalars"
// CHECK:      %[[G:.*]] = tile.alloc {shape = array<i64: 32>
// CHECK:      tile.copy %[[G]]
// CHECK:      scf.for
// CHECK:      tile.vec "muls" %[[T:.*]], %{{.*}} {{.*}}scalar = -1.000000e+00
// CHECK-NEXT: tile.vec "adds" %[[T]], %[[T]] {{.*}}scalar = 3.000000e+00
// CHECK-NEXT: tile.vec "mul" %{{.*}}, %[[T]], %[[G]] {shape = array<i64: 4, 32>, strides = array<i64: 32, 1, 32, 1, 0, 1>}
tile.program "q" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<16x32xf32>, layout = "ND"}
  tile.tensor {name = "g", kind = "input", offset = 2048 : i64, type = tensor<1x32xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 4096 : i64, type = tensor<16x32xf32>, layout = "ND"}
  tile.kernel "scalars" attributes {block_dim = 1 : i64, tiling = #tile.tiling<tile = [4, 32], grid = [4, 1], ub_bytes = 1, cycles = 1>} {
    %x = tile.load "x" : tensor<16x32xf32>
    %g = tile.load "g" : tensor<1x32xf32>
    %y = tile.map ins(%x, %g : tensor<16x32xf32>, tensor<1x32xf32>) -> tensor<16x32xf32> {
    ^bb0(%a : f32, %b : f32):
      %c = arith.constant 3.0 : f32
      %d = arith.subf %c, %a : f32
      %e = arith.mulf %d, %b : f32
      tile.yield %e : f32
    }
    tile.store %y, "y" : tensor<16x32xf32>
  }
}
