// A conv kernel at the tile level: convert-graph-to-tile writes a tile.conv
// (maps seen through #tile.map_view, FRACTAL_Z weights, a map body as its
// epilogue); tile-select-tiling chooses its #tile.conv_tiling by the conv
// cost model on the target's capacities and formulas, tile-distribute makes
// the tiling's core grid the kernel's block_dim, and tile-expand-structured
// writes its loops.
// RUN: ge-opt %s --split-input-file | ge-opt --split-input-file | filecheck %s --check-prefix=ROUND
// RUN: ge-opt %s --split-input-file -p tile-select-tiling | filecheck %s --check-prefix=SELECT
// RUN: ge-opt %s --split-input-file -p 'tile-select-tiling{target=davinci-910b}' | filecheck %s --check-prefix=SELECTB
// RUN: ge-opt %s --split-input-file -p tile-select-tiling,tile-distribute | filecheck %s --check-prefix=DIST
// RUN: ge-opt %s --split-input-file -p tile-select-tiling,tile-distribute,tile-expand-structured | filecheck %s --check-prefix=EXPAND

// A 3x3 conv, pad 1, 16 -> 16 channels on a 4x16 fp32 map (C0 = 8: two C1
// slices), relu as its epilogue. Printed and parsed back unchanged.
// ROUND-LABEL: tile.program "conv3x3"
// ROUND:       tile.conv ins(%{{.*}} : !tile.ref<gm, f32>) weights(%{{.*}} : !tile.ref<gm, f32>) outs(%{{.*}} : !tile.ref<gm, f32>) attributes {input_views = [#tile.map_view<shape = [1, 16, 4, 16], origin = 0, slice_stride = 512, padded_w = 16>], output_view = #tile.map_view<shape = [1, 16, 4, 16], origin = 0, slice_stride = 512, padded_w = 16>, kernel_size = array<i64: 3, 3>
// ROUND:         arith.maximumf
//
// The cost model spreads the four output rows over four cores, one band of
// one row each (its im2col: 16 pixels x 9 taps of a C1 slice; its fp32
// store two DMAs, one per 8-channel slice, each paying the GM latency);
// davinci-910b (longer GM latency) predicts other cycles for the same tiling.
// SELECT-LABEL: tile.program "conv3x3"
// SELECT:       tile.kernel "k" attributes {kind = "conv", tiling = #tile.conv_tiling<band_rows = 1, tile_fractals = 1, chunk_rows = 1, chunk_m = 16, chunks_per_row = 1, k_rows = 3, cores = [4, 1], per_core = [1, 1], stationary = band, steps = [1, 1], slices_per_mmad = 0, panels = 1, stage_slices = 1, cycles = 980>, block_dim = 1 : i64}
// SELECTB-LABEL: tile.program "conv3x3"
// SELECTB:       tiling = #tile.conv_tiling<band_rows = 1, {{.*}}, cycles = {{[0-9]+}}>
// SELECTB-NOT:   cycles = 980
// DIST-LABEL:   tile.program "conv3x3"
// DIST:         cores = [4, 1]{{.*}}block_dim = 4 : i64
//
// Each core's band: its 3 window rows of both C1 slices into L1 (5 rows a
// slice: a row before and after for the edge bands, whose pad row is zeroed
// there from a row of zeros in UB), then the weights; C1 slice 0 starts the
// accumulation, slice 1 (the ping-pong loop, starting on the second L0A/L0B
// copies: "pong-ping") adds to it; then L0C -> UB,
// relu, UB -> GM.
// EXPAND-LABEL: tile.program "conv3x3"
// EXPAND:       tile.kernel "k" attributes {kind = "conv", tiling = #tile.conv_tiling<{{.*}}>, block_dim = 4 : i64}
// EXPAND-DAG:     %[[BAND:.*]] = tile.alloc {shape = array<i64: 1280>, layout = "NC1HWC0", buffers = 1 : i64} : !tile.ref<l1, f32>
// EXPAND-DAG:     %[[W:.*]] = tile.alloc {shape = array<i64: 2304>, layout = "FRACTAL_Z", buffers = 1 : i64} : !tile.ref<l1, f32>
// EXPAND-DAG:     %[[L0A:.*]] = tile.alloc {shape = array<i64: 1152>, layout = "ZZ", buffers = 2 : i64} : !tile.ref<l0a, f32>
// EXPAND-DAG:     %[[L0B:.*]] = tile.alloc {shape = array<i64: 1152>, layout = "ZN", buffers = 2 : i64} : !tile.ref<l0b, f32>
// EXPAND-DAG:     %[[L0C:.*]] = tile.alloc {shape = array<i64: 256>, layout = "NZ", buffers = 1 : i64} : !tile.ref<l0c, f32>
// EXPAND-DAG:     %[[UB:.*]] = tile.alloc {shape = array<i64: 256>, layout = "NZ", buffers = 1 : i64} : !tile.ref<ub, f32>
// EXPAND:         %[[X:.*]] = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
// EXPAND:         %[[Y:.*]] = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
// EXPAND:         tile.dup %[[ZEROS:.*]] {count = 128 : i64, value = 0.000000e+00 : f64}
// EXPAND:         tile.block_idx
// EXPAND:         tile.copy %{{.*}}, %{{.*}} {shape = array<i64: 2, 3, 128>, dst_strides = array<i64: 640, 128, 1>, src_strides = array<i64: 512, 128, 1>} : !tile.ref<l1, f32>, !tile.ref<gm, f32>
// EXPAND:         scf.for
// EXPAND-NEXT:      arith.muli
// EXPAND-NEXT:      tile.at %[[BAND]]
// EXPAND-NEXT:      tile.copy %{{.*}}, %[[ZEROS]] {shape = array<i64: 2, 128>
// EXPAND:         tile.copy %[[W]], %{{.*}} {shape = array<i64: 18, 128>
// EXPAND:         tile.im2col %[[L0A]], %{{.*}} {params = array<i64: 3, 16, 3, 3, 1, 1, 0, 0, 1, 1, 1, 1, 0, 16>}
// EXPAND-NEXT:    tile.load_fractal %[[L0B]], %[[W]] {count = 9 : i64, src_stride = 1 : i64}
// EXPAND-NEXT:    tile.matmul %[[L0C]], %[[L0A]], %[[L0B]] {m = 16 : i64, n = 16 : i64, k = 72 : i64}
// EXPAND:           tile.matmul %[[L0C]], %[[L0A]], %[[L0B]] {m = 16 : i64, n = 16 : i64, k = 72 : i64, accumulate}
// EXPAND-NEXT:    } {tile.pipeline = "pong-ping"}
// EXPAND-NEXT:    tile.copy %[[UB]], %[[L0C]] {shape = array<i64: 256>
// EXPAND-NEXT:    tile.vec "relu" %[[UB]], %[[UB]]
// EXPAND:         tile.copy %{{.*}}, %[[UB]] {shape = array<i64: 1, 2, 1, 16, 8>, dst_strides = array<i64: 1024, 512, 128, 8, 1>, src_strides = array<i64: 256, 8, 256, 16, 1>} : !tile.ref<gm, f32>, !tile.ref<ub, f32>
// EXPAND-NOT:     tile.conv
tile.program "conv3x3" {
  tile.tensor {name = "w", kind = "internal", offset = 0 : i64, type = tensor<1x2x9x1x16x8xf32>, layout = "ND"}
  tile.tensor {name = "x", kind = "input", offset = 9280 : i64, type = tensor<1x2x4x16x8xf32>, layout = "NC1HWC0"}
  tile.tensor {name = "y", kind = "output", offset = 13440 : i64, type = tensor<1x2x4x16x8xf32>, layout = "NC1HWC0"}
  tile.kernel "k" attributes {kind = "conv", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %w = tile.gm {tensor = "w"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
    tile.conv ins(%x : !tile.ref<gm, f32>) weights(%w : !tile.ref<gm, f32>) outs(%y : !tile.ref<gm, f32>) attributes {
        input_views = [#tile.map_view<shape = [1, 16, 4, 16], origin = 0, slice_stride = 512, padded_w = 16>],
        output_view = #tile.map_view<shape = [1, 16, 4, 16], origin = 0, slice_stride = 512, padded_w = 16>,
        kernel_size = array<i64: 3, 3>, stride = 1 : i64, dilation = 1 : i64, pads = array<i64: 1, 1, 1, 1>,
        in_slices = 2 : i64, out_fractals = 1 : i64, superblocks = 1 : i64, block_in_channels = 16 : i64} {
    ^bb0(%v : f32):
      %zero = arith.constant 0.000000e+00 : f32
      %r = arith.maximumf %v, %zero : f32
      tile.yield %r : f32
    } {
    }
  }
}

// -----

// ResNet-50's 1x1 stride-2 projection, 512 -> 1024 channels on 28x28 (fp32):
// the cost model reads every second row into the band (steps = [2, 1]; the
// im2col strides along the row), keeps a block of 128 output channels'
// weights in L1 on each core (cores = [4, 8], two bands of two rows each)
// and copies each band in 4 panels of 16 C1 slices (`panels`);
// tile-distribute makes the grid's 32 cores the block_dim.
// SELECT-LABEL: tile.program "projection"
// SELECT:       tiling = #tile.conv_tiling<band_rows = 2, tile_fractals = 8, {{.*}}, cores = [4, 8], per_core = [2, 1], stationary = weights, steps = [2, 1], slices_per_mmad = 0, panels = 4
// SELECT-SAME:  block_dim = 1 : i64
// DIST-LABEL:   tile.program "projection"
// DIST:         cores = [4, 8]{{.*}}block_dim = 32 : i64
// The weights go to L1 once, before the bands; each band's 64 slices of 2
// rows (every other row of the stored map) go in 4 copies of 16 slices,
// each bounded to its panel (`within`), and the band's products run panel by
// panel: the first slice, then a loop per panel, each bounded to the slices
// up to its panel's end (so npu-insert-sync lets it start once its own panel
// is in), the loops' copies alternating on from the first slice's.
// EXPAND-LABEL: tile.program "projection"
// EXPAND:         %[[BAND:.*]] = tile.alloc {shape = array<i64: 28672>, layout = "NC1HWC0", buffers = 1 : i64} : !tile.ref<l1, f32>
// EXPAND:         %[[W:.*]] = tile.alloc {shape = array<i64: 65536>, layout = "FRACTAL_Z", buffers = 1 : i64} : !tile.ref<l1, f32>
// EXPAND:         tile.block_idx
// EXPAND:         tile.copy %[[W]], %{{.*}} {shape = array<i64: 64, 1024>
// EXPAND:         scf.for
// EXPAND:           %[[P0:.*]] = tile.at %[[BAND]] + %{{.*}} {offset = 0 : i64, within = 7168 : i64}
// EXPAND:           tile.copy %[[P0]], %{{.*}} {shape = array<i64: 16, 2, 224>, dst_strides = array<i64: 448, 224, 1>, src_strides = array<i64: 6272, 448, 1>}
// EXPAND:           tile.at %[[BAND]] + %{{.*}} {offset = 7168 : i64, within = 7168 : i64}
// EXPAND:           tile.at %[[BAND]] + %{{.*}} {offset = 14336 : i64, within = 7168 : i64}
// EXPAND:           tile.at %[[BAND]] + %{{.*}} {offset = 21504 : i64, within = 7168 : i64}
// EXPAND:           tile.im2col %{{.*}}, %[[BAND]]
// EXPAND:           tile.matmul %{{.*}} {m = 32 : i64, n = 128 : i64, k = 8 : i64}
// EXPAND:           scf.for
// EXPAND:             tile.at %[[BAND]] + %{{.*}} {offset = 0 : i64, within = 7168 : i64}
// EXPAND:           } {tile.pipeline = "pong-ping"}
// EXPAND:           scf.for
// EXPAND:             tile.at %[[BAND]] + %{{.*}} {offset = 0 : i64, within = 14336 : i64}
// EXPAND:           } {tile.pipeline = "ping-pong"}
// EXPAND:           scf.for
// EXPAND:             tile.at %[[BAND]] + %{{.*}} {offset = 0 : i64, within = 21504 : i64}
// EXPAND:           scf.for
// EXPAND:             tile.at %[[BAND]] + %{{.*}} {offset = 0 : i64, within = 28672 : i64}
// EXPAND:           } {tile.pipeline = "ping-pong"}
// EXPAND-NEXT:      tile.copy %{{.*}}, %{{.*}} {shape = array<i64: 4096>
tile.program "projection" {
  tile.tensor {name = "w", kind = "internal", offset = 0 : i64, type = tensor<1x64x1x64x16x8xf32>, layout = "ND"}
  tile.tensor {name = "x", kind = "input", offset = 2097216 : i64, type = tensor<1x64x28x28x8xf32>, layout = "NC1HWC0"}
  tile.tensor {name = "y", kind = "output", offset = 3702912 : i64, type = tensor<1x128x14x14x8xf32>, layout = "NC1HWC0"}
  tile.kernel "k" attributes {kind = "conv", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %w = tile.gm {tensor = "w"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
    tile.conv ins(%x : !tile.ref<gm, f32>) weights(%w : !tile.ref<gm, f32>) outs(%y : !tile.ref<gm, f32>) attributes {
        input_views = [#tile.map_view<shape = [1, 512, 28, 28], origin = 0, slice_stride = 6272, padded_w = 28>],
        output_view = #tile.map_view<shape = [1, 1024, 14, 14], origin = 0, slice_stride = 1568, padded_w = 14>,
        kernel_size = array<i64: 1, 1>, stride = 2 : i64, dilation = 1 : i64, pads = array<i64: 0, 0, 0, 0>,
        in_slices = 64 : i64, out_fractals = 64 : i64, superblocks = 1 : i64, block_in_channels = 512 : i64} {
    } {
    }
  }
}

// -----

// A tiling written by hand is expanded as given: the same 3x3 conv in two
// bands of two rows on two cores, the weights stationary (with one band per
// core, copied right after it, both next to the products).
// tile-select-tiling keeps a kernel's tiling.
// SELECT-LABEL: tile.program "given"
// SELECT:       tiling = #tile.conv_tiling<band_rows = 2, tile_fractals = 1, chunk_rows = 2, chunk_m = 32, chunks_per_row = 1, k_rows = 3, cores = [2, 1], per_core = [1, 1], stationary = weights, steps = [1, 1], slices_per_mmad = 0, panels = 1, stage_slices = 1, cycles = 0>
// Each core's band is a window of 4 rows (two output rows of a 3x3 conv),
// 6 a slice in L1 with the edge bands' lead and trail rows.
// EXPAND-LABEL: tile.program "given"
// EXPAND:       tile.kernel "k" attributes {{{.*}}block_dim = 2 : i64}
// EXPAND:         %[[BAND:.*]] = tile.alloc {shape = array<i64: 1536>, layout = "NC1HWC0", buffers = 1 : i64} : !tile.ref<l1, f32>
// EXPAND:         %[[W:.*]] = tile.alloc {shape = array<i64: 2304>, layout = "FRACTAL_Z", buffers = 1 : i64} : !tile.ref<l1, f32>
// EXPAND:         tile.block_idx
// EXPAND:         tile.copy %{{.*}}, %{{.*}} {shape = array<i64: 2, 4, 128>, dst_strides = array<i64: 768, 128, 1>
// EXPAND:         tile.copy %[[W]], %{{.*}} {shape = array<i64: 18, 128>
// EXPAND:         tile.im2col {{.*}} {params = array<i64: 4, 16, 3, 3, 1, 1, 0, 0, 1, 1, 1, 1, 0, 32>}
// EXPAND:         tile.matmul {{.*}} {m = 32 : i64, n = 16 : i64, k = 72 : i64}
tile.program "given" {
  tile.tensor {name = "w", kind = "internal", offset = 0 : i64, type = tensor<1x2x9x1x16x8xf32>, layout = "ND"}
  tile.tensor {name = "x", kind = "input", offset = 9280 : i64, type = tensor<1x2x4x16x8xf32>, layout = "NC1HWC0"}
  tile.tensor {name = "y", kind = "output", offset = 13440 : i64, type = tensor<1x2x4x16x8xf32>, layout = "NC1HWC0"}
  tile.kernel "k" attributes {kind = "conv", block_dim = 1 : i64, tiling = #tile.conv_tiling<band_rows = 2, tile_fractals = 1, chunk_rows = 2, chunk_m = 32, chunks_per_row = 1, k_rows = 3, cores = [2, 1], per_core = [1, 1], stationary = weights, steps = [1, 1], slices_per_mmad = 0, panels = 1, stage_slices = 1, cycles = 0>} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %w = tile.gm {tensor = "w"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
    tile.conv ins(%x : !tile.ref<gm, f32>) weights(%w : !tile.ref<gm, f32>) outs(%y : !tile.ref<gm, f32>) attributes {
        input_views = [#tile.map_view<shape = [1, 16, 4, 16], origin = 0, slice_stride = 512, padded_w = 16>],
        output_view = #tile.map_view<shape = [1, 16, 4, 16], origin = 0, slice_stride = 512, padded_w = 16>,
        kernel_size = array<i64: 3, 3>, stride = 1 : i64, dilation = 1 : i64, pads = array<i64: 1, 1, 1, 1>,
        in_slices = 2 : i64, out_fractals = 1 : i64, superblocks = 1 : i64, block_in_channels = 16 : i64} {
    } {
    }
  }
}
