// A pool kernel at the tile level: convert-graph-to-tile writes a tile.pool
// (the maps through #tile.map_view, the padding the input's zero halo);
// tile-select-tiling chooses its #tile.pool_tiling (bands of output rows of
// a C1 slice that fit UB twice, the fastest by the target's formulas),
// tile-distribute makes its cores the block_dim, tile-expand-structured
// writes the loop.
// RUN: ge-opt %s --split-input-file | ge-opt --split-input-file | filecheck %s --check-prefix=ROUND
// RUN: ge-opt %s --split-input-file -p tile-select-tiling,tile-distribute | filecheck %s --check-prefix=SELECT
// RUN: ge-opt %s --split-input-file -p tile-select-tiling,tile-distribute,tile-expand-structured | filecheck %s --check-prefix=EXPAND

// A 3x3 max pool of stride 2, pad 1, over 64 channels of 56x56 (fp16: C0 =
// 16, four C1 slices; the input stored with a one-pixel zero halo, 58x58),
// of values that may be negative: the halo reads as fp16's lowest value.
// ROUND-LABEL: tile.program "stem_pool"
// ROUND:       tile.pool "max" %{{.*}}, %{{.*}} : !tile.ref<gm, f16>, !tile.ref<gm, f16> {input_view = #tile.map_view<shape = [1, 64, 56, 56], origin = 944, slice_stride = 53824, padded_w = 58>, {{.*}}lowest_halo}
// The cost model takes bands of 4 of the 28 output rows: 4 slices x 7 bands
// = 28 tiles, one per core.
// SELECT-LABEL: tile.program "stem_pool"
// SELECT:       tile.kernel "k" attributes {kind = "max_pool", tiling = #tile.pool_tiling<band_rows = 4, slices = 1, cores = 28, cycles = {{[0-9]+}}>, block_dim = 28 : i64}
// Each core: its band's 9 input rows (58 pixels, the halo included) into UB,
// the halo columns and (edge bands) rows + fp16's lowest, 9 taps as one
// max per tap over the band (the first two taps in one), the band to GM.
// EXPAND-LABEL: tile.program "stem_pool"
// EXPAND:         %[[IN:.*]] = tile.alloc {shape = array<i64: 8352>, layout = "NC1HWC0", buffers = 2 : i64} : !tile.ref<ub, f16>
// EXPAND:         %[[OUT:.*]] = tile.alloc {shape = array<i64: 1792>, layout = "NC1HWC0", buffers = 2 : i64} : !tile.ref<ub, f16>
// EXPAND:         scf.for
// EXPAND:           tile.copy %[[IN]], %{{.*}} {shape = array<i64: 9, 928>, dst_strides = array<i64: 928, 1>, src_strides = array<i64: 928, 1>}
// EXPAND:           tile.vec "adds" {{.*}} {shape = array<i64: 9, 16>, strides = array<i64: 928, 1, 928, 1>, scalar = -6.550400e+04 : f64}
// EXPAND-COUNT-8:   tile.vec "max" %[[OUT]]
// EXPAND:           tile.copy %{{.*}}, %[[OUT]] {shape = array<i64: 4, 448>
// EXPAND:         } {tile.pipeline = "ping-pong"}
tile.program "stem_pool" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<1x4x58x58x16xf16>, layout = "NC1HWC0"}
  tile.tensor {name = "y", kind = "output", offset = 430592 : i64, type = tensor<1x4x28x28x16xf16>, layout = "NC1HWC0"}
  tile.kernel "k" attributes {kind = "max_pool", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f16>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f16>
    tile.pool "max" %x, %y : !tile.ref<gm, f16>, !tile.ref<gm, f16> {
        input_view = #tile.map_view<shape = [1, 64, 56, 56], origin = 944, slice_stride = 53824, padded_w = 58>,
        output_view = #tile.map_view<shape = [1, 64, 28, 28], origin = 0, slice_stride = 12544, padded_w = 28>,
        kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, lowest_halo}
  }
}

// -----

// An average pool that does not count the padding divides by a constant of
// per-pixel reciprocals (`counts`), loaded per band beside the result.
// SELECT-LABEL: tile.program "avg_counts"
// SELECT:       tiling = #tile.pool_tiling<band_rows = {{[0-9]+}}, slices = 1, cores = {{[0-9]+}}
// EXPAND-LABEL: tile.program "avg_counts"
// EXPAND:           tile.vec "add"
// EXPAND:           %[[C:.*]] = tile.gm {tensor = "counts"} : !tile.ref<gm, f32>
// EXPAND:           tile.copy %[[UBC:.*]], %{{.*}} {shape = array<i64: {{[0-9]+}}>
// EXPAND-NEXT:      tile.vec "mul" %[[R:.*]], %[[R]], %[[UBC]]
tile.program "avg_counts" {
  tile.tensor {name = "counts", kind = "internal", offset = 0 : i64, type = tensor<8x8x8xf32>, layout = "ND"}
  tile.tensor {name = "x", kind = "input", offset = 4096 : i64, type = tensor<1x1x10x10x8xf32>, layout = "NC1HWC0"}
  tile.tensor {name = "y", kind = "output", offset = 8192 : i64, type = tensor<1x1x8x8x8xf32>, layout = "NC1HWC0"}
  tile.kernel "k" attributes {kind = "avg_pool", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
    %c = tile.gm {tensor = "counts"} : !tile.ref<gm, f32>
    tile.pool "avg" %x, %y counts(%c : !tile.ref<gm, f32>) : !tile.ref<gm, f32>, !tile.ref<gm, f32> {
        input_view = #tile.map_view<shape = [1, 8, 8, 8], origin = 88, slice_stride = 800, padded_w = 10>,
        output_view = #tile.map_view<shape = [1, 8, 8, 8], origin = 0, slice_stride = 512, padded_w = 8>,
        kernel_size = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>}
  }
}

// -----

// A global average pool over 7x7 maps of 2048 channels (fp16: 128 C1
// slices): a tile is whole maps of as many slices as fit UB twice (64 of
// them, 100 KB: two tiles on two cores), their 49 pixels folded in halves
// (49 -> 25 -> 13 -> 7 -> 4 -> 2 -> 1: six adds), then x 1/49.
// SELECT-LABEL: tile.program "global"
// SELECT:       tiling = #tile.pool_tiling<band_rows = 1, slices = 64, cores = 2, cycles = {{[0-9]+}}>, block_dim = 2 : i64}
// EXPAND-LABEL: tile.program "global"
// EXPAND:         %[[UB:.*]] = tile.alloc {shape = array<i64: 50176>, layout = "NC1HWC0", buffers = 2 : i64} : !tile.ref<ub, f16>
// EXPAND:         tile.copy %[[UB]], %{{.*}} {shape = array<i64: 64, 7, 112>, dst_strides = array<i64: 784, 112, 1>, src_strides = array<i64: 784, 112, 1>}
// EXPAND-COUNT-6:   tile.vec "add" %[[UB]], %[[UB]]
// EXPAND-NEXT:      tile.vec "muls" %[[UB]], %[[UB]] {shape = array<i64: 64, 16>, strides = array<i64: 784, 1, 784, 1>, scalar = 0.020408163265306121 : f64}
// EXPAND:           tile.copy %{{.*}}, %[[UB]] {shape = array<i64: 64, 16>
tile.program "global" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<1x128x7x7x16xf16>, layout = "NC1HWC0"}
  tile.tensor {name = "y", kind = "output", offset = 200704 : i64, type = tensor<1x128x1x1x16xf16>, layout = "NC1HWC0"}
  tile.kernel "k" attributes {kind = "global_avg_pool", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f16>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f16>
    tile.pool "global_avg" %x, %y : !tile.ref<gm, f16>, !tile.ref<gm, f16> {
        input_view = #tile.map_view<shape = [1, 2048, 7, 7], origin = 0, slice_stride = 784, padded_w = 7>,
        output_view = #tile.map_view<shape = [1, 2048, 1, 1], origin = 0, slice_stride = 16, padded_w = 1>,
        kernel_size = array<i64: 7, 7>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>}
  }
}
