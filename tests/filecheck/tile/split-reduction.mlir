// tile-split-reduction: a product whose cores would each read long K panels
// becomes a kernel of K-slice partial products (fp32, in a GM workspace)
// and a kernel that adds them in slice order and runs the epilogue; the
// cost model (tile-select-tiling's) decides, and the two kernels keep the
// tilings it costed.
// RUN: ge-opt %s --split-input-file -p tile-split-reduction | filecheck %s

// BERT-base's FFN output (128 x 768 from K = 3,072, a FRACTAL_NZ b^T): four
// slices of 768. A's slices are a strided view of its rows (perm), b^T's
// contiguous runs of its column blocks; the workspace (no arena plan here)
// takes fresh GM after every tensor; the sum kernel (kind split_k_sum: the
// roofline counts the op's bound on the partials only) reads the slices as
// row blocks of [4 * 128, 768] and adds them before the bias.
// CHECK-LABEL: tile.program "p"
// CHECK:       tile.tensor {ge.stored_bytes = 1572864 : i64, name = "k0_matmul_partials", kind = "internal", offset = 5703680 : i64, type = tensor<4x128x768xf32>, layout = "ND"}
// CHECK:       tile.kernel "k0_matmul" attributes {op_type = "matmul", tiling = #tile.tiling<tile = [1, 128, 96], grid = [4, 1, 8]
// CHECK-NEXT:    %[[A:.*]] = tile.load "x" {perm = array<i64: 1, 0, 2>} : tensor<4x128x768xf16>
// CHECK-NEXT:    %[[B:.*]] = tile.load "w" {layout = "FRACTAL_NZ"} : tensor<4x768x768xf16>
// CHECK-NEXT:    %[[P:.*]] = tile.batch_matmul %[[A]], %[[B]] {transpose_b} : tensor<4x128x768xf16>, tensor<4x768x768xf16> -> tensor<4x128x768xf32>
// CHECK-NEXT:    tile.store %[[P]], "k0_matmul_partials" : tensor<4x128x768xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  tile.kernel "k0_matmul_sum" attributes {op_type = "matmul", kind = "split_k_sum", tiling = #tile.tiling<
// CHECK-NEXT:    %[[S0:.*]] = tile.load "k0_matmul_partials" {source = array<i64: 1, 512, 768>, offsets = array<i64: 0, 0, 0>} : tensor<1x128x768xf32>
// CHECK-NEXT:    %[[S1:.*]] = tile.load "k0_matmul_partials" {source = array<i64: 1, 512, 768>, offsets = array<i64: 0, 128, 0>} : tensor<1x128x768xf32>
// CHECK-NEXT:    %[[S2:.*]] = tile.load "k0_matmul_partials" {source = array<i64: 1, 512, 768>, offsets = array<i64: 0, 256, 0>} : tensor<1x128x768xf32>
// CHECK-NEXT:    %[[S3:.*]] = tile.load "k0_matmul_partials" {source = array<i64: 1, 512, 768>, offsets = array<i64: 0, 384, 0>} : tensor<1x128x768xf32>
// CHECK-NEXT:    %[[SUM:.*]] = tile.map ins(%[[S0]], %[[S1]], %[[S2]], %[[S3]] : {{.*}}) -> tensor<1x128x768xf32> {
// CHECK-NEXT:    ^bb0(%[[X0:.*]]: f32, %[[X1:.*]]: f32, %[[X2:.*]]: f32, %[[X3:.*]]: f32):
// CHECK-NEXT:      %[[T1:.*]] = arith.addf %[[X0]], %[[X1]] : f32
// CHECK-NEXT:      %[[T2:.*]] = arith.addf %[[T1]], %[[X2]] : f32
// CHECK-NEXT:      %[[T3:.*]] = arith.addf %[[T2]], %[[X3]] : f32
// CHECK-NEXT:      tile.yield %[[T3]] : f32
// CHECK:         %[[BIAS:.*]] = tile.load "bias" : tensor<768xf16>
// CHECK-NEXT:    %[[Y:.*]] = tile.map ins(%[[SUM]], %[[BIAS]] : {{.*}}) -> tensor<1x128x768xf16> {
// CHECK:         tile.store %[[Y]], "y" : tensor<1x128x768xf16>
// CHECK-NOT:   tile.batch_matmul
tile.program "p" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<1x128x3072xf16>, layout = "ND"}
  tile.tensor {name = "w", kind = "input", offset = 786432 : i64, type = tensor<192x768x16xf16>, layout = "FRACTAL_NZ"}
  tile.tensor {name = "bias", kind = "input", offset = 5505024 : i64, type = tensor<768xf16>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 5506560 : i64, type = tensor<1x128x768xf16>, layout = "ND"}
  tile.kernel "k0_matmul" attributes {op_type = "matmul", block_dim = 1 : i64} {
    %0 = tile.load "x" : tensor<1x128x3072xf16>
    %1 = tile.load "w" {layout = "FRACTAL_NZ"} : tensor<768x3072xf16>
    %2 = tile.batch_matmul %0, %1 {transpose_b} : tensor<1x128x3072xf16>, tensor<768x3072xf16> -> tensor<1x128x768xf32>
    %3 = tile.load "bias" : tensor<768xf16>
    %4 = tile.map ins(%2, %3 : tensor<1x128x768xf32>, tensor<768xf16>) -> tensor<1x128x768xf16> {
    ^bb0(%5: f32, %6: f16):
      %7 = arith.extf %6 : f16 to f32
      %8 = arith.addf %5, %7 : f32
      %9 = arith.truncf %8 : f32 to f16
      tile.yield %9 : f16
    }
    tile.store %4, "y" : tensor<1x128x768xf16>
  }
}

// -----

// A query projection (K = 768 against 768 outputs): its tiles already
// spread over the cores with short panels, the split costs more: unchanged.
// CHECK-LABEL: tile.program "p"
// CHECK-NOT:   partials
// CHECK:       tile.batch_matmul %{{.*}}, %{{.*}} {transpose_b} : tensor<1x128x768xf16>, tensor<768x768xf16>
// CHECK-NOT:   partials
tile.program "p" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<1x128x768xf16>, layout = "ND"}
  tile.tensor {name = "w", kind = "input", offset = 196608 : i64, type = tensor<48x768x16xf16>, layout = "FRACTAL_NZ"}
  tile.tensor {name = "y", kind = "output", offset = 1376256 : i64, type = tensor<1x128x768xf32>, layout = "ND"}
  tile.kernel "k0_matmul" attributes {block_dim = 1 : i64} {
    %0 = tile.load "x" : tensor<1x128x768xf16>
    %1 = tile.load "w" {layout = "FRACTAL_NZ"} : tensor<768x768xf16>
    %2 = tile.batch_matmul %0, %1 {transpose_b} : tensor<1x128x768xf16>, tensor<768x768xf16> -> tensor<1x128x768xf32>
    tile.store %2, "y" : tensor<1x128x768xf32>
  }
}

// -----

// A row-major b (an activation, not a packed weight): its K slices are
// contiguous row blocks, [4, 512, 64]; the epilogue (a ReLU) moves to the
// sum kernel.
// CHECK-LABEL: tile.program "p"
// CHECK:       tile.tensor {ge.stored_bytes = 32768 : i64, name = "k0_matmul_partials", kind = "internal", {{.*}} type = tensor<4x32x64xf32>
// CHECK:       tile.kernel "k0_matmul"
// CHECK-NEXT:    tile.load "a" {perm = array<i64: 1, 0, 2>} : tensor<4x32x512xf16>
// CHECK-NEXT:    tile.load "b" : tensor<4x512x64xf16>
// CHECK-NEXT:    tile.batch_matmul %{{.*}}, %{{.*}} : tensor<4x32x512xf16>, tensor<4x512x64xf16> -> tensor<4x32x64xf32>
// CHECK:       tile.kernel "k0_matmul_sum" attributes {kind = "split_k_sum"
// CHECK-COUNT-4: tile.load "k0_matmul_partials" {source = array<i64: 128, 64>
// CHECK:         arith.maximumf
// CHECK:         tile.store %{{.*}}, "y" : tensor<32x64xf32>
tile.program "p" {
  tile.tensor {name = "a", kind = "input", offset = 0 : i64, type = tensor<32x2048xf16>, layout = "ND"}
  tile.tensor {name = "b", kind = "input", offset = 131072 : i64, type = tensor<2048x64xf16>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 393216 : i64, type = tensor<32x64xf32>, layout = "ND"}
  tile.kernel "k0_matmul" attributes {block_dim = 1 : i64} {
    %0 = tile.load "a" : tensor<32x2048xf16>
    %1 = tile.load "b" : tensor<2048x64xf16>
    %2 = tile.batch_matmul %0, %1 : tensor<32x2048xf16>, tensor<2048x64xf16> -> tensor<32x64xf32>
    %3 = tile.map ins(%2 : tensor<32x64xf32>) -> tensor<32x64xf32> {
    ^bb0(%4: f32):
      %5 = arith.constant 0.000000e+00 : f32
      %6 = arith.maximumf %4, %5 : f32
      tile.yield %6 : f32
    }
    tile.store %3, "y" : tensor<32x64xf32>
  }
}

// -----

// Under a device-memory limit (tile-fit-device-memory's plan did not count
// a workspace): unchanged.
// CHECK-LABEL: tile.program "p"
// CHECK-NOT:   partials
// CHECK:       tile.batch_matmul %{{.*}}, %{{.*}} : tensor<32x2048xf16>, tensor<2048x64xf16> -> tensor<32x64xf32>
// CHECK-NOT:   partials
tile.program "p" attributes {ge.memory = {alignment = 512 : i64, arena_size = 0 : i64, device_memory_limit = 8388608 : i64}} {
  tile.tensor {name = "a", kind = "input", offset = 0 : i64, type = tensor<32x2048xf16>, layout = "ND"}
  tile.tensor {name = "b", kind = "input", offset = 131072 : i64, type = tensor<2048x64xf16>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 393216 : i64, type = tensor<32x64xf32>, layout = "ND"}
  tile.kernel "k0_matmul" attributes {block_dim = 1 : i64} {
    %0 = tile.load "a" : tensor<32x2048xf16>
    %1 = tile.load "b" : tensor<2048x64xf16>
    %2 = tile.batch_matmul %0, %1 : tensor<32x2048xf16>, tensor<2048x64xf16> -> tensor<32x64xf32>
    tile.store %2, "y" : tensor<32x64xf32>
  }
}
