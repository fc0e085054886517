// A transdata's errors: one line naming the kernel (or op) and what to do.
// RUN: not ge-opt %s --split-input-file -p tile-expand-structured 2>&1 | filecheck %s --check-prefix=EXPAND
// RUN: not ge-opt %s --split-input-file -p convert-tile-to-npu 2>&1 | filecheck %s --check-prefix=NPU
// RUN: not ge-opt %s --split-input-file 2>&1 | filecheck %s --check-prefix=VERIFY

// Untiled, the expansion and the conversion to npu name the passes to run first.
// EXPAND: error: tile.kernel k: no #tile.transdata_tiling (run tile-select-tiling first)
// NPU: error: tile.kernel @k: tile.transdata is not expanded (run tile-select-tiling, tile-distribute and tile-expand-structured first)
tile.program "untiled" {
  tile.tensor {name = "image", kind = "input", offset = 0 : i64, type = tensor<1x3x4x4xf32>, layout = "ND"}
  tile.tensor {name = "map", kind = "internal", offset = 256 : i64, type = tensor<1x1x4x4x8xf32>, layout = "NC1HWC0"}
  tile.kernel "k" attributes {kind = "transdata", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "image"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "map"} : !tile.ref<gm, f32>
    tile.transdata "NCHW" to "NC1HWC0" %x, %y : !tile.ref<gm, f32>, !tile.ref<gm, f32> {map_view = #tile.map_view<shape = [1, 3, 4, 4], origin = 0, slice_stride = 128, padded_w = 4>}
  }
}

// -----

// VERIFY: error: tile.transdata: ND to NCHW is not a transdata (one of NCHW to NC1HWC0, NC1HWC0 to ND, NHWC to NC1HWC0, NC1HWC0 to NHWC)
tile.program "direction" {
  tile.kernel "k" attributes {kind = "transdata", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
    tile.transdata "ND" to "NCHW" %x, %y : !tile.ref<gm, f32>, !tile.ref<gm, f32> {map_view = #tile.map_view<shape = [1, 3, 4, 4], origin = 0, slice_stride = 128, padded_w = 4>}
  }
}

// -----

// VERIFY: error: tile.transdata: NC1HWC0 to ND reads a map without a halo (strip it first)
tile.program "halo_out" {
  tile.kernel "k" attributes {kind = "transdata", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
    tile.transdata "NC1HWC0" to "ND" %x, %y : !tile.ref<gm, f32>, !tile.ref<gm, f32> {map_view = #tile.map_view<shape = [1, 3, 4, 4], origin = 56, slice_stride = 288, padded_w = 6>}
  }
}

// -----

// VERIFY: error: tile.transdata: only NC1HWC0 to ND undoes a scale
tile.program "scale_in" {
  tile.kernel "k" attributes {kind = "transdata", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f16>
    tile.transdata "NCHW" to "NC1HWC0" %x, %y : !tile.ref<gm, f32>, !tile.ref<gm, f16> {map_view = #tile.map_view<shape = [1, 3, 4, 4], origin = 0, slice_stride = 256, padded_w = 4>, scale = 2.0 : f64}
  }
}

// -----

// VERIFY: error: tile.transdata: a space-to-depth map has a multiple of 4 channels
tile.program "cells" {
  tile.kernel "k" attributes {kind = "transdata", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f16>
    tile.transdata "NCHW" to "NC1HWC0" %x, %y : !tile.ref<gm, f32>, !tile.ref<gm, f16> {map_view = #tile.map_view<shape = [1, 6, 4, 4], origin = 0, slice_stride = 256, padded_w = 4>, block_size = 2 : i64, mode = "DCR"}
  }
}

// -----

// VERIFY: error: tile.transdata: the map is one image (map-unbatch slices batches)
tile.program "batch" {
  tile.kernel "k" attributes {kind = "transdata", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f16>
    tile.transdata "NCHW" to "NC1HWC0" %x, %y : !tile.ref<gm, f32>, !tile.ref<gm, f16> {map_view = #tile.map_view<shape = [2, 3, 4, 4], origin = 0, slice_stride = 256, padded_w = 4>}
  }
}

// -----

// VERIFY: error: tile.transdata: NHWC rows and their map have one element type (copies convert none)
tile.program "rows_cast" {
  tile.kernel "k" attributes {kind = "transpose", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f16>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
    tile.transdata "NC1HWC0" to "NHWC" %x, %y : !tile.ref<gm, f16>, !tile.ref<gm, f32> {map_view = #tile.map_view<shape = [1, 24, 4, 4], origin = 0, slice_stride = 256, padded_w = 4>}
  }
}

// -----

// VERIFY: error: tile.transdata: only NCHW to NC1HWC0 is a space-to-depth (block_size)
tile.program "rows_cells" {
  tile.kernel "k" attributes {kind = "transpose", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f16>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f16>
    tile.transdata "NHWC" to "NC1HWC0" %x, %y : !tile.ref<gm, f16>, !tile.ref<gm, f16> {map_view = #tile.map_view<shape = [1, 24, 4, 4], origin = 0, slice_stride = 256, padded_w = 4>, block_size = 2 : i64, mode = "DCR"}
  }
}

// -----

// VERIFY: error: tile.transdata: a row_pitch is NHWC rows' and at least the map's channel count
tile.program "pitch" {
  tile.kernel "k" attributes {kind = "concat_gather", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f16>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f16>
    tile.transdata "NC1HWC0" to "NHWC" %x, %y : !tile.ref<gm, f16>, !tile.ref<gm, f16> {map_view = #tile.map_view<shape = [1, 24, 4, 4], origin = 0, slice_stride = 256, padded_w = 4>, row_pitch = 16 : i64}
  }
}
