// The tile passes that read an earlier pass's decision say which pass to run first.
// RUN: not ge-opt %s -p tile-distribute 2>&1 | filecheck %s --check-prefix=DIST
// RUN: not ge-opt %s -p tile-pipeline-buffers 2>&1 | filecheck %s --check-prefix=PIPE
// RUN: not ge-opt %s -p tile-expand-structured 2>&1 | filecheck %s --check-prefix=EXPAND
// RUN: not ge-opt %s -p convert-tile-to-npu 2>&1 | filecheck %s --check-prefix=NPU

// DIST: error: tile.kernel k: no #tile.tiling (run tile-select-tiling first)
// PIPE: error: tile.kernel k: no #tile.tiling (run tile-select-tiling first)
// EXPAND: error: tile.kernel k: no #tile.tiling (run tile-select-tiling first)
// NPU: error: tile.kernel @loops: tile.alloc without an address (run tile-allocate first)
tile.program "untiled" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<3x64xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 1024 : i64, type = tensor<3x64xf32>, layout = "ND"}
  tile.kernel "loops" attributes {block_dim = 1 : i64} {
    %u = tile.alloc {shape = array<i64: 64>, layout = "ND", buffers = 1 : i64} : !tile.ref<ub, f32>
  }
  tile.kernel "k" attributes {block_dim = 1 : i64} {
    %x = tile.load "x" : tensor<3x64xf32>
    tile.store %x, "y" : tensor<3x64xf32>
  }
}
