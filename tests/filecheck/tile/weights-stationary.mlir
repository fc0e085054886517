// Weights-stationary matmul tilings: a core per column block of the output
// runs that block's row tiles, its block of the (FRACTAL_NZ) weights copied
// to L1 once; tile-select-tiling picks it when the cost model prices it
// lower, tile-distribute gives each core its row tiles, and
// tile-expand-structured unrolls them, each tile's store after the next
// tile's product.
// RUN: ge-opt %s --split-input-file -p tile-select-tiling,tile-distribute | filecheck %s
// (expand-weights-stationary.mlir: the expansion; its -errors.mlir: what the expansion refuses)

// The BERT-base FFN's first product (128 x 768 by 768 x 3,072, fp16) with
// its bias and exact GELU: one [128, 96] tile per core would read all of A
// and its weights, then run the GELU (the vector unit's longest epilogue)
// with nothing left to overlap; four row tiles of [32, 96] per core read
// the weights once and overlap each tile's GELU with the next tile's loads.
// CHECK-LABEL: tile.program "ffn"
// CHECK: tiling = #tile.tiling<tile = [1, 32, 96], grid = [1, 4, 32], ub_bytes = {{[0-9]+}}, cycles = {{[0-9]+}}, stationary = "weights">, distribution = #tile.distribution<cores = 32, per_core = 4>, block_dim = 32 : i64
tile.program "ffn" {
  tile.tensor {name = "layer_norm", kind = "input", offset = 0 : i64, type = tensor<1x128x768xf16>, layout = "ND"}
  tile.tensor {name = "weight_nz_2", kind = "input", offset = 196608 : i64, type = tensor<48x3072x16xf16>, layout = "FRACTAL_NZ"}
  tile.tensor {name = "const_4", kind = "input", offset = 4915200 : i64, type = tensor<3072xf16>, layout = "ND"}
  tile.tensor {name = "matmul_2", kind = "output", offset = 4921344 : i64, type = tensor<1x128x3072xf16>, layout = "ND"}
  tile.kernel "k8_matmul" attributes {block_dim = 1 : i64} {
      %0 = tile.load "layer_norm" : tensor<1x128x768xf16>
      %1 = tile.load "weight_nz_2" {layout = "FRACTAL_NZ"} : tensor<3072x768xf16>
      %2 = tile.batch_matmul %0, %1 {transpose_b} : tensor<1x128x768xf16>, tensor<3072x768xf16> -> tensor<1x128x3072xf32>
      %3 = tile.load "const_4" : tensor<3072xf16>
      %4 = tile.map ins(%2, %3 : tensor<1x128x3072xf32>, tensor<3072xf16>) -> tensor<1x128x3072xf16> {
      ^bb0(%5: f32, %6: f16):
        %7 = arith.extf %6 : f16 to f32
        %8 = arith.addf %5, %7 : f32
        %9 = math.absf %8 : f32
        %10 = arith.constant 0.707106769 : f32
        %11 = arith.mulf %9, %10 : f32
        %12 = arith.constant 1.000000e+00 : f32
        %13 = arith.constant 0.327591091 : f32
        %14 = arith.mulf %11, %13 : f32
        %15 = arith.constant 1.000000e+00 : f32
        %16 = arith.addf %14, %15 : f32
        %17 = arith.divf %12, %16 : f32
        %18 = arith.constant 1.06140542 : f32
        %19 = arith.mulf %18, %17 : f32
        %20 = arith.constant -1.45315206 : f32
        %21 = arith.addf %19, %20 : f32
        %22 = arith.mulf %21, %17 : f32
        %23 = arith.constant 1.42141378 : f32
        %24 = arith.addf %22, %23 : f32
        %25 = arith.mulf %24, %17 : f32
        %26 = arith.constant -0.284496725 : f32
        %27 = arith.addf %25, %26 : f32
        %28 = arith.mulf %27, %17 : f32
        %29 = arith.constant 0.254829586 : f32
        %30 = arith.addf %28, %29 : f32
        %31 = arith.mulf %30, %17 : f32
        %32 = arith.mulf %11, %11 : f32
        %33 = arith.negf %32 : f32
        %34 = math.exp %33 : f32
        %35 = arith.mulf %31, %34 : f32
        %36 = arith.constant 0.000000e+00 : f32
        %37 = arith.maximumf %8, %36 : f32
        %38 = arith.constant 0.707106769 : f32
        %39 = arith.mulf %35, %38 : f32
        %40 = arith.mulf %11, %39 : f32
        %41 = arith.subf %37, %40 : f32
        %42 = arith.truncf %41 : f32 to f16
        tile.yield %42 : f16
      }
      tile.store %4, "matmul_2" : tensor<1x128x3072xf16>
  }
}

// -----

// A product of one row tile has no row tiles to share the weights with: the
// tiles stay row-major.
// CHECK-LABEL: tile.program "one_row_block"
// CHECK-NOT: stationary
// CHECK: tile.kernel
tile.program "one_row_block" {
  tile.tensor {name = "a", kind = "input", offset = 0 : i64, type = tensor<16x64xf16>, layout = "ND"}
  tile.tensor {name = "w", kind = "input", offset = 4096 : i64, type = tensor<4x256x16xf16>, layout = "FRACTAL_NZ"}
  tile.tensor {name = "y", kind = "output", offset = 40960 : i64, type = tensor<16x256xf16>, layout = "ND"}
  tile.kernel "k" attributes {block_dim = 1 : i64} {
    %a = tile.load "a" : tensor<16x64xf16>
    %w = tile.load "w" {layout = "FRACTAL_NZ"} : tensor<256x64xf16>
    %c = tile.batch_matmul %a, %w {transpose_b} : tensor<16x64xf16>, tensor<256x64xf16> -> tensor<16x256xf32>
    %y = tile.map ins(%c : tensor<16x256xf32>) -> tensor<16x256xf16> {
    ^bb0(%x : f32):
      %h = arith.truncf %x : f32 to f16
      tile.yield %h : f16
    }
    tile.store %y, "y" : tensor<16x256xf16>
  }
}
