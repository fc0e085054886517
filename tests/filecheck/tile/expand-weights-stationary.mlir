// tile-expand-structured with a weights-stationary tiling (weights-stationary.mlir: its choice).
// RUN: ge-opt %s -p tile-expand-structured | filecheck %s
// The expansion of a given weights-stationary tiling: 64 x 32 by 32 x 32
// in tiles of [16, 16], two cores of four row tiles. Each core copies its
// column block of the weights, all of K (2 blocks of 16 columns x 16), to
// L1 once, before its tiles; the tiles are unrolled (no tile loop), the
// rows fastest; tile i's store to GM comes after tile i + 1's product, the
// last one's at the end.
// CHECK-LABEL: tile.kernel "w"
// CHECK-NOT:   scf.for
// CHECK:       %[[WEIGHTS:.*]] = tile.alloc {shape = array<i64: 512>{{.*}}!tile.ref<l1, f16>
// CHECK:       tile.copy %[[WEIGHTS]], %{{.*}} {shape = array<i64: 2, 256>, dst_strides = array<i64: 256, 1>, src_strides = array<i64: 512, 1>} : !tile.ref<l1, f16>, !tile.ref<gm, f16>
// CHECK-NOT:   tile.copy %[[WEIGHTS]]
// CHECK:       tile.matmul
// CHECK-NOT:   : !tile.ref<gm, f16>, !tile.ref<ub, f16>
// CHECK-NOT:   tile.copy %[[WEIGHTS]]
// CHECK:       tile.matmul
// CHECK:       tile.copy {{.*}} : !tile.ref<ub, f32>, !tile.ref<l0c, f32>
// CHECK:       tile.copy {{.*}} : !tile.ref<gm, f16>, !tile.ref<ub, f16>
// CHECK-NEXT:  tile.cast
// CHECK:       tile.matmul
// CHECK:       tile.copy {{.*}} : !tile.ref<gm, f16>, !tile.ref<ub, f16>
// CHECK-NEXT:  tile.cast
// CHECK:       tile.matmul
// CHECK:       tile.copy {{.*}} : !tile.ref<gm, f16>, !tile.ref<ub, f16>
// CHECK-NEXT:  tile.cast
// CHECK:       tile.copy {{.*}} : !tile.ref<gm, f16>, !tile.ref<ub, f16>
// CHECK-NOT:   tile.matmul
// CHECK-NOT:   tile.copy %[[WEIGHTS]]
// RUN: ge-opt %s -p tile-expand-structured | filecheck %s --check-prefix=PANELS
// K is one L1 panel: the tiles' left operands take two L1 buffers in turn,
// so a tile's copy goes beside the products of the tile before (with one
// buffer it waited for them).
// PANELS-LABEL: tile.kernel "w"
// PANELS:       tile.alloc {shape = array<i64: 512>{{.*}}!tile.ref<l1, f16>
// PANELS-NEXT:  %[[LEFT0:.*]] = tile.alloc {shape = array<i64: 512>{{.*}}!tile.ref<l1, f16>
// PANELS-NEXT:  %[[LEFT1:.*]] = tile.alloc {shape = array<i64: 512>{{.*}}!tile.ref<l1, f16>
// PANELS:       tile.copy %[[LEFT0]], {{.*}} : !tile.ref<l1, f16>, !tile.ref<gm, f16>
// PANELS:       tile.copy %[[LEFT1]], {{.*}} : !tile.ref<l1, f16>, !tile.ref<gm, f16>
// PANELS:       tile.copy %[[LEFT0]], {{.*}} : !tile.ref<l1, f16>, !tile.ref<gm, f16>
// PANELS:       tile.copy %[[LEFT1]], {{.*}} : !tile.ref<l1, f16>, !tile.ref<gm, f16>
tile.program "expand" {
  tile.tensor {name = "a", kind = "input", offset = 0 : i64, type = tensor<64x32xf16>, layout = "ND"}
  tile.tensor {name = "w", kind = "input", offset = 4096 : i64, type = tensor<2x32x16xf16>, layout = "FRACTAL_NZ"}
  tile.tensor {name = "y", kind = "output", offset = 8192 : i64, type = tensor<64x32xf16>, layout = "ND"}
  tile.kernel "w" attributes {block_dim = 2 : i64, tiling = #tile.tiling<tile = [16, 16], grid = [4, 2], ub_bytes = 1, cycles = 1, stationary = "weights">, distribution = #tile.distribution<cores = 2, per_core = 4>} {
    %a = tile.load "a" : tensor<64x32xf16>
    %w = tile.load "w" {layout = "FRACTAL_NZ"} : tensor<32x32xf16>
    %c = tile.batch_matmul %a, %w {transpose_b} : tensor<64x32xf16>, tensor<32x32xf16> -> tensor<64x32xf32>
    %y = tile.map ins(%c : tensor<64x32xf32>) -> tensor<64x32xf16> {
    ^bb0(%x : f32):
      %h = arith.truncf %x : f32 to f16
      tile.yield %h : f16
    }
    tile.store %y, "y" : tensor<64x32xf16>
  }
}
