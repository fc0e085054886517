// tile-expand-structured, the cube path: a tile.batch_matmul becomes GM -> L1
// fractal copies, load_fractal to L0A/L0B, mmad, and an L0C -> UB copy.
// RUN: ge-opt %s --split-input-file -p tile-select-tiling,tile-expand-structured | filecheck %s

// A 20x8 product (ViT-like token counts, a narrow head): not whole fractals,
// so the tile is the whole matrix, padded to 32x16 on chip. A's 20 rows go
// to L1 in column blocks (NZ: block j of the 32 padded rows at j * 32 * 8,
// row i at i * 8) as one whole 16-row block and a 4-row remainder. Straight
// from GM that would be one DMA per column block (each burst one row's
// 32 bytes), so the rows are staged through UB: one GM -> UB copy of the
// 20 rows, then UB -> L1 into fractals (on-chip DMAs, a tenth of the fixed
// cost). L0A gets them in ZZ order by one load_fractal per row block, every
// second fractal (src_stride 2); b^T's 8 rows go the same way, as a
// remainder only; the mmad runs on the padded sizes; only the 20 real rows
// (and 8 real columns) leave L0C and UB.
// CHECK-LABEL: tile.kernel "padded" attributes {tiling = #tile.tiling<tile = [20, 8], grid = [1, 1]
// CHECK:       %[[L1A:.*]] = tile.alloc {shape = array<i64: 1024>{{.*}}!tile.ref<l1, f32>
// CHECK:       %[[L1B:.*]] = tile.alloc {shape = array<i64: 512>{{.*}}!tile.ref<l1, f32>
// CHECK:       %[[L0C:.*]] = tile.alloc {shape = array<i64: 512>{{.*}}!tile.ref<l0c, f32>
// CHECK:       tile.copy %[[STAGEA:.*]], %{{.*}} {shape = array<i64: 20, 32>, dst_strides = array<i64: 32, 1>, src_strides = array<i64: 32, 1>} : !tile.ref<ub, f32>, !tile.ref<gm, f32>
// CHECK-NEXT:  tile.copy %[[L1A]], %[[STAGEA]] {shape = array<i64: 4, 1, 16, 8>, dst_strides = array<i64: 256, 128, 8, 1>, src_strides = array<i64: 8, 512, 32, 1>} : !tile.ref<l1, f32>, !tile.ref<ub, f32>
// CHECK:       %[[REST:.*]] = tile.at %[[L1A]] {offset = 128 : i64}
// CHECK:       tile.copy %[[REST]], %{{.*}} {shape = array<i64: 4, 4, 8>, dst_strides = array<i64: 256, 8, 1>, src_strides = array<i64: 8, 32, 1>} : !tile.ref<l1, f32>, !tile.ref<ub, f32>
// CHECK:       tile.copy %[[STAGEB:.*]], %{{.*}} {shape = array<i64: 8, 32>, {{.*}}} : !tile.ref<ub, f32>, !tile.ref<gm, f32>
// CHECK-NEXT:  tile.copy %[[L1B]], %[[STAGEB]] {shape = array<i64: 4, 8, 8>, dst_strides = array<i64: 128, 8, 1>, src_strides = array<i64: 8, 32, 1>} : !tile.ref<l1, f32>, !tile.ref<ub, f32>
// CHECK:       tile.load_fractal %[[L0A:.*]], %[[L1A]] {count = 4 : i64, src_stride = 2 : i64}
// CHECK:       %[[L0A1:.*]] = tile.at %[[L0A]] {offset = 512 : i64}
// CHECK:       %[[L1A1:.*]] = tile.at %[[L1A]] {offset = 128 : i64}
// CHECK:       tile.load_fractal %[[L0A1]], %[[L1A1]] {count = 4 : i64, src_stride = 2 : i64}
// CHECK:       tile.matmul %[[L0C]], %{{.*}}, %{{.*}} {m = 32 : i64, n = 16 : i64, k = 32 : i64}
// CHECK:       tile.copy %[[UB:.*]], %[[L0C]] {shape = array<i64: 1, 20, 16>, dst_strides = array<i64: 16, 16, 1>, src_strides = array<i64: 512, 16, 1>}
// CHECK:       tile.copy %{{.*}}, %[[UB]] {shape = array<i64: 20, 8>, dst_strides = array<i64: 8, 1>, src_strides = array<i64: 16, 1>}
tile.program "p" {
  tile.tensor {name = "a", kind = "input", offset = 0 : i64, type = tensor<20x32xf32>, layout = "ND"}
  tile.tensor {name = "bt", kind = "input", offset = 4096 : i64, type = tensor<8x32xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 8192 : i64, type = tensor<20x8xf32>, layout = "ND"}
  tile.kernel "padded" attributes {block_dim = 1 : i64} {
    %a = tile.load "a" : tensor<20x32xf32>
    %b = tile.load "bt" : tensor<8x32xf32>
    %c = tile.batch_matmul %a, %b {transpose_b} : tensor<20x32xf32>, tensor<8x32xf32> -> tensor<20x8xf32>
    tile.store %c, "y" : tensor<20x8xf32>
  }
}

// -----

// Whole fractals (a 32x32 product of K = 16): tiles of 16-row blocks are
// offered; each copy moves whole 16-row blocks, no remainder.
// CHECK-LABEL: tile.kernel "whole"
// CHECK-NOT:   tile.at %{{[0-9]+}} {offset
// CHECK:       tile.matmul {{.*}} {m = {{16|32}} : i64, n = {{16|32}} : i64, k = 16 : i64}
tile.program "q" {
  tile.tensor {name = "a", kind = "input", offset = 0 : i64, type = tensor<32x16xf32>, layout = "ND"}
  tile.tensor {name = "bt", kind = "input", offset = 4096 : i64, type = tensor<32x16xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 8192 : i64, type = tensor<32x32xf32>, layout = "ND"}
  tile.kernel "whole" attributes {block_dim = 1 : i64} {
    %a = tile.load "a" : tensor<32x16xf32>
    %b = tile.load "bt" : tensor<32x16xf32>
    %c = tile.batch_matmul %a, %b {transpose_b} : tensor<32x16xf32>, tensor<32x16xf32> -> tensor<32x32xf32>
    tile.store %c, "y" : tensor<32x32xf32>
  }
}

// -----

// K = 13 is not whole 8-element fp32 blocks: K pads to 16 on chip. Each row
// of A and of b^T goes to L1 as one whole block of 8 and a block of 5, which
// convert-tile-to-npu moves by a padded (zero-filling) GM -> L1 DMA; the
// mmad contracts over the padded 16.
// CHECK-LABEL: tile.kernel "short_k"
// CHECK:       %[[L1A:.*]] = tile.alloc {shape = array<i64: 512>{{.*}}!tile.ref<l1, f32>
// CHECK:       tile.copy %[[L1A]], %[[GA:.*]] {shape = array<i64: 1, 1, 16, 8>, dst_strides = array<i64: 256, 128, 8, 1>, src_strides = array<i64: 8, 208, 13, 1>}
// CHECK:       %[[TAIL:.*]] = tile.at %[[L1A]] {offset = 256 : i64}
// CHECK:       %[[GTAIL:.*]] = tile.at %[[GA]] {offset = 8 : i64}
// CHECK:       tile.copy %[[TAIL]], %[[GTAIL]] {shape = array<i64: 1, 1, 16, 5>, dst_strides = array<i64: 256, 128, 8, 1>, src_strides = array<i64: 8, 208, 13, 1>}
// CHECK:       tile.copy %{{.*}}, %{{.*}} {shape = array<i64: 1, 8, 5>, dst_strides = array<i64: 128, 8, 1>, src_strides = array<i64: 8, 13, 1>}
// CHECK-NOT:   tile.dup
// CHECK:       tile.matmul {{.*}} {m = 32 : i64, n = 16 : i64, k = 16 : i64}
tile.program "k" {
  tile.tensor {name = "a", kind = "input", offset = 0 : i64, type = tensor<20x13xf32>, layout = "ND"}
  tile.tensor {name = "bt", kind = "input", offset = 4096 : i64, type = tensor<8x13xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 8192 : i64, type = tensor<20x8xf32>, layout = "ND"}
  tile.kernel "short_k" attributes {block_dim = 1 : i64} {
    %a = tile.load "a" : tensor<20x13xf32>
    %b = tile.load "bt" : tensor<8x13xf32>
    %c = tile.batch_matmul %a, %b {transpose_b} : tensor<20x13xf32>, tensor<8x13xf32> -> tensor<20x8xf32>
    tile.store %c, "y" : tensor<20x8xf32>
  }
}

// -----

// fp16 P V with 5 tokens: V is a row-major right operand [K = 5, N = 20].
// Its rows go to 16x16 fractals (one of 16 columns, one of 4: a padded
// burst); rows 5..15 of both fractals are not in the tensor, and the padded
// columns of P multiply them, so they are zeroed from UB (tile.dup, then
// one copy UB -> L1 per fractal: 11 rows x 16 = 176 halves at row 5).
// CHECK-LABEL: tile.kernel "row_major_b"
// CHECK:       %[[L1B:.*]] = tile.alloc {shape = array<i64: 512>{{.*}}!tile.ref<l1, f16>
// CHECK:       %[[ZEROS:.*]] = tile.alloc {shape = array<i64: 176>{{.*}}!tile.ref<ub, f16>
// CHECK:       tile.copy %[[L1B]], %{{.*}} {shape = array<i64: 1, 5, 16>, dst_strides = array<i64: 256, 16, 1>, src_strides = array<i64: 16, 20, 1>}
// CHECK:       tile.copy %{{.*}}, %{{.*}} {shape = array<i64: 1, 5, 4>, dst_strides = array<i64: 256, 16, 1>, src_strides = array<i64: 16, 20, 1>}
// CHECK:       tile.dup %[[ZEROS]] {count = 176 : i64, value = 0.000000e+00 : f64}
// CHECK:       %[[ROW5:.*]] = tile.at %[[L1B]] {offset = 80 : i64}
// CHECK:       tile.copy %[[ROW5]], %[[ZEROS]] {shape = array<i64: 2, 176>, dst_strides = array<i64: 256, 1>, src_strides = array<i64: 0, 1>}
// CHECK:       tile.load_fractal %{{.*}}, %[[L1B]] {count = 2 : i64, src_stride = 1 : i64, transpose}
// CHECK:       tile.matmul {{.*}} {m = 16 : i64, n = 32 : i64, k = 16 : i64}
tile.program "v" {
  tile.tensor {name = "p", kind = "input", offset = 0 : i64, type = tensor<5x5xf16>, layout = "ND"}
  tile.tensor {name = "v", kind = "input", offset = 4096 : i64, type = tensor<5x20xf16>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 8192 : i64, type = tensor<5x20xf32>, layout = "ND"}
  tile.kernel "row_major_b" attributes {block_dim = 1 : i64} {
    %a = tile.load "p" : tensor<5x5xf16>
    %b = tile.load "v" : tensor<5x20xf16>
    %c = tile.batch_matmul %a, %b : tensor<5x5xf16>, tensor<5x20xf16> -> tensor<5x20xf32>
    tile.store %c, "y" : tensor<5x20xf32>
  }
}

// -----

// A weight stored in FRACTAL_NZ (`layout`, as convert-graph-to-tile packs
// constant right operands): b^T [64, 48] fp16 held as [3][64][16] (K blocks
// of 16, all 64 rows each). Each K block of a tile's rows is one contiguous
// run: the whole right operand of a tile is one copy of 3 runs of
// (tile rows x 16) elements, 64 x 16 apart in GM.
// CHECK-LABEL: tile.kernel "packed"
// CHECK:       tile.alloc {{.*}} : !tile.ref<l1, f16>
// CHECK-NEXT:  %[[L1B:.*]] = tile.alloc {{.*}} : !tile.ref<l1, f16>
// CHECK:       tile.gm {tensor = "w_nz"}
// CHECK:       tile.copy %[[L1B]], %{{.*}} {shape = array<i64: 3, [[LEN:[0-9]+]]>, dst_strides = array<i64: [[LEN]], 1>, src_strides = array<i64: 1024, 1>} : !tile.ref<l1, f16>, !tile.ref<gm, f16>
// CHECK:       tile.load_fractal %{{.*}}, %[[L1B]] {count = {{[0-9]+}} : i64, src_stride = 1 : i64}
// CHECK:       tile.matmul
tile.program "p" {
  tile.tensor {name = "a", kind = "input", offset = 0 : i64, type = tensor<32x48xf16>, layout = "ND"}
  tile.tensor {name = "w_nz", kind = "input", offset = 4096 : i64, type = tensor<3x64x16xf16>, layout = "FRACTAL_NZ"}
  tile.tensor {name = "y", kind = "output", offset = 16384 : i64, type = tensor<32x64xf32>, layout = "ND"}
  tile.kernel "packed" attributes {block_dim = 1 : i64} {
    %a = tile.load "a" : tensor<32x48xf16>
    %b = tile.load "w_nz" {layout = "FRACTAL_NZ"} : tensor<64x48xf16>
    %c = tile.batch_matmul %a, %b {transpose_b} : tensor<32x48xf16>, tensor<64x48xf16> -> tensor<32x64xf32>
    tile.store %c, "y" : tensor<32x64xf32>
  }
}

// -----

// A long K (2048): K goes to L1 in panels (at most 8, here 2 of 1024) and to
// L0 in chunks, both double-buffered, so the next panel's copies and the
// next chunk's load_fractal overlap this chunk's mmad: panel p uses L1
// buffers p % 2 and L0 buffers p % 2, the mmads accumulate into one L0C.
// A's rows are staged through UB (one GM -> UB copy of 16 rows x 1024,
// then UB -> L1 into fractals); the packed weight panel is one GM copy.
// CHECK-LABEL: tile.kernel "panels"
// CHECK:       %[[A0:.*]] = tile.alloc {shape = array<i64: 16384>{{.*}}!tile.ref<l1, f16>
// CHECK-NEXT:  %[[A1:.*]] = tile.alloc {shape = array<i64: 16384>{{.*}}!tile.ref<l1, f16>
// CHECK-NEXT:  %[[B0:.*]] = tile.alloc {shape = array<i64: 16384>{{.*}}!tile.ref<l1, f16>
// CHECK-NEXT:  %[[B1:.*]] = tile.alloc {shape = array<i64: 16384>{{.*}}!tile.ref<l1, f16>
// CHECK-NEXT:  %[[LA0:.*]] = tile.alloc {shape = array<i64: 16384>{{.*}}!tile.ref<l0a, f16>
// CHECK-NEXT:  %[[LA1:.*]] = tile.alloc {shape = array<i64: 16384>{{.*}}!tile.ref<l0a, f16>
// CHECK-NEXT:  %[[LB0:.*]] = tile.alloc {shape = array<i64: 16384>{{.*}}!tile.ref<l0b, f16>
// CHECK-NEXT:  %[[LB1:.*]] = tile.alloc {shape = array<i64: 16384>{{.*}}!tile.ref<l0b, f16>
// CHECK-NEXT:  %[[C:.*]] = tile.alloc {shape = array<i64: 256>{{.*}}!tile.ref<l0c, f32>
// CHECK-NEXT:  %[[STAGE:.*]] = tile.alloc {shape = array<i64: 16384>{{.*}}!tile.ref<ub, f16>
// CHECK:       tile.copy %[[STAGE]], %{{.*}} {shape = array<i64: 16, 1024>, dst_strides = array<i64: 1024, 1>, src_strides = array<i64: 2048, 1>} : !tile.ref<ub, f16>, !tile.ref<gm, f16>
// CHECK-NEXT:  tile.copy %[[A0]], %[[STAGE]] {{.*}} : !tile.ref<l1, f16>, !tile.ref<ub, f16>
// CHECK:       tile.copy %[[B0]], %{{.*}} : !tile.ref<l1, f16>, !tile.ref<gm, f16>
// CHECK-NEXT:  tile.load_fractal %[[LA0]], %[[A0]]
// CHECK-NEXT:  tile.load_fractal %[[LB0]], %[[B0]]
// CHECK-NEXT:  tile.matmul %[[C]], %[[LA0]], %[[LB0]] {m = 16 : i64, n = 16 : i64, k = 1024 : i64}
// CHECK:       tile.copy %[[A1]], %[[STAGE]]
// CHECK:       tile.copy %[[B1]], %{{.*}} : !tile.ref<l1, f16>, !tile.ref<gm, f16>
// CHECK-NEXT:  tile.load_fractal %[[LA1]], %[[A1]]
// CHECK-NEXT:  tile.load_fractal %[[LB1]], %[[B1]]
// CHECK-NEXT:  tile.matmul %[[C]], %[[LA1]], %[[LB1]] {m = 16 : i64, n = 16 : i64, k = 1024 : i64, accumulate}
tile.program "p" {
  tile.tensor {name = "a", kind = "input", offset = 0 : i64, type = tensor<32x2048xf16>, layout = "ND"}
  tile.tensor {name = "w_nz", kind = "input", offset = 131072 : i64, type = tensor<128x32x16xf16>, layout = "FRACTAL_NZ"}
  tile.tensor {name = "y", kind = "output", offset = 262144 : i64, type = tensor<32x32xf32>, layout = "ND"}
  tile.kernel "panels" attributes {block_dim = 1 : i64} {
    %a = tile.load "a" : tensor<32x2048xf16>
    %b = tile.load "w_nz" {layout = "FRACTAL_NZ"} : tensor<32x2048xf16>
    %c = tile.batch_matmul %a, %b {transpose_b} : tensor<32x2048xf16>, tensor<32x2048xf16> -> tensor<32x32xf32>
    tile.store %c, "y" : tensor<32x32xf32>
  }
}
