// tile-expand-structured: a tile.load of a box of a larger tensor (a slice)
// and a tile.store into a box (a concat input) read and write with the
// strides of the tensor the box lies in, from the box's first element.
// RUN: ge-opt %s --split-input-file --verify-diagnostics -p tile-expand-structured | filecheck %s

// x[0:4, 32:64] -> y[4:8, 0:32], tiles of 2x16: the load starts at element
// 32 and steps 64 per row; the store starts at 4 * 32 = 128, 32 per row.
// CHECK-LABEL: tile.kernel "box"
// CHECK:       %[[SRC:.*]] = tile.at %{{.*}} + %{{.*}} {offset = 32 : i64}
// CHECK-NEXT:  tile.copy %[[UB:.*]], %[[SRC]] {shape = array<i64: 2, 16>, dst_strides = array<i64: 16, 1>, src_strides = array<i64: 64, 1>}
// CHECK:       %[[DST:.*]] = tile.at %{{.*}} + %{{.*}} {offset = 128 : i64}
// CHECK-NEXT:  tile.copy %[[DST]], %[[UB]] {shape = array<i64: 2, 16>, dst_strides = array<i64: 32, 1>, src_strides = array<i64: 16, 1>}
tile.program "b" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<4x64xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 2048 : i64, type = tensor<8x32xf32>, layout = "ND"}
  tile.kernel "box" attributes {block_dim = 1 : i64, tiling = #tile.tiling<tile = [2, 16], grid = [2, 2], ub_bytes = 1, cycles = 1>} {
    %x = tile.load "x" {source = array<i64: 4, 64>, offsets = array<i64: 0, 32>} : tensor<4x32xf32>
    tile.store %x, "y" {dest = array<i64: 8, 32>, offsets = array<i64: 4, 0>} : tensor<4x32xf32>
  }
}

// -----

// A box must lie inside its tensor.
tile.program "c" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<4x64xf32>, layout = "ND"}
  tile.kernel "outside" attributes {block_dim = 1 : i64} {
    // expected-error@+1 {{tile.load: the box [4, 32] at [0, 48] is not inside [4, 64]}}
    %x = tile.load "x" {source = array<i64: 4, 64>, offsets = array<i64: 0, 48>} : tensor<4x32xf32>
    tile.store %x, "x" : tensor<4x32xf32>
  }
}
