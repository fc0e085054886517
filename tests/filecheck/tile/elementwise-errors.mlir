// An elementwise kernel's errors: one line naming the kernel and what to do.
// RUN: not ge-opt %s --split-input-file -p tile-select-tiling 2>&1 | filecheck %s --check-prefix=SELECT
// RUN: not ge-opt %s --split-input-file -p tile-expand-structured 2>&1 | filecheck %s --check-prefix=EXPAND
// RUN: not ge-opt %s --split-input-file -p convert-tile-to-npu 2>&1 | filecheck %s --check-prefix=NPU
// RUN: not ge-opt %s --split-input-file 2>&1 | filecheck %s --check-prefix=VERIFY

// One row of 16,384 fp32 pixels of a C1 slice (512 KiB, twice for the
// input and twice for the output) is more than UB: no band fits. Untiled,
// the expansion and the conversion to npu name the pass to run first.
// SELECT: error: tile.kernel k (graph.relu at loc("wide")): a band of one row needs 2097152 bytes of UB, the target has 262144
// EXPAND: error: tile.kernel k: no #tile.elementwise_tiling (run tile-select-tiling first)
// NPU: error: tile.kernel @k: tile.elementwise is not expanded (run tile-select-tiling, tile-distribute and tile-expand-structured first)
tile.program "wide" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<1x1x1x16384x8xf32>, layout = "NC1HWC0"}
  tile.tensor {name = "y", kind = "output", offset = 524288 : i64, type = tensor<1x1x1x16384x8xf32>, layout = "NC1HWC0"}
  tile.kernel "k" attributes {kind = "elementwise", source = "graph.relu at loc(\22wide\22)", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
    tile.elementwise ins(%x : !tile.ref<gm, f32>) outs(%y : !tile.ref<gm, f32>) attributes {
        input_views = [#tile.map_view<shape = [1, 8, 1, 16384], origin = 0, slice_stride = 131072, padded_w = 16384>],
        output_views = [#tile.map_view<shape = [1, 8, 1, 16384], origin = 0, slice_stride = 131072, padded_w = 16384>]} {
    ^bb0(%a : f32):
      %zero = arith.constant 0.000000e+00 : f32
      %r = arith.maximumf %a, %zero : f32
      tile.yield %r : f32
    }
  }
}

// -----

// VERIFY: error: tile.elementwise: an input is a map of [1, 8, 4, 4] or per-channel [1, 8, 1, 1], not [1, 8, 4, 1]
tile.program "row_broadcast" {
  tile.kernel "k" attributes {kind = "elementwise", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
    tile.elementwise ins(%x : !tile.ref<gm, f32>) outs(%y : !tile.ref<gm, f32>) attributes {
        input_views = [#tile.map_view<shape = [1, 8, 4, 1], origin = 0, slice_stride = 32, padded_w = 1>],
        output_views = [#tile.map_view<shape = [1, 8, 4, 4], origin = 0, slice_stride = 128, padded_w = 4>]} {
    ^bb0(%a : f32):
      tile.yield %a : f32
    }
  }
}

// -----

// VERIFY: error: tile.elementwise: the body ends with tile.yield of one element per output
tile.program "yield_count" {
  tile.kernel "k" attributes {kind = "elementwise", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
    tile.elementwise ins(%x : !tile.ref<gm, f32>) outs(%y : !tile.ref<gm, f32>) attributes {
        input_views = [#tile.map_view<shape = [1, 8, 4, 4], origin = 0, slice_stride = 128, padded_w = 4>],
        output_views = [#tile.map_view<shape = [1, 8, 4, 4], origin = 0, slice_stride = 128, padded_w = 4>]} {
    ^bb0(%a : f32):
      tile.yield %a, %a : f32, f32
    }
  }
}

// -----

// VERIFY: error: tile.elementwise: the outputs are maps of one shape [1, C, H, W]
tile.program "batch" {
  tile.kernel "k" attributes {kind = "elementwise", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
    tile.elementwise ins(%x : !tile.ref<gm, f32>) outs(%y : !tile.ref<gm, f32>) attributes {
        input_views = [#tile.map_view<shape = [2, 8, 4, 4], origin = 0, slice_stride = 128, padded_w = 4>],
        output_views = [#tile.map_view<shape = [2, 8, 4, 4], origin = 0, slice_stride = 128, padded_w = 4>]} {
    ^bb0(%a : f32):
      tile.yield %a : f32
    }
  }
}
