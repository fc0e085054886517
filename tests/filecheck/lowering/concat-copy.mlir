// Channel concat in convert-graph-to-tile: in place when every operand sits
// at a channel offset that is a multiple of C0 and is produced by a kernel,
// otherwise copy kernels through a pixel-major GM scratch [h*w][C]: one
// `concat_gather` per operand, a tile.transdata "NC1HWC0" to "NHWC" writing
// its channels at its offset with the scratch's row pitch (GM is byte
// addressed: exact bytes, whatever the offset), then a `concat_scatter`,
// "NHWC" to "NC1HWC0", the scratch into the result map (its last slice's pad
// lanes zero in UB).
// fp32: C0 = 8; force_fp16: C0 = 16 (an offset of 8 is aligned in fp32 only).
// The conv kernels are expanded (tile-select-tiling, tile-distribute,
// tile-expand-structured) so their stores show where each operand lands.
// RUN: ge-opt %s --split-input-file -p 'convert-graph-to-tile{precision_mode=must_keep_origin_dtype},tile-select-tiling,tile-distribute,tile-expand-structured' | filecheck %s
// RUN: ge-opt %s --split-input-file -p 'convert-graph-to-tile{precision_mode=force_fp16},tile-select-tiling,tile-distribute,tile-expand-structured' | filecheck %s --check-prefix=FP16
// RUN: ge-opt %s --split-input-file -p 'convert-graph-to-tile{precision_mode=must_keep_origin_dtype}' | filecheck %s --check-prefix=OPS

// 12 + 3 + 8 channels: operands at channels 0, 12, 15 (not multiples of C0
// in either mode). Every conv keeps its own map; the scratch is 64 pixels x
// 23 channels.

// OPS-LABEL: tile.program "concat_unaligned"
// OPS:         tile.kernel "k4_concat_gather"
// OPS:           tile.transdata "NC1HWC0" to "NHWC" %{{.*}}, %{{.*}} : !tile.ref<gm, f32>, !tile.ref<gm, f32> {map_view = #tile.map_view<shape = [1, 12, 4, 16], {{.*}}>, row_pitch = 23 : i64}
// OPS:         tile.kernel "k5_concat_gather"
// OPS:           tile.transdata "NC1HWC0" to "NHWC" {{.*}}{map_view = #tile.map_view<shape = [1, 3, 4, 16], {{.*}}>, offset = 12 : i64, row_pitch = 23 : i64}
// OPS:         tile.kernel "k6_concat_gather"
// OPS:           tile.transdata "NC1HWC0" to "NHWC" {{.*}}{map_view = #tile.map_view<shape = [1, 8, 4, 16], {{.*}}>, offset = 15 : i64, row_pitch = 23 : i64}
// OPS:         tile.kernel "k7_concat_scatter"
// OPS:           tile.transdata "NHWC" to "NC1HWC0" {{.*}}{map_view = #tile.map_view<shape = [1, 23, 4, 16], {{.*}}>}

// CHECK-LABEL: tile.program "concat_unaligned"
// CHECK-DAG:   tile.tensor {name = "[[A:conv]]", kind = "internal", {{.*}}type = tensor<1x2x4x16x8xf32>, layout = "NC1HWC0"}
// CHECK-DAG:   tile.tensor {name = "[[B:conv_1]]", kind = "internal", {{.*}}type = tensor<1x2x4x16x8xf32>, layout = "NC1HWC0"}
// CHECK-DAG:   tile.tensor {name = "[[C:conv_2]]", kind = "internal", {{.*}}type = tensor<1x2x4x16x8xf32>, layout = "NC1HWC0"}
// CHECK-DAG:   tile.tensor {name = "[[CAT:concat]]", kind = "internal", {{.*}}type = tensor<1x4x4x16x8xf32>, layout = "NC1HWC0"}
// CHECK-DAG:   tile.tensor {name = "[[S:concat_rows]]", kind = "internal", {{.*}}type = tensor<1472xf32>, layout = "ND"}
// CHECK:       tile.kernel "k1_conv" attributes {kind = "conv", source = "graph.conv at loc(\22ca\22)"
// CHECK:         tile.gm {tensor = "[[A]]"}
// CHECK:       tile.kernel "k2_conv" attributes {kind = "conv", source = "graph.conv at loc(\22cb\22)"
// CHECK:         tile.gm {tensor = "[[B]]"}
// CHECK:       tile.kernel "k3_conv" attributes {kind = "conv", source = "graph.conv at loc(\22cc\22)"
// CHECK:         tile.gm {tensor = "[[C]]"}
// b (3 channels of one slice) into columns 12-14 of each pixel's row: the
// slice's run of pixels into UB, then rows of exactly 3 channels 23 apart.
// CHECK-LABEL: tile.kernel "k5_concat_gather"
// CHECK-SAME:    kind = "concat_gather", source = "graph.concat at loc(\22cat\22)"
// CHECK:         tile.gm {tensor = "[[B]]"}
// CHECK:         %[[SG:.*]] = tile.gm {tensor = "[[S]]"} : !tile.ref<gm, f32>
// CHECK:         scf.for
// CHECK:           %[[D:.*]] = tile.at %[[SG]] + %{{.*}} {offset = 12 : i64}
// CHECK:           tile.copy %[[UB:.*]], %{{.*}} {shape = array<i64: 1, {{[0-9]+}}, 8>, dst_strides = array<i64: 8, 8, 1>, src_strides = array<i64: 512, 8, 1>} : !tile.ref<ub, f32>, !tile.ref<gm, f32>
// CHECK-NEXT:      tile.copy %[[D]], %[[UB]] {shape = array<i64: {{[0-9]+}}, 3>, dst_strides = array<i64: 23, 1>, src_strides = array<i64: 8, 1>} : !tile.ref<gm, f32>, !tile.ref<ub, f32>
// CHECK-NOT:       tile.gm {tensor = "[[CAT]]"}
// CHECK-LABEL: tile.kernel "k6_concat_gather"
// CHECK:           tile.at %{{.*}} + %{{.*}} {offset = 15 : i64}
// The scratch's rows of 23 into UB as [pixel][24] (padded), then the three
// result slices.
// CHECK-LABEL: tile.kernel "k7_concat_scatter"
// CHECK-SAME:    kind = "concat_scatter", source = "graph.concat at loc(\22cat\22)"
// CHECK:         %[[OUT:.*]] = tile.gm {tensor = "[[CAT]]"}
// CHECK:         %[[SS:.*]] = tile.gm {tensor = "[[S]]"}
// CHECK:         scf.for
// CHECK:           tile.copy %[[UB2:.*]], %{{.*}} {shape = array<i64: {{[0-9]+}}, 23>, dst_strides = array<i64: 24, 1>, src_strides = array<i64: 23, 1>} : !tile.ref<ub, f32>, !tile.ref<gm, f32>
// CHECK-NEXT:      tile.copy %{{.*}}, %[[UB2]] {shape = array<i64: 3, {{[0-9]+}}, 8>, dst_strides = array<i64: 512, 8, 1>, src_strides = array<i64: 8, 24, 1>} : !tile.ref<gm, f32>, !tile.ref<ub, f32>
// CHECK-LABEL: tile.kernel "k8_transdata"
// CHECK:         tile.gm {tensor = "[[CAT]]"}

// FP16-LABEL: tile.program "concat_unaligned" attributes {ge.precision_mode = "force_fp16"
// FP16-DAG:   tile.tensor {name = "[[A:conv]]", kind = "internal", {{.*}}type = tensor<1x1x4x16x16xf16>, layout = "NC1HWC0"}
// FP16-DAG:   tile.tensor {name = "[[CAT:concat]]", kind = "internal", {{.*}}type = tensor<1x2x4x16x16xf16>, layout = "NC1HWC0"}
// FP16-DAG:   tile.tensor {name = "[[S:concat_rows]]", kind = "internal", {{.*}}type = tensor<1472xf16>, layout = "ND"}
// FP16-LABEL: tile.kernel "k4_concat_gather"
// FP16:         tile.copy %{{.*}}, %{{.*}} {shape = array<i64: {{[0-9]+}}, 12>, dst_strides = array<i64: 23, 1>, src_strides = array<i64: 16, 1>} : !tile.ref<gm, f16>, !tile.ref<ub, f16>
// FP16-LABEL: tile.kernel "k5_concat_gather"
// FP16:         tile.at %{{.*}} + %{{.*}} {offset = 12 : i64}
// FP16-LABEL: tile.kernel "k6_concat_gather"
// FP16:         tile.at %{{.*}} + %{{.*}} {offset = 15 : i64}
// FP16-LABEL: tile.kernel "k7_concat_scatter"
// FP16:         tile.copy %{{.*}}, %{{.*}} {shape = array<i64: 2, {{[0-9]+}}, 16>, dst_strides = array<i64: 1024, 16, 1>, src_strides = array<i64: 16, 32, 1>} : !tile.ref<gm, f16>, !tile.ref<ub, f16>
// FP16-LABEL: tile.kernel "k8_transdata"
func.func @concat_unaligned(%x: tensor<1x16x4x16xf32> {ge.name = "x"}) -> (tensor<1x23x4x16xf32> {ge.name = "y"}) {
  %w1 = graph.fill 0.5 : tensor<12x16x1x1xf32>
  %w2 = graph.fill 0.25 : tensor<3x16x1x1xf32>
  %w3 = graph.fill 0.125 : tensor<8x16x1x1xf32>
  %a = graph.conv %x, %w1 : tensor<1x16x4x16xf32>, tensor<12x16x1x1xf32> -> tensor<1x12x4x16xf32> loc("ca")
  %b = graph.conv %x, %w2 : tensor<1x16x4x16xf32>, tensor<3x16x1x1xf32> -> tensor<1x3x4x16xf32> loc("cb")
  %c = graph.conv %x, %w3 : tensor<1x16x4x16xf32>, tensor<8x16x1x1xf32> -> tensor<1x8x4x16xf32> loc("cc")
  %y = graph.concat %a, %b, %c {axis = 1 : i64} : (tensor<1x12x4x16xf32>, tensor<1x3x4x16xf32>, tensor<1x8x4x16xf32>) -> tensor<1x23x4x16xf32> loc("cat")
  func.return %y : tensor<1x23x4x16xf32>
}

// -----

// 16 + 8 channels: operands at channels 0 and 16, aligned in both modes, and
// only the last operand ends inside a 16-channel fractal column, so the concat
// is a view: both convs store into one map (fp32: C1 slices of 4*16*8 = 512
// elements, b at slice 2 = offset 1024; fp16: one slice of 4*16*16 = 1024,
// b at slice 1), no scratch, no copy kernel. (With 8 + 16 the 8-channel conv
// would store a whole 16-channel column into the other operand's channels:
// test_lowering.py checks that such a concat is copied.)

// CHECK-LABEL: tile.program "concat_aligned"
// CHECK-DAG:   tile.tensor {name = "[[CAT:conv]]", kind = "internal", {{.*}}type = tensor<1x4x4x16x8xf32>, layout = "NC1HWC0"}
// CHECK-NOT:   concat_scratch
// CHECK:       tile.kernel "k1_conv" attributes {kind = "conv", source = "graph.conv at loc(\22ca\22)"
// CHECK:         %[[G1:.*]] = tile.gm {tensor = "[[CAT]]"}
// CHECK:         tile.at %[[G1]] + %{{.*}} {offset = 0 : i64}
// CHECK:       tile.kernel "k2_conv" attributes {kind = "conv", source = "graph.conv at loc(\22cb\22)"
// CHECK:         %[[G2:.*]] = tile.gm {tensor = "[[CAT]]"}
// CHECK:         tile.at %[[G2]] + %{{.*}} {offset = 1024 : i64}
// CHECK-NOT:   tile.kernel {{.*}}concat
// CHECK:       tile.kernel "k3_transdata" attributes {kind = "transdata", source = "graph.transdata at loc(\22cat_transdata_nchw\22)"
// CHECK:         tile.gm {tensor = "[[CAT]]"}
// CHECK-NOT:   tile.kernel

// FP16-LABEL: tile.program "concat_aligned"
// FP16-DAG:   tile.tensor {name = "[[CAT:conv]]", kind = "internal", {{.*}}type = tensor<1x2x4x16x16xf16>, layout = "NC1HWC0"}
// FP16-NOT:   concat_scratch
// FP16:       tile.kernel "k2_conv" attributes {kind = "conv", source = "graph.conv at loc(\22cb\22)"
// FP16:         %[[G2:.*]] = tile.gm {tensor = "[[CAT]]"}
// FP16:         tile.at %[[G2]] + %{{.*}} {offset = 1024 : i64}
// FP16-NOT:   tile.kernel {{.*}}concat

func.func @concat_aligned(%x: tensor<1x16x4x16xf32> {ge.name = "x"}) -> (tensor<1x24x4x16xf32> {ge.name = "y"}) {
  %w1 = graph.fill 0.5 : tensor<16x16x1x1xf32>
  %w2 = graph.fill 0.25 : tensor<8x16x1x1xf32>
  %a = graph.conv %x, %w1 : tensor<1x16x4x16xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x4x16xf32> loc("ca")
  %b = graph.conv %x, %w2 : tensor<1x16x4x16xf32>, tensor<8x16x1x1xf32> -> tensor<1x8x4x16xf32> loc("cb")
  %y = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x16x4x16xf32>, tensor<1x8x4x16xf32>) -> tensor<1x24x4x16xf32> loc("cat")
  func.return %y : tensor<1x24x4x16xf32>
}

// -----

// A graph input as operand (channels 0 and 16, aligned in both modes): its
// transdata (inserted by assign-layouts) is a kernel like any other, so it
// writes its slice of the concat in place, as the conv does: no copy kernels.

// CHECK-LABEL: tile.program "concat_input"
// CHECK-DAG:   tile.tensor {name = "[[CAT:input_5hd]]", kind = "internal", {{.*}}type = tensor<1x4x4x16x8xf32>, layout = "NC1HWC0"}
// CHECK-LABEL: tile.kernel "k0_transdata"
// CHECK:         tile.gm {tensor = "[[CAT]]"}
// CHECK-LABEL: tile.kernel "k1_conv"
// CHECK:         tile.gm {tensor = "[[CAT]]"}
// CHECK-NOT:   tile.kernel "{{.*}}concat
// CHECK-LABEL: tile.kernel "k2_transdata"

// FP16-LABEL: tile.program "concat_input"
// FP16-DAG:   tile.tensor {name = "[[CAT:input_5hd]]", kind = "internal", {{.*}}type = tensor<1x2x4x16x16xf16>, layout = "NC1HWC0"}
// FP16-NOT:   tile.kernel "{{.*}}concat
// FP16-LABEL: tile.kernel "k2_transdata"
func.func @concat_input(%x: tensor<1x16x4x16xf32> {ge.name = "x"}) -> (tensor<1x32x4x16xf32> {ge.name = "y"}) {
  %w = graph.fill 0.5 : tensor<16x16x1x1xf32>
  %a = graph.conv %x, %w : tensor<1x16x4x16xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x4x16xf32> loc("ca")
  %y = graph.concat %x, %a {axis = 1 : i64} : (tensor<1x16x4x16xf32>, tensor<1x16x4x16xf32>) -> tensor<1x32x4x16xf32> loc("cat")
  func.return %y : tensor<1x32x4x16xf32>
}
