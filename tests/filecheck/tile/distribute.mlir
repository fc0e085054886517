// tile-distribute: tiles over cores, a contiguous run per core, no core idle at the end.
// RUN: ge-opt %s --split-input-file -p tile-distribute | filecheck %s

// 100 tiles on 32 cores: 4 per core, so 25 cores.
// CHECK-LABEL: tile.program "many"
// CHECK: distribution = #tile.distribution<cores = 25, per_core = 4>, block_dim = 25 : i64
tile.program "many" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<100x64xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 32768 : i64, type = tensor<100x64xf32>, layout = "ND"}
  tile.kernel "k" attributes {block_dim = 1 : i64, tiling = #tile.tiling<tile = [1, 64], grid = [100, 1], ub_bytes = 512, cycles = 1>} {
    %x = tile.load "x" : tensor<100x64xf32>
    tile.store %x, "y" : tensor<100x64xf32>
  }
}

// -----

// CHECK-LABEL: tile.program "few"
// CHECK: distribution = #tile.distribution<cores = 3, per_core = 1>, block_dim = 3 : i64
tile.program "few" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<3x64xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 1024 : i64, type = tensor<3x64xf32>, layout = "ND"}
  tile.kernel "k" attributes {block_dim = 1 : i64, tiling = #tile.tiling<tile = [1, 64], grid = [3, 1], ub_bytes = 512, cycles = 1>} {
    %x = tile.load "x" : tensor<3x64xf32>
    tile.store %x, "y" : tensor<3x64xf32>
  }
}

