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

// -----

// A strided box (Swin's x[:, 1::2, 0::2, :]): `steps` multiply the tensor's
// strides, so rows of the box are 2 * 8 * 16 = 256 and its columns 2 * 16 =
// 32 elements apart in GM, from the first element at 1 * 128 = 128; the
// channels stay contiguous.
// CHECK-LABEL: tile.kernel "strided"
// CHECK:       %[[SRC:.*]] = tile.at %{{.*}} {offset = 128 : i64}
// CHECK-NEXT:  tile.copy %{{.*}}, %[[SRC]] {shape = array<i64: 1, 4, 4, 16>, dst_strides = array<i64: 256, 64, 16, 1>, src_strides = array<i64: 0, 256, 32, 1>}
tile.program "s" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<1x8x8x16xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 8192 : i64, type = tensor<1x4x4x16xf32>, layout = "ND"}
  tile.kernel "strided" attributes {block_dim = 1 : i64, tiling = #tile.tiling<tile = [1, 4, 4, 16], grid = [1, 1, 1, 1], ub_bytes = 1, cycles = 1>} {
    %x = tile.load "x" {source = array<i64: 1, 8, 8, 16>, offsets = array<i64: 0, 1, 0, 0>, steps = array<i64: 1, 2, 2, 1>} : tensor<1x4x4x16xf32>
    tile.store %x, "y" : tensor<1x4x4x16xf32>
  }
}

// -----

// Steps: one per dim, positive, 1 innermost (DMA moves rows), and the last
// element inside the tensor.
tile.program "t" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<8x16xf32>, layout = "ND"}
  tile.kernel "inner_step" attributes {block_dim = 1 : i64} {
    // expected-error@+1 {{tile.load: the innermost step is 1 (DMA moves rows)}}
    %x = tile.load "x" {source = array<i64: 8, 16>, offsets = array<i64: 0, 0>, steps = array<i64: 1, 2>} : tensor<8x8xf32>
    tile.store %x, "x" : tensor<8x8xf32>
  }
}

// -----

tile.program "u" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<8x16xf32>, layout = "ND"}
  tile.kernel "past_the_end" attributes {block_dim = 1 : i64} {
    // expected-error@+1 {{tile.load: the box [4, 16] at [2, 0] is not inside [8, 16]}}
    %x = tile.load "x" {source = array<i64: 8, 16>, offsets = array<i64: 2, 0>, steps = array<i64: 2, 1>} : tensor<4x16xf32>
    tile.store %x, "x" : tensor<4x16xf32>
  }
}
