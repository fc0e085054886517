// A conv kernel's errors: one line naming the kernel and what to do.
// RUN: not ge-opt %s --split-input-file -p tile-expand-structured 2>&1 | filecheck %s --check-prefix=EXPAND
// RUN: not ge-opt %s --split-input-file -p tile-distribute 2>&1 | filecheck %s --check-prefix=DIST
// RUN: not ge-opt %s --split-input-file -p convert-tile-to-npu 2>&1 | filecheck %s --check-prefix=NPU
// RUN: not ge-opt %s --split-input-file -p tile-select-tiling 2>&1 | filecheck %s --check-prefix=SELECT
// RUN: not ge-opt %s --split-input-file 2>&1 | filecheck %s --check-prefix=VERIFY

// Untiled: the passes that read the tiling name the pass to run first.
// EXPAND: error: tile.kernel k: no #tile.conv_tiling (run tile-select-tiling first)
// DIST: error: tile.kernel k: no #tile.conv_tiling (run tile-select-tiling first)
// NPU: error: tile.kernel @k: tile.conv is not expanded (run tile-select-tiling, tile-distribute and tile-expand-structured first)
tile.program "untiled" {
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
    } {
    }
  }
}

// -----

// A kernel row of 80 taps (fp32: 80 fractals of weights per output block)
// is more than half of L0B: no tiling can double-buffer it.
// SELECT: error: tile.kernel k (graph.conv at loc("wide")): one kernel row of 80 taps does not fit L0A/L0B
tile.program "wide" {
  tile.tensor {name = "w", kind = "internal", offset = 0 : i64, type = tensor<1x1x80x1x16x8xf32>, layout = "ND"}
  tile.tensor {name = "x", kind = "input", offset = 65536 : i64, type = tensor<1x1x1x96x8xf32>, layout = "NC1HWC0"}
  tile.tensor {name = "y", kind = "output", offset = 131072 : i64, type = tensor<1x2x1x17x8xf32>, layout = "NC1HWC0"}
  tile.kernel "k" attributes {kind = "conv", source = "graph.conv at loc(\22wide\22)", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %w = tile.gm {tensor = "w"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
    tile.conv ins(%x : !tile.ref<gm, f32>) weights(%w : !tile.ref<gm, f32>) outs(%y : !tile.ref<gm, f32>) attributes {
        input_views = [#tile.map_view<shape = [1, 8, 1, 96], origin = 0, slice_stride = 768, padded_w = 96>],
        output_view = #tile.map_view<shape = [1, 16, 1, 17], origin = 0, slice_stride = 136, padded_w = 17>,
        kernel_size = array<i64: 1, 80>, stride = 1 : i64, dilation = 1 : i64, pads = array<i64: 0, 0, 0, 0>,
        in_slices = 1 : i64, out_fractals = 1 : i64, superblocks = 1 : i64, block_in_channels = 8 : i64} {
    } {
    }
  }
}

// -----

// The verifiers: a residual needs its view; a chunk is whole fractals of rows.
// VERIFY: error: tile.conv: a residual comes with its residual_view
tile.program "residual_without_view" {
  tile.kernel "k" attributes {kind = "conv", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %w = tile.gm {tensor = "w"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
    tile.conv ins(%x : !tile.ref<gm, f32>) weights(%w : !tile.ref<gm, f32>) residual(%x : !tile.ref<gm, f32>) outs(%y : !tile.ref<gm, f32>) attributes {
        input_views = [#tile.map_view<shape = [1, 16, 4, 16], origin = 0, slice_stride = 512, padded_w = 16>],
        output_view = #tile.map_view<shape = [1, 16, 4, 16], origin = 0, slice_stride = 512, padded_w = 16>,
        kernel_size = array<i64: 3, 3>, stride = 1 : i64, dilation = 1 : i64, pads = array<i64: 1, 1, 1, 1>,
        in_slices = 2 : i64, out_fractals = 1 : i64, superblocks = 1 : i64, block_in_channels = 16 : i64} {
    } {
    }
  }
}

// -----

// VERIFY: error: #tile.conv_tiling: sizes are positive and chunk_m whole fractals (16 rows)
tile.program "ragged_chunk" {
  tile.kernel "k" attributes {kind = "conv", block_dim = 1 : i64, tiling = #tile.conv_tiling<band_rows = 2, tile_fractals = 1, chunk_rows = 2, chunk_m = 20, chunks_per_row = 1, k_rows = 3, cores = [2, 1], per_core = [1, 1], stationary = weights, steps = [1, 1], slices_per_mmad = 0, panels = 1, stage_slices = 1, cycles = 0>} {
  }
}

// -----

// A view's offset is its #tile.map_view's origin, not a tile.at.
// VERIFY: error: tile.conv: its operands are tile.gm references (a view's offset is its origin)
tile.program "offset_operand" {
  tile.kernel "k" attributes {kind = "conv", block_dim = 1 : i64} {
    %g = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %x = tile.at %g {offset = 64 : i64} : !tile.ref<gm, f32> -> !tile.ref<gm, f32>
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

// -----

// A stage's per-channel operands: each has a [1, C, 1, 1] view, and the
// stage body reads the input element and one element of each.
// VERIFY: error: tile.conv: a stage_ins view is a per-channel [1, C, 1, 1] #tile.map_view
tile.program "stage_operand_not_per_channel" {
  tile.kernel "k" attributes {kind = "conv", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %w = tile.gm {tensor = "w"} : !tile.ref<gm, f32>
    %s = tile.gm {tensor = "s"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
    tile.conv ins(%x : !tile.ref<gm, f32>) weights(%w : !tile.ref<gm, f32>) stage_ins(%s : !tile.ref<gm, f32>) outs(%y : !tile.ref<gm, f32>) attributes {
        input_views = [#tile.map_view<shape = [1, 16, 4, 16], origin = 0, slice_stride = 512, padded_w = 16>],
        output_view = #tile.map_view<shape = [1, 16, 4, 16], origin = 0, slice_stride = 512, padded_w = 16>,
        kernel_size = array<i64: 3, 3>, stride = 1 : i64, dilation = 1 : i64, pads = array<i64: 1, 1, 1, 1>,
        in_slices = 2 : i64, out_fractals = 1 : i64, superblocks = 1 : i64, block_in_channels = 16 : i64,
        stage_views = [#tile.map_view<shape = [1, 16, 4, 16], origin = 0, slice_stride = 512, padded_w = 16>]} {
    } {
    ^bb0(%a: f32, %b: f32):
      %c = arith.mulf %a, %b : f32
      tile.yield %c : f32
    }
  }
}

// -----

// VERIFY: error: tile.conv: the stage is one map body of the input and one argument per stage_ins
tile.program "stage_without_its_operand" {
  tile.kernel "k" attributes {kind = "conv", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %w = tile.gm {tensor = "w"} : !tile.ref<gm, f32>
    %s = tile.gm {tensor = "s"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
    tile.conv ins(%x : !tile.ref<gm, f32>) weights(%w : !tile.ref<gm, f32>) stage_ins(%s : !tile.ref<gm, f32>) outs(%y : !tile.ref<gm, f32>) attributes {
        input_views = [#tile.map_view<shape = [1, 16, 4, 16], origin = 0, slice_stride = 512, padded_w = 16>],
        output_view = #tile.map_view<shape = [1, 16, 4, 16], origin = 0, slice_stride = 512, padded_w = 16>,
        kernel_size = array<i64: 3, 3>, stride = 1 : i64, dilation = 1 : i64, pads = array<i64: 1, 1, 1, 1>,
        in_slices = 2 : i64, out_fractals = 1 : i64, superblocks = 1 : i64, block_in_channels = 16 : i64,
        stage_views = [#tile.map_view<shape = [1, 16, 1, 1], origin = 0, slice_stride = 8, padded_w = 1>]} {
    } {
    ^bb0(%a: f32):
      tile.yield %a : f32
    }
  }
}
