// An elementwise kernel over NC1HWC0 maps at the tile level: convert-graph-to-tile
// writes a tile.elementwise (every operand through #tile.map_view: maps of
// the output's shape, per-channel [1, C, 1, 1] inputs broadcast over the
// pixels; the computation a map body yielding one element per output);
// tile-select-tiling chooses its #tile.elementwise_tiling (bands of rows of
// a C1 slice; each band expanded on a scratch kernel so its UB bytes and work
// are measured, the fastest by the target's formulas), tile-distribute makes
// its cores the block_dim, tile-expand-structured writes the loop.
// RUN: ge-opt %s --split-input-file | ge-opt --split-input-file | filecheck %s --check-prefix=ROUND
// RUN: ge-opt %s --split-input-file -p tile-select-tiling,tile-distribute | filecheck %s --check-prefix=SELECT
// RUN: ge-opt %s --split-input-file -p tile-select-tiling,tile-distribute,tile-expand-structured | filecheck %s --check-prefix=EXPAND
// RUN: ge-opt %s --split-input-file -p ge-tile-opt,convert-tile-to-npu | filecheck %s --check-prefix=NPU

// A batch norm and relu over 64 channels of 56x56 (fp16: C0 = 16, four C1
// slices), the input stored with a one-pixel halo (58x58), scale and shift
// one per channel.
// ROUND-LABEL: tile.program "bn_relu"
// ROUND:       tile.elementwise ins(%{{.*}}, %{{.*}}, %{{.*}} : !tile.ref<gm, f16>, !tile.ref<gm, f16>, !tile.ref<gm, f16>) outs(%{{.*}} : !tile.ref<gm, f16>) attributes {input_views = [#tile.map_view<shape = [1, 64, 56, 56], origin = 944, slice_stride = 53824, padded_w = 58>, #tile.map_view<shape = [1, 64, 1, 1], origin = 0, slice_stride = 16, padded_w = 1>, #tile.map_view<shape = [1, 64, 1, 1], origin = 0, slice_stride = 16, padded_w = 1>], output_views = [#tile.map_view<shape = [1, 64, 56, 56], origin = 0, slice_stride = 50176, padded_w = 56>]} {
// ROUND:         arith.maximumf
// ROUND:         tile.yield %{{.*}} : f16
// The cost model takes bands of 4 of the 56 rows: 4 slices x 14 bands = 56
// tiles over 32 cores (the pipes overlap across a core's two tiles; one tile
// of 7 rows each runs its load, vector work and store one after another).
// SELECT-LABEL: tile.program "bn_relu"
// SELECT:       tile.kernel "k" attributes {kind = "elementwise", tiling = #tile.elementwise_tiling<band_rows = 4, cores = 32, cycles = {{[0-9]+}}>, block_dim = 32 : i64}
// Each core: the 64 scales and 64 shifts to UB once, before its tiles; per
// tile, its band's 4 rows of 56 pixels (the halo left in GM: source rows 58
// pixels apart), the scale and shift of its slice (at 16 x the slice in
// those buffers) in place (the per-channel block broadcast with stride 0),
// relu into the double-buffered output, the band to GM.
// EXPAND-LABEL: tile.program "bn_relu"
// EXPAND:         %[[X:.*]] = tile.alloc {shape = array<i64: 3584>, layout = "NC1HWC0", buffers = 2 : i64} : !tile.ref<ub, f16>
// EXPAND-NEXT:    %[[S:.*]] = tile.alloc {shape = array<i64: 64>, layout = "ND", buffers = 1 : i64} : !tile.ref<ub, f16>
// EXPAND-NEXT:    tile.copy %[[S]], %{{.*}} {shape = array<i64: 4, 16>, dst_strides = array<i64: 16, 1>, src_strides = array<i64: 16, 1>}
// EXPAND-NEXT:    %[[B:.*]] = tile.alloc {shape = array<i64: 64>, layout = "ND", buffers = 1 : i64} : !tile.ref<ub, f16>
// EXPAND-NEXT:    tile.copy %[[B]], %{{.*}} {shape = array<i64: 4, 16>, dst_strides = array<i64: 16, 1>, src_strides = array<i64: 16, 1>}
// EXPAND-NEXT:    %[[Y:.*]] = tile.alloc {shape = array<i64: 3584>, layout = "NC1HWC0", buffers = 2 : i64} : !tile.ref<ub, f16>
// EXPAND:         scf.for
// EXPAND:           tile.at %{{.*}} + %{{.*}} {offset = 944 : i64}
// EXPAND-NEXT:      tile.copy %[[X]], %{{.*}} {shape = array<i64: 4, 896>, dst_strides = array<i64: 896, 1>, src_strides = array<i64: 928, 1>}
// EXPAND:           %[[SC:.*]] = tile.at %[[S]] + %{{.*}} {offset = 0 : i64} : !tile.ref<ub, f16>
// EXPAND:           %[[BC:.*]] = tile.at %[[B]] + %{{.*}} {offset = 0 : i64} : !tile.ref<ub, f16>
// EXPAND-NEXT:      tile.vec "mul" %[[X]], %[[X]], %[[SC]] {shape = array<i64: 224, 16>, strides = array<i64: 16, 1, 16, 1, 0, 1>}
// EXPAND-NEXT:      tile.vec "add" %[[X]], %[[X]], %[[BC]] {shape = array<i64: 224, 16>, strides = array<i64: 16, 1, 16, 1, 0, 1>}
// EXPAND-NEXT:      tile.vec "relu" %[[Y]], %[[X]] {shape = array<i64: 3584>, strides = array<i64: 1, 1>}
// EXPAND:           tile.copy %{{.*}}, %[[Y]] {shape = array<i64: 4, 896>, dst_strides = array<i64: 896, 1>, src_strides = array<i64: 896, 1>}
// EXPAND:         } {tile.pipeline = "ping-pong"}
// EXPAND-NOT:     tile.elementwise
tile.program "bn_relu" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<1x4x58x58x16xf16>, layout = "NC1HWC0"}
  tile.tensor {name = "chan", kind = "internal", offset = 430592 : i64, type = tensor<64xf16>, layout = "ND"}
  tile.tensor {name = "chan_1", kind = "internal", offset = 430720 : i64, type = tensor<64xf16>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 430848 : i64, type = tensor<1x4x56x56x16xf16>, layout = "NC1HWC0"}
  tile.kernel "k" attributes {kind = "elementwise", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f16>
    %s = tile.gm {tensor = "chan"} : !tile.ref<gm, f16>
    %b = tile.gm {tensor = "chan_1"} : !tile.ref<gm, f16>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f16>
    tile.elementwise ins(%x, %s, %b : !tile.ref<gm, f16>, !tile.ref<gm, f16>, !tile.ref<gm, f16>) outs(%y : !tile.ref<gm, f16>) attributes {
        input_views = [#tile.map_view<shape = [1, 64, 56, 56], origin = 944, slice_stride = 53824, padded_w = 58>,
                       #tile.map_view<shape = [1, 64, 1, 1], origin = 0, slice_stride = 16, padded_w = 1>,
                       #tile.map_view<shape = [1, 64, 1, 1], origin = 0, slice_stride = 16, padded_w = 1>],
        output_views = [#tile.map_view<shape = [1, 64, 56, 56], origin = 0, slice_stride = 50176, padded_w = 56>]} {
    ^bb0(%a : f16, %c : f16, %d : f16):
      %m = arith.mulf %a, %c : f16
      %n = arith.addf %m, %d : f16
      %zero = arith.constant 0.000000e+00 : f16
      %r = arith.maximumf %n, %zero : f16
      tile.yield %r : f16
    }
  }
}

// -----

// A loop fusion with two results (a relu both stored and used), a computed
// squeeze-excite gate [1, C, 1, 1] and a scalar: the gate's C values go to UB
// once, relu goes straight into the first output's buffer, the gate multiply
// reads it (its slice's block broadcast with stride 0), the scalar is an
// immediate (x - 0.5 as adds -0.5) into the second.
// ROUND-LABEL: tile.program "two_outputs"
// ROUND:       tile.yield %{{.*}}, %{{.*}} : f32, f32
// SELECT-LABEL: tile.program "two_outputs"
// SELECT:       tiling = #tile.elementwise_tiling<band_rows = {{[0-9]+}}, cores = {{[0-9]+}}, cycles = {{[0-9]+}}>
// EXPAND-LABEL: tile.program "two_outputs"
// EXPAND:         %[[X:.*]] = tile.alloc {shape = array<i64: [[N:[0-9]+]]>, layout = "NC1HWC0", buffers = 2 : i64}
// EXPAND-NEXT:    %[[G:.*]] = tile.alloc {shape = array<i64: 16>, layout = "ND", buffers = 1 : i64}
// EXPAND-NEXT:    tile.copy %[[G]], %{{.*}} {shape = array<i64: 2, 8>, dst_strides = array<i64: 8, 1>, src_strides = array<i64: 8, 1>}
// EXPAND-NEXT:    %[[R:.*]] = tile.alloc {shape = array<i64: [[N]]>, layout = "NC1HWC0", buffers = 2 : i64}
// EXPAND-NEXT:    %[[S:.*]] = tile.alloc {shape = array<i64: [[N]]>, layout = "NC1HWC0", buffers = 2 : i64}
// EXPAND:         scf.for
// EXPAND:           tile.copy %[[X]]
// EXPAND:           %[[GC:.*]] = tile.at %[[G]] + %{{.*}} {offset = 0 : i64} : !tile.ref<ub, f32>
// EXPAND-NEXT:      tile.vec "relu" %[[R]], %[[X]]
// EXPAND-NEXT:      tile.vec "mul" %[[T:.*]], %[[R]], %[[GC]] {{{.*}}strides = array<i64: 8, 1, 8, 1, 0, 1>}
// EXPAND-NEXT:      tile.vec "adds" %[[S]], %[[T]] {{{.*}}scalar = -5.000000e-01 : f64}
// EXPAND:           tile.copy %{{.*}}, %[[R]]
// EXPAND:           tile.copy %{{.*}}, %[[S]]
tile.program "two_outputs" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<1x2x6x6x8xf32>, layout = "NC1HWC0"}
  tile.tensor {name = "g", kind = "input", offset = 4096 : i64, type = tensor<1x2x1x1x8xf32>, layout = "NC1HWC0"}
  tile.tensor {name = "r", kind = "output", offset = 8192 : i64, type = tensor<1x2x6x6x8xf32>, layout = "NC1HWC0"}
  tile.tensor {name = "s", kind = "output", offset = 12288 : i64, type = tensor<1x2x6x6x8xf32>, layout = "NC1HWC0"}
  tile.kernel "k" attributes {kind = "elementwise", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %g = tile.gm {tensor = "g"} : !tile.ref<gm, f32>
    %r = tile.gm {tensor = "r"} : !tile.ref<gm, f32>
    %s = tile.gm {tensor = "s"} : !tile.ref<gm, f32>
    tile.elementwise ins(%x, %g : !tile.ref<gm, f32>, !tile.ref<gm, f32>) outs(%r, %s : !tile.ref<gm, f32>, !tile.ref<gm, f32>) attributes {
        input_views = [#tile.map_view<shape = [1, 16, 6, 6], origin = 0, slice_stride = 288, padded_w = 6>,
                       #tile.map_view<shape = [1, 16, 1, 1], origin = 0, slice_stride = 8, padded_w = 1>],
        output_views = [#tile.map_view<shape = [1, 16, 6, 6], origin = 0, slice_stride = 288, padded_w = 6>,
                        #tile.map_view<shape = [1, 16, 6, 6], origin = 0, slice_stride = 288, padded_w = 6>]} {
    ^bb0(%a : f32, %b : f32):
      %zero = arith.constant 0.000000e+00 : f32
      %y = arith.maximumf %a, %zero : f32
      %m = arith.mulf %y, %b : f32
      %half = arith.constant 5.000000e-01 : f32
      %z = arith.subf %m, %half : f32
      tile.yield %y, %z : f32, f32
    }
  }
}

// -----

// A tiling written by hand is expanded as given: bands of 2 rows over 4
// cores (block_dim from tile-distribute), 3 bands x 2 slices = 6 tiles.
// SELECT-LABEL: tile.program "given"
// SELECT:       tiling = #tile.elementwise_tiling<band_rows = 2, cores = 4, cycles = 0>, block_dim = 4 : i64}
// EXPAND-LABEL: tile.program "given"
// EXPAND:         tile.copy %{{.*}}, %{{.*}} {shape = array<i64: 2, 48>, dst_strides = array<i64: 48, 1>, src_strides = array<i64: 48, 1>}
// EXPAND:         tile.vec "muls" {{.*}}scalar = 2.000000e+00
tile.program "given" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<1x2x6x6x8xf32>, layout = "NC1HWC0"}
  tile.tensor {name = "y", kind = "output", offset = 4096 : i64, type = tensor<1x2x6x6x8xf32>, layout = "NC1HWC0"}
  tile.kernel "k" attributes {kind = "elementwise", tiling = #tile.elementwise_tiling<band_rows = 2, cores = 4, cycles = 0>, block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
    tile.elementwise ins(%x : !tile.ref<gm, f32>) outs(%y : !tile.ref<gm, f32>) attributes {
        input_views = [#tile.map_view<shape = [1, 16, 6, 6], origin = 0, slice_stride = 288, padded_w = 6>],
        output_views = [#tile.map_view<shape = [1, 16, 6, 6], origin = 0, slice_stride = 288, padded_w = 6>]} {
    ^bb0(%a : f32):
      %two = arith.constant 2.000000e+00 : f32
      %y2 = arith.mulf %a, %two : f32
      tile.yield %y2 : f32
    }
  }
}

// -----

// A constant a compare or select needs as a vector operand is a column of
// one, broadcast over the band through brcb (block stride 0): here relu
// written as a where on x < 0.25.
// EXPAND-LABEL: tile.program "compare"
// EXPAND:         tile.dup %[[Q:.*]] {count = 8 : i64, value = 2.500000e-01 : f64}
// EXPAND-NEXT:    tile.vec "brcb" %[[QB:.*]], %[[Q]]
// EXPAND-NEXT:    tile.vec "cmp_lt" %{{.*}}, %{{.*}}, %[[QB]] {shape = array<i64: 4, 8>, strides = array<i64: 8, 1, 8, 1, 0, 0>}
// EXPAND:         tile.vec "sel"
tile.program "compare" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<1x1x2x4x8xf32>, layout = "NC1HWC0"}
  tile.tensor {name = "y", kind = "output", offset = 4096 : i64, type = tensor<1x1x2x4x8xf32>, layout = "NC1HWC0"}
  tile.kernel "k" attributes {kind = "elementwise", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
    tile.elementwise ins(%x : !tile.ref<gm, f32>) outs(%y : !tile.ref<gm, f32>) attributes {
        input_views = [#tile.map_view<shape = [1, 8, 2, 4], origin = 0, slice_stride = 64, padded_w = 4>],
        output_views = [#tile.map_view<shape = [1, 8, 2, 4], origin = 0, slice_stride = 64, padded_w = 4>]} {
    ^bb0(%a : f32):
      %quarter = arith.constant 2.500000e-01 : f32
      %small = arith.cmpf olt, %a, %quarter : f32
      %zero = arith.constant 0.000000e+00 : f32
      %r = arith.select %small, %zero, %a : f32
      tile.yield %r : f32
    }
  }
}

// -----

// A batch norm over 160 channels of 56x56 (fp16: ten C1 slices). Its scale
// and shift read a per-channel block with block stride 0: eight pixels of a
// slice fill a repeat's blocks and the rest of the band its repeats, one
// instruction per band (npu/vector_plan.py; it was one per eight pixels, 49
// per band of 7 rows; with the copies once per core and the pricing below,
// `ge-run densenet121` 471,885 -> 451,721 cycles from f633745 to 70846eb). The
// cost model counts the instructions as the plan emits them and the scale
// and shift copied once per core (hoisted), and takes bands of 4 rows.
// SELECT-LABEL: tile.program "wide_batch_norm"
// SELECT:       tiling = #tile.elementwise_tiling<band_rows = 4, cores = 32, cycles = {{[0-9]+}}>, block_dim = 32 : i64}
// NPU-LABEL:    npu.program @wide_batch_norm
// NPU:          npu.vmul f16 %[[X:.*]], %[[X]], %{{.*}} repeat 28 src1_blk 0 src1_rep 0 :
// NPU:          npu.vadd f16 %{{.*}}, %[[X]], %{{.*}} repeat 28 src1_blk 0 src1_rep 0 :
tile.program "wide_batch_norm" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<1x10x56x56x16xf16>, layout = "NC1HWC0"}
  tile.tensor {name = "s", kind = "internal", offset = 1003520 : i64, type = tensor<160xf16>, layout = "ND"}
  tile.tensor {name = "b", kind = "internal", offset = 1003904 : i64, type = tensor<160xf16>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 1004288 : i64, type = tensor<1x10x56x56x16xf16>, layout = "NC1HWC0"}
  tile.kernel "k" attributes {kind = "elementwise", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f16>
    %s = tile.gm {tensor = "s"} : !tile.ref<gm, f16>
    %b = tile.gm {tensor = "b"} : !tile.ref<gm, f16>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f16>
    tile.elementwise ins(%x, %s, %b : !tile.ref<gm, f16>, !tile.ref<gm, f16>, !tile.ref<gm, f16>) outs(%y : !tile.ref<gm, f16>) attributes {
        input_views = [#tile.map_view<shape = [1, 160, 56, 56], origin = 0, slice_stride = 50176, padded_w = 56>,
                       #tile.map_view<shape = [1, 160, 1, 1], origin = 0, slice_stride = 16, padded_w = 1>,
                       #tile.map_view<shape = [1, 160, 1, 1], origin = 0, slice_stride = 16, padded_w = 1>],
        output_views = [#tile.map_view<shape = [1, 160, 56, 56], origin = 0, slice_stride = 50176, padded_w = 56>]} {
    ^bb0(%a : f16, %c : f16, %d : f16):
      %m = arith.mulf %a, %c : f16
      %n = arith.addf %m, %d : f16
      tile.yield %n : f16
    }
  }
}
