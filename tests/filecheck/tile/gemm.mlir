// The CNN gemm at the tile level: convert-graph-to-tile packs the constant
// right operand ([K1][N1][16][k0]) and writes a tile.gemm; tile-select-tiling
// chooses its #tile.gemm_tiling (output fractals per tile, the K step: GM
// traffic over the cores plus a fixed cost per step, L0A/L0B halves bound
// the step), tile-distribute makes its cores the block_dim,
// tile-expand-structured writes the loops.
// RUN: ge-opt %s --split-input-file | ge-opt --split-input-file | filecheck %s --check-prefix=ROUND
// RUN: ge-opt %s --split-input-file -p tile-select-tiling,tile-distribute | filecheck %s --check-prefix=SELECT
// RUN: ge-opt %s --split-input-file -p tile-select-tiling,tile-distribute,tile-expand-structured | filecheck %s --check-prefix=EXPAND
// RUN: not ge-opt %s --split-input-file -p tile-expand-structured 2>&1 | filecheck %s --check-prefix=UNTILED

// A classifier row (fp16, K = 1024: 64 fractals of K) times a 1024 x 128
// matrix (8 output fractals), + bias, relu.
// ROUND-LABEL: tile.program "fc"
// ROUND:       tile.gemm %{{.*}}, %{{.*}}, %{{.*}} bias(%{{.*}} : !tile.ref<gm, f32>) : !tile.ref<gm, f16>, !tile.ref<gm, f16>, !tile.ref<gm, f16> attributes {m = 1 : i64, n = 128 : i64, k_fractals = 64 : i64, n_fractals = 8 : i64, a_origin = 0 : i64} {
// ROUND:         arith.maximumf
// One output fractal per tile on 8 cores, K in one step of 64 fractals
// (L0B's half holds 64 x 512 B).
// SELECT-LABEL: tile.program "fc"
// SELECT:       tile.kernel "k" attributes {kind = "gemm", tiling = #tile.gemm_tiling<tile_fractals = 1, k_fractals = 64, cores = 8, cycles = {{[0-9]+}}>, block_dim = 8 : i64}
// UNTILED:      error: tile.kernel k: no #tile.gemm_tiling (run tile-select-tiling first)
// Each core: A's 64 K fractals and its block's weights GM -> L1 -> L0A/L0B,
// one mmad of k = 1024; L0C -> UB cast to fp16, + its 16 biases, relu, the
// 16 results to GM.
// EXPAND-LABEL: tile.program "fc"
// EXPAND-DAG:     %[[L0A:.*]] = tile.alloc {shape = array<i64: 16384>, layout = "ZZ", buffers = 2 : i64} : !tile.ref<l0a, f16>
// EXPAND-DAG:     %[[L0B:.*]] = tile.alloc {shape = array<i64: 16384>, layout = "ZN", buffers = 2 : i64} : !tile.ref<l0b, f16>
// EXPAND-DAG:     %[[L0C:.*]] = tile.alloc {shape = array<i64: 256>, layout = "NZ", buffers = 1 : i64} : !tile.ref<l0c, f32>
// EXPAND:         tile.block_idx
// EXPAND:         scf.for
// EXPAND:           tile.copy %{{.*}}, %{{.*}} {shape = array<i64: 64, 16>, dst_strides = array<i64: 256, 1>, src_strides = array<i64: 16, 1>}
// EXPAND:           tile.copy %{{.*}}, %{{.*}} {shape = array<i64: 64, 256>, dst_strides = array<i64: 256, 1>, src_strides = array<i64: 2048, 1>}
// EXPAND:           tile.matmul %[[L0C]], %[[L0A]], %[[L0B]] {m = 16 : i64, n = 16 : i64, k = 1024 : i64}
// EXPAND:           tile.copy %[[UB:.*]], %[[L0C]] {shape = array<i64: 256>, {{.*}}, cast}
// EXPAND:           tile.vec "add" %[[UB]], %[[UB]], %{{.*}} {shape = array<i64: 1, 16>
// EXPAND:           tile.vec "relu" %[[UB]], %[[UB]]
// EXPAND:           tile.copy %{{.*}}, %[[UB]] {shape = array<i64: 1, 16>, dst_strides = array<i64: 16, 1>, src_strides = array<i64: 256, 1>}
// EXPAND-NOT:     tile.gemm
tile.program "fc" {
  tile.tensor {name = "w", kind = "internal", offset = 0 : i64, type = tensor<64x8x16x16xf16>, layout = "ND"}
  tile.tensor {name = "b", kind = "internal", offset = 262144 : i64, type = tensor<128xf32>, layout = "ND"}
  tile.tensor {name = "x", kind = "input", offset = 263168 : i64, type = tensor<1x1024xf16>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 266240 : i64, type = tensor<1x128xf16>, layout = "ND"}
  tile.kernel "k" attributes {kind = "gemm", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f16>
    %w = tile.gm {tensor = "w"} : !tile.ref<gm, f16>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f16>
    %b = tile.gm {tensor = "b"} : !tile.ref<gm, f32>
    tile.gemm %x, %w, %y bias(%b : !tile.ref<gm, f32>) : !tile.ref<gm, f16>, !tile.ref<gm, f16>, !tile.ref<gm, f16> attributes {
        m = 1 : i64, n = 128 : i64, k_fractals = 64 : i64, n_fractals = 8 : i64, a_origin = 0 : i64} {
    ^bb0(%v : f16):
      %zero = arith.constant 0.000000e+00 : f16
      %r = arith.maximumf %v, %zero : f16
      tile.yield %r : f16
    }
  }
}
