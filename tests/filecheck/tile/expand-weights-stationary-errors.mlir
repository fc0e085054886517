// tile-expand-structured refuses a weights-stationary tiling it cannot build, naming the kernel.
// RUN: not ge-opt %s -p tile-expand-structured 2>&1 | filecheck %s
// Weights in rows (not FRACTAL_NZ) cannot stay in L1 in the cube's order:
// a weights-stationary tiling of them is refused, naming the kernel.
// CHECK: error: tile.kernel rows: a weights-stationary tiling needs FRACTAL_NZ weights
tile.program "rows" {
  tile.tensor {name = "a", kind = "input", offset = 0 : i64, type = tensor<64x32xf16>, layout = "ND"}
  tile.tensor {name = "bt", kind = "input", offset = 4096 : i64, type = tensor<32x32xf16>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 8192 : i64, type = tensor<64x32xf16>, layout = "ND"}
  tile.kernel "rows" attributes {block_dim = 2 : i64, tiling = #tile.tiling<tile = [16, 16], grid = [4, 2], ub_bytes = 1, cycles = 1, stationary = "weights">, distribution = #tile.distribution<cores = 2, per_core = 4>} {
    %a = tile.load "a" : tensor<64x32xf16>
    %b = tile.load "bt" : tensor<32x32xf16>
    %c = tile.batch_matmul %a, %b {transpose_b} : tensor<64x32xf16>, tensor<32x32xf16> -> tensor<64x32xf32>
    tile.store %c, "y" : tensor<64x32xf32>
  }
}
