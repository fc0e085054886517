// tile-select-tiling refuses, with one line naming the kernel, what no tile box can build.
// RUN: not ge-opt %s -p tile-select-tiling 2>&1 | filecheck %s

// CHECK: error: tile.kernel k: no tiling of [16, 7] fits: rows of 7 x 4 bytes are not a whole number of 32-byte blocks
// Rows of 7 floats (28 bytes) cannot move as whole 32-byte blocks: a diagnostic.
tile.program "ragged" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<16x7xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 4096 : i64, type = tensor<16x7xf32>, layout = "ND"}
  tile.kernel "k" attributes {block_dim = 1 : i64} {
    %x = tile.load "x" : tensor<16x7xf32>
    %s = tile.reduction "sum" %x : tensor<16x7xf32> -> tensor<16x1xf32>
    %y = tile.map ins(%x, %s : tensor<16x7xf32>, tensor<16x1xf32>) -> tensor<16x7xf32> {
    ^bb0(%a : f32, %b : f32):
      %d = arith.divf %a, %b : f32
      tile.yield %d : f32
    }
    tile.store %y, "y" : tensor<16x7xf32>
  }
}
