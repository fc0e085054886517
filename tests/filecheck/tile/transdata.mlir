// A transdata at the tile level: convert-graph-to-tile writes a
// tile.transdata (NCHW -> NC1HWC0, with block_size a space-to-depth,
// NC1HWC0 -> ND, or between a map and its NHWC rows); tile-select-tiling chooses its #tile.transdata_tiling (the
// pixel runs, the chunk each cube product takes, the cores, by the target's
// formulas), tile-distribute makes its cores the block_dim,
// tile-expand-structured writes the loop and adds the 0/1 matrices it
// multiplies by to the program as GM constants, one per value.
// RUN: ge-opt %s --split-input-file | ge-opt --split-input-file | filecheck %s --check-prefix=ROUND
// RUN: ge-opt %s --split-input-file -p tile-select-tiling,tile-distribute | filecheck %s --check-prefix=SELECT
// RUN: ge-opt %s --split-input-file -p tile-select-tiling,tile-distribute,tile-expand-structured | filecheck %s --check-prefix=EXPAND

// An fp32 image of 3 x 20 x 20 into an fp16 map without a halo: its pixel
// runs are contiguous, so the cost model may take the map as one run of
// 400 pixels; chunks of 16 pixels on 25 cores.
// ROUND-LABEL: tile.program "to_map"
// ROUND:       tile.transdata "NCHW" to "NC1HWC0" %{{.*}}, %{{.*}} : !tile.ref<gm, f32>, !tile.ref<gm, f16> {map_view = #tile.map_view<shape = [1, 3, 20, 20], origin = 0, slice_stride = 6400, padded_w = 20>}
// SELECT-LABEL: tile.program "to_map"
// SELECT:       tile.kernel "k" attributes {kind = "transdata", tiling = #tile.transdata_tiling<rows = 1, width = 400, chunk = 16, cores = 25, cycles = {{[0-9]+}}>, block_dim = 25 : i64}
// The identity (16 x 16, fp32 as the image: ZZ fractals of 16 x 8) is a new
// constant after the program's tensors, loaded into L0A once; per piece the
// 3 channels' 16 pixels GM -> UB (rows 400 apart), UB -> L1 as ZN
// fractals, the product, its rows cast to fp16 into the map's C0 slice.
// EXPAND-LABEL: tile.program "to_map"
// EXPAND:         tile.tensor {name = "identity", kind = "constant", offset = 17728 : i64, type = tensor<1x2x16x8xf32>, layout = "ND", value = dense_resource<{{.*}}> : tensor<1x2x16x8xf32>}
// EXPAND:         %[[L1A:.*]] = tile.alloc {shape = array<i64: 256>, layout = "ZZ", buffers = 1 : i64} : !tile.ref<l1, f32>
// EXPAND:         %[[L0A:.*]] = tile.alloc {shape = array<i64: 256>, layout = "ZZ", buffers = 1 : i64} : !tile.ref<l0a, f32>
// EXPAND:         %[[I:.*]] = tile.gm {tensor = "identity"} : !tile.ref<gm, f32>
// EXPAND-NEXT:    tile.copy %[[L1A]], %[[I]] {shape = array<i64: 256>
// EXPAND-NEXT:    tile.load_fractal %[[L0A]], %[[L1A]] {count = 2 : i64
// EXPAND:         scf.for
// EXPAND:           tile.copy %[[STAGED:.*]], %{{.*}} {shape = array<i64: 3, 16>, dst_strides = array<i64: 16, 1>, src_strides = array<i64: 400, 1>}
// EXPAND-NEXT:      tile.copy %[[L1B:.*]], %[[STAGED]] {shape = array<i64: 3, 2, 8>, dst_strides = array<i64: 8, 128, 1>, src_strides = array<i64: 16, 8, 1>}
// EXPAND-NEXT:      tile.load_fractal %[[L0B:.*]], %[[L1B]]
// EXPAND-NEXT:      tile.matmul %[[L0C:.*]], %[[L0A]], %[[L0B]] {m = 16 : i64, n = 16 : i64, k = 16 : i64}
// EXPAND-NEXT:      tile.copy %[[UB:.*]], %[[L0C]] {shape = array<i64: 256>, dst_strides = array<i64: 1>, src_strides = array<i64: 1>, cast} : !tile.ref<ub, f16>, !tile.ref<l0c, f32>
// EXPAND:           tile.copy %{{.*}}, %[[UB]] {shape = array<i64: 1, 16, 16>, dst_strides = array<i64: 6400, 16, 1>, src_strides = array<i64: 16, 16, 1>}
// EXPAND-NOT:     tile.transdata
tile.program "to_map" {
  tile.tensor {name = "image", kind = "input", offset = 0 : i64, type = tensor<1x3x20x20xf32>, layout = "ND"}
  tile.tensor {name = "map", kind = "internal", offset = 4864 : i64, type = tensor<1x1x20x20x16xf16>, layout = "NC1HWC0"}
  tile.kernel "k" attributes {kind = "transdata", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "image"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "map"} : !tile.ref<gm, f16>
    tile.transdata "NCHW" to "NC1HWC0" %x, %y : !tile.ref<gm, f32>, !tile.ref<gm, f16> {map_view = #tile.map_view<shape = [1, 3, 20, 20], origin = 0, slice_stride = 6400, padded_w = 20>}
  }
}

// -----

// The same image into a map with a one-pixel halo (22 x 22): its pixel
// runs are its rows, a chunk of 32 pixels covers one (20 row chunks on 20
// cores); each row lands past the halo (origin 368, rows 22 pixels apart).
// SELECT-LABEL: tile.program "halo"
// SELECT:       tiling = #tile.transdata_tiling<rows = 20, width = 20, chunk = 32, cores = 20, cycles = {{[0-9]+}}>
// EXPAND-LABEL: tile.program "halo"
// EXPAND:         type = tensor<2x4x16x8xf32>
// EXPAND:         scf.for
// EXPAND:           tile.copy %{{.*}}, %{{.*}} {shape = array<i64: 3, 20>, dst_strides = array<i64: 32, 1>, src_strides = array<i64: 400, 1>}
// EXPAND:           tile.matmul %{{.*}}, %{{.*}}, %{{.*}} {m = 32 : i64, n = 16 : i64, k = 32 : i64}
// EXPAND:           %[[ROW:.*]] = tile.at %{{.*}} + %{{.*}} {offset = 368 : i64} : !tile.ref<gm, f16> -> !tile.ref<gm, f16>
// EXPAND-NEXT:      tile.copy %[[ROW]], %{{.*}} {shape = array<i64: 1, 20, 16>, dst_strides = array<i64: 7744, 16, 1>, src_strides = array<i64: 16, 16, 1>}
tile.program "halo" {
  tile.tensor {name = "image", kind = "input", offset = 0 : i64, type = tensor<1x3x20x20xf32>, layout = "ND"}
  tile.tensor {name = "map", kind = "internal", offset = 4864 : i64, type = tensor<1x1x22x22x16xf16>, layout = "NC1HWC0"}
  tile.kernel "k" attributes {kind = "transdata", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "image"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "map"} : !tile.ref<gm, f16>
    tile.transdata "NCHW" to "NC1HWC0" %x, %y : !tile.ref<gm, f32>, !tile.ref<gm, f16> {map_view = #tile.map_view<shape = [1, 3, 20, 20], origin = 368, slice_stride = 7744, padded_w = 22>}
  }
}

// -----

// A space-to-depth (2 x 2 cells, DCR) of an fp32 3 x 8 x 8 image into the
// fp16 map [1, 12, 4, 4]: two picking matrices of 16 cells (A_dx picks
// pixel 2j + dx for cell j), one constant each; a chunk is a whole row of
// cells, so its two input rows GM -> UB are one copy (a burst per channel:
// the rows lie one after the other); B filled on chip for dx = 0 and 1
// (channels of dy = 1 four B rows below dy = 0's), the second product
// accumulating onto the first.
// ROUND-LABEL: tile.program "space_to_depth"
// ROUND:       block_size = 2 : i64, mode = "DCR"
// SELECT-LABEL: tile.program "space_to_depth"
// SELECT:       tiling = #tile.transdata_tiling<rows = 4, width = 4, chunk = 4, cores = 4, cycles = {{[0-9]+}}>
// EXPAND-LABEL: tile.program "space_to_depth"
// EXPAND:         tile.tensor {name = "space_to_depth_pick0", kind = "constant", {{.*}} type = tensor<1x4x16x8xf32>
// EXPAND:         tile.tensor {name = "space_to_depth_pick1", kind = "constant", {{.*}} type = tensor<1x4x16x8xf32>
// EXPAND:         %[[A0:.*]] = tile.alloc {shape = array<i64: 512>, layout = "ZZ", buffers = 1 : i64} : !tile.ref<l0a, f32>
// EXPAND:         %[[A1:.*]] = tile.alloc {shape = array<i64: 512>, layout = "ZZ", buffers = 1 : i64} : !tile.ref<l0a, f32>
// EXPAND:         scf.for
// EXPAND:           tile.copy %{{.*}}, %{{.*}} {shape = array<i64: 3, 16>, dst_strides = array<i64: 16, 1>, src_strides = array<i64: 64, 1>}
// EXPAND-NOT:       src_strides = array<i64: 64, 1>
// EXPAND:           tile.at %{{.*}} {offset = 48 : i64} : !tile.ref<l1, f32>
// EXPAND:           tile.matmul %[[C:.*]], %[[A0]], %{{.*}} {m = 16 : i64, n = 16 : i64, k = 32 : i64}
// EXPAND:           tile.matmul %[[C]], %[[A1]], %{{.*}} {m = 16 : i64, n = 16 : i64, k = 32 : i64, accumulate}
// EXPAND:           tile.copy %{{.*}}, %{{.*}} {shape = array<i64: 1, 4, 16>, dst_strides = array<i64: 256, 16, 1>, src_strides = array<i64: 16, 16, 1>}
tile.program "space_to_depth" {
  tile.tensor {name = "image", kind = "input", offset = 0 : i64, type = tensor<1x3x8x8xf32>, layout = "ND"}
  tile.tensor {name = "map", kind = "internal", offset = 1024 : i64, type = tensor<1x1x4x4x16xf16>, layout = "NC1HWC0"}
  tile.kernel "k" attributes {kind = "transdata", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "image"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "map"} : !tile.ref<gm, f16>
    tile.transdata "NCHW" to "NC1HWC0" %x, %y : !tile.ref<gm, f32>, !tile.ref<gm, f16> {map_view = #tile.map_view<shape = [1, 12, 4, 4], origin = 0, slice_stride = 256, padded_w = 4>, block_size = 2 : i64, mode = "DCR"}
  }
}

// -----

// A chunk of several products: an fp16 3 x 64 x 64 image, 32 rows of 32
// cells, one row of cells a chunk on each of 32 cores: its two input rows
// one copy [3, 128], and per dx two products of 16 cells against the same
// picking matrix, the second on C's and B's next fractals (L0C 256 and
// L0B 512 elements on), each dx accumulating onto the first.
// SELECT-LABEL: tile.program "space_to_depth_products"
// SELECT:       tiling = #tile.transdata_tiling<rows = 32, width = 32, chunk = 32, cores = 32, cycles = {{[0-9]+}}>
// EXPAND-LABEL: tile.program "space_to_depth_products"
// EXPAND:         tile.tensor {name = "space_to_depth_pick0", kind = "constant", {{.*}} type = tensor<1x2x16x16xf16>
// EXPAND:         %[[A0:.*]] = tile.alloc {shape = array<i64: 512>, layout = "ZZ", buffers = 1 : i64} : !tile.ref<l0a, f16>
// EXPAND:         %[[A1:.*]] = tile.alloc {shape = array<i64: 512>, layout = "ZZ", buffers = 1 : i64} : !tile.ref<l0a, f16>
// EXPAND:         %[[B:.*]] = tile.alloc {shape = array<i64: 1024>, layout = "ZN", buffers = 1 : i64} : !tile.ref<l0b, f16>
// EXPAND:         %[[C:.*]] = tile.alloc {shape = array<i64: 512>, layout = "NZ", buffers = 1 : i64} : !tile.ref<l0c, f32>
// EXPAND:         scf.for
// EXPAND:           tile.copy %{{.*}}, %{{.*}} {shape = array<i64: 3, 128>, dst_strides = array<i64: 128, 1>, src_strides = array<i64: 4096, 1>}
// EXPAND:           tile.matmul %[[C]], %[[A0]], %[[B]] {m = 16 : i64, n = 16 : i64, k = 32 : i64}
// EXPAND:           %[[C1:.*]] = tile.at %[[C]] {offset = 256 : i64}
// EXPAND:           %[[B1:.*]] = tile.at %[[B]] {offset = 512 : i64}
// EXPAND:           tile.matmul %[[C1]], %[[A0]], %[[B1]] {m = 16 : i64, n = 16 : i64, k = 32 : i64}
// EXPAND:           tile.matmul %[[C]], %[[A1]], %[[B]] {m = 16 : i64, n = 16 : i64, k = 32 : i64, accumulate}
// EXPAND:           %[[C2:.*]] = tile.at %[[C]] {offset = 256 : i64}
// EXPAND:           %[[B2:.*]] = tile.at %[[B]] {offset = 512 : i64}
// EXPAND:           tile.matmul %[[C2]], %[[A1]], %[[B2]] {m = 16 : i64, n = 16 : i64, k = 32 : i64, accumulate}
// EXPAND:           tile.copy %{{.*}}, %[[C]] {shape = array<i64: 512>, dst_strides = array<i64: 1>, src_strides = array<i64: 1>, cast}
tile.program "space_to_depth_products" {
  tile.tensor {name = "image", kind = "input", offset = 0 : i64, type = tensor<1x3x64x64xf16>, layout = "ND"}
  tile.tensor {name = "map", kind = "internal", offset = 24576 : i64, type = tensor<1x1x32x32x16xf16>, layout = "NC1HWC0"}
  tile.kernel "k" attributes {kind = "transdata", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "image"} : !tile.ref<gm, f16>
    %y = tile.gm {tensor = "map"} : !tile.ref<gm, f16>
    tile.transdata "NCHW" to "NC1HWC0" %x, %y : !tile.ref<gm, f16>, !tile.ref<gm, f16> {map_view = #tile.map_view<shape = [1, 12, 32, 32], origin = 0, slice_stride = 16384, padded_w = 32>, block_size = 2 : i64, mode = "DCR"}
  }
}

// -----

// Two fp16 maps out to fp32 graph outputs (20 channels of 5 x 5: one whole
// 16-channel block and one of 4; 25 pixels, one chunk of 32), the first
// undoing force_fp16's scale 4: one 16 x 16 identity constant for both
// kernels. Per piece the two C0 slices' 32 pixels GM -> L1 as B, the
// product, the scale in fp32, then the NCHW rows: the whole 16-pixel
// fractal in one copy, the last 9 pixels in another.
// ROUND-LABEL: tile.program "from_map"
// ROUND:       tile.transdata "NC1HWC0" to "ND" {{.*}} scale = 4.000000e+00 : f64
// SELECT-LABEL: tile.program "from_map"
// SELECT:       tiling = #tile.transdata_tiling<rows = 1, width = 25, chunk = 32, cores = 2, cycles = {{[0-9]+}}>
// EXPAND-LABEL: tile.program "from_map"
// EXPAND:         tile.tensor {name = "identity16", kind = "constant", {{.*}} type = tensor<1x16x16xf16>
// EXPAND-NOT:     kind = "constant"
// EXPAND:         tile.kernel "k"
// EXPAND:         scf.for
// EXPAND:           tile.copy %[[L1B:.*]], %{{.*}} {shape = array<i64: 1, 512>, dst_strides = array<i64: 512, 1>, src_strides = array<i64: 400, 1>}
// EXPAND-NEXT:      tile.load_fractal %[[L0B:.*]], %[[L1B]] {count = 2 : i64
// EXPAND-NEXT:      tile.matmul %[[L0C:.*]], %{{.*}}, %[[L0B]] {m = 16 : i64, n = 32 : i64, k = 16 : i64}
// EXPAND-NEXT:      tile.copy %[[UB:.*]], %[[L0C]] {shape = array<i64: 512>, dst_strides = array<i64: 1>, src_strides = array<i64: 1>} : !tile.ref<ub, f32>, !tile.ref<l0c, f32>
// EXPAND-NEXT:      tile.vec "muls" %[[UB]], %[[UB]] {shape = array<i64: 512>, strides = array<i64: 1, 1>, scalar = 4.000000e+00 : f64}
// EXPAND-NEXT:      tile.copy %{{.*}}, %[[UB]] {shape = array<i64: 16, 1, 16>, dst_strides = array<i64: 25, 16, 1>, src_strides = array<i64: 16, 256, 1>}
// EXPAND:           tile.copy %{{.*}}, %{{.*}} {shape = array<i64: 16, 9>, dst_strides = array<i64: 25, 1>, src_strides = array<i64: 16, 1>}
// EXPAND:         tile.kernel "k2"
// EXPAND:           %{{.*}} = tile.gm {tensor = "identity16"} : !tile.ref<gm, f16>
// EXPAND-NOT:       tile.vec "muls"
// EXPAND:         }
tile.program "from_map" {
  tile.tensor {name = "map", kind = "internal", offset = 0 : i64, type = tensor<1x2x5x5x16xf16>, layout = "NC1HWC0"}
  tile.tensor {name = "out", kind = "output", offset = 1664 : i64, type = tensor<1x20x5x5xf32>, layout = "ND"}
  tile.tensor {name = "out2", kind = "output", offset = 3328 : i64, type = tensor<1x20x5x5xf32>, layout = "ND"}
  tile.kernel "k" attributes {kind = "transdata", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "map"} : !tile.ref<gm, f16>
    %y = tile.gm {tensor = "out"} : !tile.ref<gm, f32>
    tile.transdata "NC1HWC0" to "ND" %x, %y : !tile.ref<gm, f16>, !tile.ref<gm, f32> {map_view = #tile.map_view<shape = [1, 20, 5, 5], origin = 0, slice_stride = 400, padded_w = 5>, scale = 4.0 : f64}
  }
  tile.kernel "k2" attributes {kind = "transdata", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "map"} : !tile.ref<gm, f16>
    %y = tile.gm {tensor = "out2"} : !tile.ref<gm, f32>
    tile.transdata "NC1HWC0" to "ND" %x, %y : !tile.ref<gm, f16>, !tile.ref<gm, f32> {map_view = #tile.map_view<shape = [1, 20, 5, 5], origin = 0, slice_stride = 400, padded_w = 5>}
  }
}

// -----

// A map and its NHWC rows (ConvNeXt's layer_norm over channels): strided
// copies through UB, no product. 40 fp16 channels (three C0 slices, the last
// half padding) of 56 x 56. Out of a map with a one-pixel halo the pixel runs
// are its rows: a chunk is a row of 56 pixels (56 chunks on 32 cores); each
// chunk's run of the three slices GM -> UB as [pixel][48], its rows of 40
// channels UB -> GM, double-buffered.
// ROUND-LABEL: tile.program "map_to_rows"
// ROUND:       tile.transdata "NC1HWC0" to "NHWC" %{{.*}}, %{{.*}} : !tile.ref<gm, f16>, !tile.ref<gm, f16>
// SELECT-LABEL: tile.program "map_to_rows"
// SELECT:       tiling = #tile.transdata_tiling<rows = 56, width = 56, chunk = 56, cores = 32, cycles = {{[0-9]+}}>
// EXPAND-LABEL: tile.program "map_to_rows"
// EXPAND:         %[[UB:.*]] = tile.alloc {shape = array<i64: 2688>, layout = "ND", buffers = 2 : i64} : !tile.ref<ub, f16>
// EXPAND:         scf.for
// EXPAND:           tile.at %{{.*}} + %{{.*}} {offset = 944 : i64}
// EXPAND:           tile.copy %[[UB]], %{{.*}} {shape = array<i64: 3, 56, 16>, dst_strides = array<i64: 16, 48, 1>, src_strides = array<i64: 53824, 16, 1>}
// EXPAND-NEXT:      tile.copy %{{.*}}, %[[UB]] {shape = array<i64: 56, 40>, dst_strides = array<i64: 40, 1>, src_strides = array<i64: 48, 1>}
// EXPAND:         } {tile.pipeline = "ping-pong"}
// EXPAND-NOT:     kind = "constant"
tile.program "map_to_rows" {
  tile.tensor {name = "map", kind = "internal", offset = 0 : i64, type = tensor<1x3x58x58x16xf16>, layout = "NC1HWC0"}
  tile.tensor {name = "rows", kind = "internal", offset = 323072 : i64, type = tensor<3136x40xf16>, layout = "ND"}
  tile.kernel "k" attributes {kind = "transpose", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "map"} : !tile.ref<gm, f16>
    %y = tile.gm {tensor = "rows"} : !tile.ref<gm, f16>
    tile.transdata "NC1HWC0" to "NHWC" %x, %y : !tile.ref<gm, f16>, !tile.ref<gm, f16> {map_view = #tile.map_view<shape = [1, 40, 56, 56], origin = 944, slice_stride = 53824, padded_w = 58>}
  }
}

// -----

// Back into a map without a halo: its pixels are one run of 3,136, the cost
// model's chunk 98 pixels (32 chunks, one per core); the rows come in padded
// to whole slices, each slice's run goes out.
// SELECT-LABEL: tile.program "rows_to_map"
// SELECT:       tiling = #tile.transdata_tiling<rows = 1, width = 3136, chunk = 98, cores = 32, cycles = {{[0-9]+}}>
// EXPAND-LABEL: tile.program "rows_to_map"
// EXPAND:         scf.for
// EXPAND:           tile.copy %[[UB:.*]], %{{.*}} {shape = array<i64: 98, 40>, dst_strides = array<i64: 48, 1>, src_strides = array<i64: 40, 1>}
// EXPAND-NEXT:      tile.copy %{{.*}}, %[[UB]] {shape = array<i64: 3, 98, 16>, dst_strides = array<i64: 50176, 16, 1>, src_strides = array<i64: 16, 48, 1>}
tile.program "rows_to_map" {
  tile.tensor {name = "rows", kind = "internal", offset = 0 : i64, type = tensor<3136x40xf16>, layout = "ND"}
  tile.tensor {name = "map", kind = "internal", offset = 250944 : i64, type = tensor<1x3x56x56x16xf16>, layout = "NC1HWC0"}
  tile.kernel "k" attributes {kind = "transpose", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "rows"} : !tile.ref<gm, f16>
    %y = tile.gm {tensor = "map"} : !tile.ref<gm, f16>
    tile.transdata "NHWC" to "NC1HWC0" %x, %y : !tile.ref<gm, f16>, !tile.ref<gm, f16> {map_view = #tile.map_view<shape = [1, 40, 56, 56], origin = 0, slice_stride = 50176, padded_w = 56>}
  }
}
