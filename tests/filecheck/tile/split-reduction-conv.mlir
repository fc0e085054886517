// tile-split-reduction on convs (gedialects/tile/transforms/split_conv.py): a
// conv over many input channels at a small map becomes a grouped conv of
// partials over runs of its input slices and a sum kernel, when the cost
// models (the conv's and the elementwise kernel's) say the two are faster;
// both keep the tilings that were costed.
// RUN: ge-opt %s --split-input-file -p 'graph-fuse,graph-partition{precision_mode=force_fp16},convert-graph-to-tile{precision_mode=force_fp16},tile-split-reduction' --mlir-elide-elementsattrs-if-larger 4 | filecheck %s
// RUN: ge-opt %s --split-input-file -p 'graph-fuse,graph-partition{precision_mode=force_fp16},convert-graph-to-tile{precision_mode=force_fp16},tile-split-reduction,tile-select-tiling,tile-distribute,tile-pipeline-buffers,tile-expand-structured' --mlir-elide-elementsattrs-if-larger 4 | filecheck %s --check-prefix=EXPAND

// ResNet-50's last stage: 2,048 -> 512 at 7x7 with bias, residual and ReLU
// (graph-fuse takes the add and the relu into the conv). Eight runs of 256
// input channels: the conv becomes 8 superblocks of 16 C1 slices over the
// same packed weights (FRACTAL_Z [1][128][..] is [8][16][..] byte for byte),
// writing 8 x 512 partial channels to the workspace with no bias, residual
// or epilogue; the sum kernel (kind split_k_sum: the roofline counts the
// conv's bound on the partials only) reads eight views of the workspace
// (512 channels = 32 slices of 7x7x16 apart), the bias and the residual,
// adds them in fp32 in that order, casts once to fp16 and runs the conv's
// epilogue (the ReLU) into the conv's output.

// CHECK-LABEL: tile.program "last_stage"
// CHECK-DAG:   tile.tensor {name = "[[W:y_w]]", kind = "constant", {{.*}}type = tensor<1x128x1x32x16x16xf16>
// CHECK-DAG:   tile.tensor {name = "[[B:conv_b]]", kind = "constant", {{.*}}type = tensor<512xf16>
// CHECK-DAG:   tile.tensor {name = "[[R:input_5hd]]", kind = "internal", {{.*}}type = tensor<1x32x7x7x16xf16>, layout = "NC1HWC0"}
// CHECK-DAG:   tile.tensor {name = "[[Y:conv]]", kind = "internal", {{.*}}type = tensor<1x32x7x7x16xf16>, layout = "NC1HWC0"}
// CHECK-DAG:   tile.tensor {ge.stored_bytes = 401408 : i64, name = "[[P:k2_conv_partials]]", kind = "internal", {{.*}}type = tensor<1x256x7x7x16xf16>, layout = "NC1HWC0"}
// CHECK:       tile.kernel "k2_conv" attributes {kind = "conv", {{.*}}absorbed = ["conv", "add", "relu"], {{.*}}tiling = #tile.conv_tiling<
// CHECK-NEXT:    tile.gm {tensor = "input_5hd_1"}
// CHECK-NEXT:    tile.gm {tensor = "[[W]]"}
// CHECK-NEXT:    tile.gm {tensor = "[[P]]"}
// CHECK-NEXT:    tile.conv ins({{.*}}) weights({{.*}}) outs({{.*}}) attributes {{{.*}}output_view = #tile.map_view<shape = [1, 4096, 7, 7], origin = 0, slice_stride = 784, padded_w = 7>, kernel_size = array<i64: 1, 1>, {{.*}}in_slices = 16 : i64, out_fractals = 32 : i64, superblocks = 8 : i64, block_in_channels = 256 : i64} {
// CHECK-NEXT:    } {
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-NEXT:  tile.kernel "k2_conv_sum" attributes {kind = "split_k_sum", {{.*}}absorbed = ["conv", "add", "relu"], {{.*}}tiling = #tile.elementwise_tiling<
// CHECK-NEXT:    %[[PS:.*]] = tile.gm {tensor = "[[P]]"}
// CHECK-NEXT:    %[[BS:.*]] = tile.gm {tensor = "[[B]]"}
// CHECK-NEXT:    %[[RS:.*]] = tile.gm {tensor = "[[R]]"}
// CHECK-NEXT:    %[[YS:.*]] = tile.gm {tensor = "[[Y]]"}
// CHECK-NEXT:    tile.elementwise ins(%[[PS]], %[[PS]], %[[PS]], %[[PS]], %[[PS]], %[[PS]], %[[PS]], %[[PS]], %[[BS]], %[[RS]] : {{.*}}) outs(%[[YS]] : !tile.ref<gm, f16>) attributes {input_views = [#tile.map_view<shape = [1, 512, 7, 7], origin = 0, {{.*}}, #tile.map_view<shape = [1, 512, 7, 7], origin = 25088, {{.*}}, #tile.map_view<shape = [1, 512, 7, 7], origin = 175616, slice_stride = 784, padded_w = 7>, #tile.map_view<shape = [1, 512, 1, 1], origin = 0, slice_stride = 16, padded_w = 1>, #tile.map_view<shape = [1, 512, 7, 7], origin = 0, slice_stride = 784, padded_w = 7>]
// CHECK-NEXT:    ^bb0(%[[X0:.*]]: f16, %[[X1:.*]]: f16, %{{.*}}: f16, %{{.*}}: f16, %{{.*}}: f16, %{{.*}}: f16, %{{.*}}: f16, %{{.*}}: f16, %{{.*}}: f16, %{{.*}}: f16):
// CHECK-NEXT:      %[[A0:.*]] = arith.extf %[[X0]] : f16 to f32
// CHECK-NEXT:      %[[A1:.*]] = arith.extf %[[X1]] : f16 to f32
// CHECK-NEXT:      arith.addf %[[A0]], %[[A1]] : f32
// CHECK-COUNT-8:   arith.addf
// CHECK-NEXT:      %[[T:.*]] = arith.truncf %{{.*}} : f32 to f16
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0.000000e+00 : f16
// CHECK-NEXT:      %[[OUT:.*]] = arith.maximumf %[[T]], %[[ZERO]] : f16
// CHECK-NEXT:      tile.yield %[[OUT]] : f16
// CHECK:       tile.kernel "k3_transdata"

// Expanded, the sum kernel loads a tile's eight partial bands in one copy
// (expand_elementwise.input_runs: views of one tensor evenly apart), into
// one double buffer of 8 x 7 rows x 112, then the residual's band.
// EXPAND-LABEL: tile.kernel "k2_conv_sum"
// EXPAND:         %[[RUNS:.*]] = tile.alloc {shape = array<i64: 6272>, layout = "NC1HWC0", buffers = 2 : i64} : !tile.ref<ub, f16>
// EXPAND:         scf.for
// EXPAND:           tile.copy %[[RUNS]], %{{.*}} {shape = array<i64: 8, 7, 112>, dst_strides = array<i64: 784, 112, 1>, src_strides = array<i64: 25088, 112, 1>}
// EXPAND:           tile.copy %{{.*}}, %{{.*}} {shape = array<i64: 7, 112>, dst_strides = array<i64: 112, 1>, src_strides = array<i64: 112, 1>}
// EXPAND-NOT:       tile.copy %[[RUNS]]
// EXPAND:         tile.kernel "k3_transdata"
func.func @last_stage(%x: tensor<1x2048x7x7xf32> {ge.name = "x"}, %r: tensor<1x512x7x7xf32> {ge.name = "r"}) -> (tensor<1x512x7x7xf32> {ge.name = "y"}) {
  %w = graph.fill 0.01 : tensor<512x2048x1x1xf32>
  %b = graph.fill 0.5 : tensor<512xf32>
  %c = graph.conv %x, %w bias(%b : tensor<512xf32>) : tensor<1x2048x7x7xf32>, tensor<512x2048x1x1xf32> -> tensor<1x512x7x7xf32> loc("conv")
  %s = graph.add %c, %r : (tensor<1x512x7x7xf32>, tensor<1x512x7x7xf32>) -> tensor<1x512x7x7xf32> loc("add")
  %y = graph.relu %s : (tensor<1x512x7x7xf32>) -> tensor<1x512x7x7xf32> loc("relu")
  func.return %y : tensor<1x512x7x7xf32>
}

// -----

// 64 -> 256 at 56x56: every core's run of K is short already; the cost
// model keeps the conv one kernel, untiled (tile-select-tiling tiles it).

// CHECK-LABEL: tile.program "first_stage"
// CHECK-NOT:   tensor {{.*}}_partials
// CHECK:       tile.kernel "k1_conv" attributes {kind = "conv", {{.*}}block_dim = 1 : i64} {
// CHECK:         tile.conv {{.*}}superblocks = 1 : i64
// CHECK-NOT:   split_k_sum
func.func @first_stage(%x: tensor<1x64x56x56xf32> {ge.name = "x"}) -> (tensor<1x256x56x56xf32> {ge.name = "y"}) {
  %w = graph.fill 0.01 : tensor<256x64x1x1xf32>
  %y = graph.conv %x, %w {activation = "relu"} : tensor<1x64x56x56xf32>, tensor<256x64x1x1xf32> -> tensor<1x256x56x56xf32> loc("conv")
  func.return %y : tensor<1x256x56x56xf32>
}
