// tile-select-tiling: the tile box of each structured kernel, from UB's
// capacity and the cost model of the target config, recorded as #tile.tiling.
// RUN: ge-opt %s --split-input-file -p tile-select-tiling | filecheck %s
// RUN: ge-opt %s --split-input-file -p 'tile-select-tiling{target=davinci-910b}' | filecheck %s --check-prefix=B

// Rows are independent: one row per tile spreads 16 rows over 16 cores on
// both targets; the predicted cycles come from each target's config
// (davinci-910b's GM latency is 150 cycles, 910's 100). A single tile would
// load everything once, before its loop: that load is counted too.
// CHECK-LABEL: tile.program "rows"
// CHECK: tile.kernel "k" attributes {tiling = #tile.tiling<tile = [1, 64], grid = [16, 1], ub_bytes = {{[0-9]+}}, cycles = 233>, block_dim = 1 : i64}
// B-LABEL: tile.program "rows"
// B: tiling = #tile.tiling<tile = [1, 64], grid = [16, 1], ub_bytes = {{[0-9]+}}, cycles = 334>
tile.program "rows" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<16x64xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 4096 : i64, type = tensor<16x64xf32>, layout = "ND"}
  tile.kernel "k" attributes {block_dim = 1 : i64} {
    %x = tile.load "x" : tensor<16x64xf32>
    %m = tile.reduction "max" %x : tensor<16x64xf32> -> tensor<16x1xf32>
    %y = tile.map ins(%x, %m : tensor<16x64xf32>, tensor<16x1xf32>) -> tensor<16x64xf32> {
    ^bb0(%a : f32, %b : f32):
      %d = arith.subf %a, %b : f32
      tile.yield %d : f32
    }
    tile.store %y, "y" : tensor<16x64xf32>
  }
}

// -----

// 4096 rows of 2048 floats: a tile must fit the 256 KB UB with its
// double-buffered load, so the chooser takes fewer rows per tile.
// CHECK-LABEL: tile.program "big"
// CHECK: tiling = #tile.tiling<tile = [{{[1-9]}}, 2048], grid = [{{[0-9]+}}, 1], ub_bytes = [[UB:[0-9]+]]
tile.program "big" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<4096x2048xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 33554432 : i64, type = tensor<4096x2048xf32>, layout = "ND"}
  tile.kernel "k" attributes {block_dim = 1 : i64} {
    %x = tile.load "x" : tensor<4096x2048xf32>
    %s = tile.reduction "sum" %x : tensor<4096x2048xf32> -> tensor<4096x1xf32>
    %y = tile.map ins(%x, %s : tensor<4096x2048xf32>, tensor<4096x1xf32>) -> tensor<4096x2048xf32> {
    ^bb0(%a : f32, %b : f32):
      %d = arith.divf %a, %b : f32
      tile.yield %d : f32
    }
    tile.store %y, "y" : tensor<4096x2048xf32>
  }
}

// -----

// A kernel that already has a tiling keeps it; loop-level kernels are not touched.
// CHECK-LABEL: tile.program "kept"
// CHECK: tiling = #tile.tiling<tile = [4, 64], grid = [4, 1], ub_bytes = 1, cycles = 2>
// CHECK: tile.kernel "loops" attributes {block_dim = 1 : i64}
tile.program "kept" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<16x64xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 4096 : i64, type = tensor<16x64xf32>, layout = "ND"}
  tile.kernel "k" attributes {block_dim = 1 : i64, tiling = #tile.tiling<tile = [4, 64], grid = [4, 1], ub_bytes = 1, cycles = 2>} {
    %x = tile.load "x" : tensor<16x64xf32>
    tile.store %x, "y" : tensor<16x64xf32>
  }
  tile.kernel "loops" attributes {block_dim = 1 : i64} {
    %u = tile.alloc {shape = array<i64: 64>, layout = "ND", buffers = 1 : i64} : !tile.ref<ub, f32>
  }
}


// -----

// UNet's pixel shuffle, a transpose that keeps runs of 2 floats (8 bytes, a
// padded burst each): loaded whole, one tile would take 512 DMAs before its
// loop, 51k cycles; those hoisted loads are counted like the others, so the
// tiles are slices of it spread over the 32 cores (the whole tensor is never
// the pick; 512 tiles of one run of 16 pairs since the pipelined tiles are
// priced as overlapping all but one tile's other stages: unet's shuffles
// 1,777 -> 1,794 and 1,743 -> 1,777 simulated cycles, its whole run fewer;
// `ge-run tests/zoo/models/unet.onnx --inputs tests/zoo/models/unet.inputs.npz
// --op-summary ops.csv`, the transpose rows, at dab664a and 70846eb).
// CHECK-LABEL: tile.program "shuffle"
// CHECK: tile.kernel "k" attributes {tiling = #tile.tiling<tile = [1, 1, {{[0-9]+}}, {{[12]}}, 16, 2], grid = [1, 16, {{[0-9]+}}, {{[12]}}, 1, 1]
tile.program "shuffle" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<1x16x16x16x2x2xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 65536 : i64, type = tensor<1x16x16x2x16x2xf32>, layout = "ND"}
  tile.kernel "k" attributes {block_dim = 1 : i64} {
    %x = tile.load "x" {perm = array<i64: 0, 1, 2, 4, 3, 5>} : tensor<1x16x16x2x16x2xf32>
    tile.store %x, "y" : tensor<1x16x16x2x16x2xf32>
  }
}

// -----

// A vocabulary of 1,000 (an lm_head) has no divisor in whole 16-column
// fractals; its tiles are divisors of at least a fractal, each padded to
// fractals on chip (40 -> 48 columns), so the product spreads over 25 cores
// instead of running whole on one.
// CHECK-LABEL: tile.program "vocab"
// CHECK: tile.kernel "lm_head" attributes {tiling = #tile.tiling<tile = [16, 40], grid = [1, 25]
// B-LABEL: tile.program "vocab"
// B: tiling = #tile.tiling<tile = [16, 40], grid = [1, 25]
tile.program "vocab" {
  tile.tensor {name = "h", kind = "input", offset = 0 : i64, type = tensor<16x64xf16>, layout = "ND"}
  tile.tensor {name = "w_nz", kind = "input", offset = 4096 : i64, type = tensor<4x1008x16xf16>, layout = "FRACTAL_NZ"}
  tile.tensor {name = "y", kind = "output", offset = 262144 : i64, type = tensor<16x1000xf32>, layout = "ND"}
  tile.kernel "lm_head" attributes {block_dim = 1 : i64} {
    %a = tile.load "h" : tensor<16x64xf16>
    %b = tile.load "w_nz" {layout = "FRACTAL_NZ"} : tensor<1000x64xf16>
    %c = tile.batch_matmul %a, %b {transpose_b} : tensor<16x64xf16>, tensor<1000x64xf16> -> tensor<16x1000xf32>
    tile.store %c, "y" : tensor<16x1000xf32>
  }
}
