// A pool kernel's errors: one line naming the kernel and what to do.
// RUN: not ge-opt %s --split-input-file -p tile-select-tiling 2>&1 | filecheck %s --check-prefix=SELECT
// RUN: not ge-opt %s --split-input-file -p tile-expand-structured 2>&1 | filecheck %s --check-prefix=EXPAND
// RUN: not ge-opt %s --split-input-file 2>&1 | filecheck %s --check-prefix=VERIFY

// One output row's window (3 rows of 8,192 fp32 pixels of a C1 slice,
// 768 KiB) is more than UB: no band fits. Untiled, the expansion names the
// pass to run first.
// SELECT: error: tile.kernel k (graph.max_pool at loc("wide")): a pooling row does not fit UB
// EXPAND: error: tile.kernel k: no #tile.pool_tiling (run tile-select-tiling first)
tile.program "wide" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<1x1x3x8192x8xf32>, layout = "NC1HWC0"}
  tile.tensor {name = "y", kind = "output", offset = 1048576 : i64, type = tensor<1x1x1x8190x8xf32>, layout = "NC1HWC0"}
  tile.kernel "k" attributes {kind = "max_pool", source = "graph.max_pool at loc(\22wide\22)", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
    tile.pool "max" %x, %y : !tile.ref<gm, f32>, !tile.ref<gm, f32> {
        input_view = #tile.map_view<shape = [1, 8, 3, 8192], origin = 0, slice_stride = 196608, padded_w = 8192>,
        output_view = #tile.map_view<shape = [1, 8, 1, 8190], origin = 0, slice_stride = 65520, padded_w = 8190>,
        kernel_size = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>}
  }
}

// -----

// VERIFY: error: tile.pool: only an average pool divides by counts
tile.program "max_with_counts" {
  tile.kernel "k" attributes {kind = "max_pool", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
    %c = tile.gm {tensor = "c"} : !tile.ref<gm, f32>
    tile.pool "max" %x, %y counts(%c : !tile.ref<gm, f32>) : !tile.ref<gm, f32>, !tile.ref<gm, f32> {
        input_view = #tile.map_view<shape = [1, 8, 8, 8], origin = 0, slice_stride = 512, padded_w = 8>,
        output_view = #tile.map_view<shape = [1, 8, 4, 4], origin = 0, slice_stride = 128, padded_w = 4>,
        kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>}
  }
}

// -----

// VERIFY: error: tile.pool: a global_avg pool's window is its whole, unpadded map
tile.program "global_window" {
  tile.kernel "k" attributes {kind = "global_avg_pool", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
    tile.pool "global_avg" %x, %y : !tile.ref<gm, f32>, !tile.ref<gm, f32> {
        input_view = #tile.map_view<shape = [1, 8, 8, 8], origin = 0, slice_stride = 512, padded_w = 8>,
        output_view = #tile.map_view<shape = [1, 8, 1, 1], origin = 0, slice_stride = 8, padded_w = 1>,
        kernel_size = array<i64: 4, 4>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>}
  }
}

// -----

// 64 x 64 pixels do not fold in 8-bit vector repeats (the legality table
// sends such a pool to the AI CPU; written by hand, tiling says why).
// SELECT: error: tile.kernel k: a global pool over 4096 pixels (at most 2040 fold in vector repeats)
tile.program "global_large" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<1x1x64x64x8xf32>, layout = "NC1HWC0"}
  tile.tensor {name = "y", kind = "output", offset = 131072 : i64, type = tensor<1x1x1x1x8xf32>, layout = "NC1HWC0"}
  tile.kernel "k" attributes {kind = "global_avg_pool", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
    tile.pool "global_avg" %x, %y : !tile.ref<gm, f32>, !tile.ref<gm, f32> {
        input_view = #tile.map_view<shape = [1, 8, 64, 64], origin = 0, slice_stride = 32768, padded_w = 64>,
        output_view = #tile.map_view<shape = [1, 8, 1, 1], origin = 0, slice_stride = 8, padded_w = 1>,
        kernel_size = array<i64: 64, 64>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>}
  }
}
