// tile.gather (an embedding lookup): tile-expand-structured turns it into a
// loop over the tile's rows, each reading its index from the indices' UB
// column on the scalar unit (tile.load_index, bounded by the table's rows)
// and copying that one row GM -> UB; tile-select-tiling chooses the tile box
// of a kernel that has none. A kernel with a #tile.tiling keeps it.
// RUN: ge-opt %s --split-input-file --verify-diagnostics -p tile-select-tiling,tile-expand-structured | filecheck %s

// 16 indices into a 50x64 f32 table, tiles of 4 rows: per tile the indices'
// column (4 x i64, one 32-byte block) is copied to UB once, then a loop of
// 4 rows: load_index (bound 50), the row's GM offset index * 64, one copy of
// 64 floats into row r of the UB tile; the tile is stored as [1, 4, 64].
// CHECK-LABEL: tile.kernel "emb" attributes {tiling = #tile.tiling<tile = [1, 4, 64], grid = [1, 4, 1]
// CHECK-DAG:   %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG:   %[[IDX:.*]] = tile.alloc {shape = array<i64: 8>, layout = "ND", buffers = 1 : i64} : !tile.ref<ub, i64>
// CHECK-DAG:   %[[ROWS:.*]] = tile.alloc {shape = array<i64: 256>, layout = "ND", buffers = 1 : i64} : !tile.ref<ub, f32>
// CHECK:       scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:         %[[GI:.*]] = tile.gm {tensor = "i"} : !tile.ref<gm, i64>
// CHECK:         %[[GIT:.*]] = tile.at %[[GI]] + %{{.*}} {offset = 0 : i64}
// CHECK-NEXT:    tile.copy %[[IDX]], %[[GIT]] {shape = array<i64: 4>, dst_strides = array<i64: 1>, src_strides = array<i64: 1>} : !tile.ref<ub, i64>, !tile.ref<gm, i64>
// CHECK-NEXT:    %[[W:.*]] = tile.gm {tensor = "w"} : !tile.ref<gm, f32>
// CHECK-NEXT:    scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      %[[AT:.*]] = tile.at %[[IDX]] + %[[R]] {offset = 0 : i64} : !tile.ref<ub, i64> -> !tile.ref<ub, i64>
// CHECK-NEXT:      %[[ROW:.*]] = tile.load_index %[[AT]] {bound = 50 : i64} : !tile.ref<ub, i64>
// CHECK-NEXT:      %[[START:.*]] = arith.muli %[[ROW]], %[[C64]] : index
// CHECK-NEXT:      %[[DOFF:.*]] = arith.muli %[[R]], %[[C64]] : index
// CHECK-NEXT:      %[[DST:.*]] = tile.at %[[ROWS]] + %[[DOFF]] {offset = 0 : i64} : !tile.ref<ub, f32> -> !tile.ref<ub, f32>
// CHECK-NEXT:      %[[SRC:.*]] = tile.at %[[W]] + %[[START]] {offset = 0 : i64} : !tile.ref<gm, f32> -> !tile.ref<gm, f32>
// CHECK-NEXT:      tile.copy %[[DST]], %[[SRC]] {shape = array<i64: 64>, dst_strides = array<i64: 1>, src_strides = array<i64: 1>} : !tile.ref<ub, f32>, !tile.ref<gm, f32>
// CHECK-NEXT:    }
// CHECK:         %[[GY:.*]] = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
// CHECK:         tile.copy %{{.*}}, %[[ROWS]] {shape = array<i64: 1, 4, 64>, {{.*}}} : !tile.ref<gm, f32>, !tile.ref<ub, f32>
// CHECK-NEXT:  }
// CHECK-NOT:   tile.gather
tile.program "e" {
  tile.tensor {name = "w", kind = "input", offset = 0 : i64, type = tensor<50x64xf32>, layout = "ND"}
  tile.tensor {name = "i", kind = "input", offset = 12864 : i64, type = tensor<16x1xi64>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 13056 : i64, type = tensor<1x16x64xf32>, layout = "ND"}
  tile.kernel "emb" attributes {block_dim = 1 : i64, tiling = #tile.tiling<tile = [1, 4, 64], grid = [1, 4, 1], ub_bytes = 1, cycles = 1>} {
    %i = tile.load "i" : tensor<16x1xi64>
    %y = tile.gather "w"[%i] {table = array<i64: 1, 50, 64>} : tensor<16x1xi64> -> tensor<1x16x64xf32>
    tile.store %y, "y" : tensor<1x16x64xf32>
  }
}

// -----

// A gather along a middle axis of a [2, 10, 32] tensor, [A, V, B] = [2, 10, 32]
// with 3 i32 indices, one tile [2, 3, 32]: the indices' column (3 x i32, 12
// bytes: a padded DMA) is copied once, before the tile loop; a loop
// over A around the loop over the rows; the row of index k in slice a starts
// at a * 10 * 32 + k * 32 and lands at a * 3 * 32 + r * 32 in UB.
// CHECK-LABEL: tile.kernel "middle" attributes {tiling = #tile.tiling<tile = [2, 3, 32], grid = [1, 1, 1]
// CHECK-DAG:   %[[C96:.*]] = arith.constant 96 : index
// CHECK-DAG:   %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG:   %[[C320:.*]] = arith.constant 320 : index
// CHECK-DAG:   %[[IDX:.*]] = tile.alloc {shape = array<i64: 8>, layout = "ND", buffers = 1 : i64} : !tile.ref<ub, i32>
// CHECK:       tile.copy %[[IDX]], %{{.*}} {shape = array<i64: 3>, dst_strides = array<i64: 1>, src_strides = array<i64: 1>} : !tile.ref<ub, i32>, !tile.ref<gm, i32>
// CHECK-NEXT:  scf.for
// CHECK-NEXT:    %[[X:.*]] = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
// CHECK-NEXT:    scf.for %[[A:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        %[[AT:.*]] = tile.at %[[IDX]] + %[[R]] {offset = 0 : i64} : !tile.ref<ub, i32> -> !tile.ref<ub, i32>
// CHECK-NEXT:        %[[ROW:.*]] = tile.load_index %[[AT]] {bound = 10 : i64} : !tile.ref<ub, i32>
// CHECK-NEXT:        %[[SLICE:.*]] = arith.muli %[[A]], %[[C320]] : index
// CHECK-NEXT:        %[[K:.*]] = arith.muli %[[ROW]], %[[C32]] : index
// CHECK-NEXT:        %[[START:.*]] = arith.addi %[[SLICE]], %[[K]] : index
// CHECK-NEXT:        %[[DA:.*]] = arith.muli %[[A]], %[[C96]] : index
// CHECK-NEXT:        %[[DR:.*]] = arith.muli %[[R]], %[[C32]] : index
// CHECK-NEXT:        %[[D:.*]] = arith.addi %[[DA]], %[[DR]] : index
// CHECK-NEXT:        %[[DST:.*]] = tile.at %{{.*}} + %[[D]] {offset = 0 : i64} : !tile.ref<ub, f32> -> !tile.ref<ub, f32>
// CHECK-NEXT:        %[[SRC:.*]] = tile.at %[[X]] + %[[START]] {offset = 0 : i64} : !tile.ref<gm, f32> -> !tile.ref<gm, f32>
// CHECK-NEXT:        tile.copy %[[DST]], %[[SRC]] {shape = array<i64: 32>, dst_strides = array<i64: 1>, src_strides = array<i64: 1>} : !tile.ref<ub, f32>, !tile.ref<gm, f32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK:         tile.copy %{{.*}}, %{{.*}} {shape = array<i64: 2, 3, 32>, dst_strides = array<i64: 96, 32, 1>, src_strides = array<i64: 96, 32, 1>} : !tile.ref<gm, f32>, !tile.ref<ub, f32>
tile.program "m" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<2x10x32xf32>, layout = "ND"}
  tile.tensor {name = "i", kind = "input", offset = 4096 : i64, type = tensor<3x1xi32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 8192 : i64, type = tensor<2x3x32xf32>, layout = "ND"}
  tile.kernel "middle" attributes {block_dim = 1 : i64, tiling = #tile.tiling<tile = [2, 3, 32], grid = [1, 1, 1], ub_bytes = 1, cycles = 1>} {
    %i = tile.load "i" : tensor<3x1xi32>
    %y = tile.gather "x"[%i] {table = array<i64: 2, 10, 32>} : tensor<3x1xi32> -> tensor<2x3x32xf32>
    tile.store %y, "y" : tensor<2x3x32xf32>
  }
}

// -----

// No #tile.tiling: tile-select-tiling chooses one (every tile box divides
// [1, 16, 64]; its rows are whole 32-byte blocks), then it is expanded.
// CHECK-LABEL: tile.kernel "chosen" attributes {tiling = #tile.tiling<tile = [1, {{[0-9]+}}, {{8|16|32|64}}], grid = [1, {{[0-9]+}}, {{[0-9]+}}], ub_bytes = {{[0-9]+}}, cycles = {{[0-9]+}}>
// CHECK:       tile.load_index %{{.*}} {bound = 50 : i64} : !tile.ref<ub, i64>
// CHECK-NOT:   tile.gather
tile.program "s" {
  tile.tensor {name = "w", kind = "input", offset = 0 : i64, type = tensor<50x64xf32>, layout = "ND"}
  tile.tensor {name = "i", kind = "input", offset = 12864 : i64, type = tensor<16x1xi64>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 13056 : i64, type = tensor<1x16x64xf32>, layout = "ND"}
  tile.kernel "chosen" attributes {block_dim = 1 : i64} {
    %i = tile.load "i" : tensor<16x1xi64>
    %y = tile.gather "w"[%i] {table = array<i64: 1, 50, 64>} : tensor<16x1xi64> -> tensor<1x16x64xf32>
    tile.store %y, "y" : tensor<1x16x64xf32>
  }
}

// -----

// Rows of 4 floats (16 bytes), not whole 32-byte blocks: each row copy is
// 4 floats into a UB row padded to a block (8 floats apart); convert-tile-to-npu
// makes it a padded DMA.
// CHECK-LABEL: tile.kernel "narrow"
// CHECK:         tile.load_index %{{.*}} {bound = 50 : i64} : !tile.ref<ub, i64>
// CHECK:         %[[NOFF:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK:         tile.copy %{{.*}}, %{{.*}} {shape = array<i64: 4>, dst_strides = array<i64: 1>, src_strides = array<i64: 1>} : !tile.ref<ub, f32>, !tile.ref<gm, f32>
// CHECK:         tile.copy %{{.*}}, %{{.*}} {shape = array<i64: 1, 16, 4>, dst_strides = array<i64: 0, 4, 1>, src_strides = array<i64: {{[0-9]+}}, 8, 1>} : !tile.ref<gm, f32>, !tile.ref<ub, f32>
tile.program "n" {
  tile.tensor {name = "w", kind = "input", offset = 0 : i64, type = tensor<50x4xf32>, layout = "ND"}
  tile.tensor {name = "i", kind = "input", offset = 1024 : i64, type = tensor<16x1xi64>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 2048 : i64, type = tensor<1x16x4xf32>, layout = "ND"}
  tile.kernel "narrow" attributes {block_dim = 1 : i64, tiling = #tile.tiling<tile = [1, 16, 4], grid = [1, 1, 1], ub_bytes = 1, cycles = 1>} {
    %i = tile.load "i" : tensor<16x1xi64>
    %y = tile.gather "w"[%i] {table = array<i64: 1, 50, 4>} : tensor<16x1xi64> -> tensor<1x16x4xf32>
    tile.store %y, "y" : tensor<1x16x4xf32>
  }
}
