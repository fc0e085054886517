// tile-select-tiling refuses, with one line naming the kernel, what no tile box can build.
// RUN: not ge-opt %s --split-input-file -p tile-select-tiling 2>&1 | filecheck %s

// A reduction keeps its rows whole in UB: a row of 131072 floats (512 KiB)
// is more than the target's UB, whatever the tile: a diagnostic with sizes.
// (Rows that are not whole 32-byte blocks are no reason: they move by padded DMA.)
// CHECK: error: tile.kernel k: no tiling of [2, 131072] fits: tile [1, 131072] needs {{[0-9]+}} bytes of UB, the target has {{[0-9]+}}
tile.program "long_rows" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<2x131072xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 1048576 : i64, type = tensor<2x131072xf32>, layout = "ND"}
  tile.kernel "k" attributes {block_dim = 1 : i64} {
    %x = tile.load "x" : tensor<2x131072xf32>
    %s = tile.reduction "sum" %x : tensor<2x131072xf32> -> tensor<2x1xf32>
    %y = tile.map ins(%x, %s : tensor<2x131072xf32>, tensor<2x1xf32>) -> tensor<2x131072xf32> {
    ^bb0(%a : f32, %b : f32):
      %d = arith.divf %a, %b : f32
      tile.yield %d : f32
    }
    tile.store %y, "y" : tensor<2x131072xf32>
  }
}

// -----

// Of the boxes tried ([4, n], [1, n], [2, n]), the diagnostic names the
// smallest one's failure: if even it does not fit, that is the blocker.
// CHECK: error: tile.kernel k4: no tiling of [4, 131072] fits: tile [1, 131072] needs {{[0-9]+}} bytes of UB
tile.program "four_rows" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<4x131072xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 2097152 : i64, type = tensor<4x1xf32>, layout = "ND"}
  tile.kernel "k4" attributes {block_dim = 1 : i64} {
    %x = tile.load "x" : tensor<4x131072xf32>
    %s = tile.reduction "sum" %x : tensor<4x131072xf32> -> tensor<4x1xf32>
    tile.store %s, "y" : tensor<4x1xf32>
  }
}
