// force_fp16 range scaling (lowering/fp16_scaling.py): conv2's output
// reaches 7.7e4 on the calibration inputs, beyond fp16's 65504. Its class
// (conv2, the output transdata's source, the pooled map) is stored divided by
// 2^7, folded into conv2's weights; the gemm absorbs 2^7 and starts its own
// class (2^9); the softmax (a structured kernel) widens its input to fp32
// times 2^9 and writes the fp32 output itself, in its true range (no cast
// kernel); the 4-D output is multiplied back by 2^7 in fp32. fp32 has no
// scaling.
// RUN: ge-opt %s -p graph-partition,convert-graph-to-tile --log=info 2>&1 | filecheck %s
// RUN: ge-opt %s -p 'graph-partition{precision_mode=must_keep_origin_dtype},convert-graph-to-tile{precision_mode=must_keep_origin_dtype}' | filecheck %s --check-prefix=F32

// CHECK:       INFO: force_fp16: 2 value classes scaled down, by up to 2^9
// CHECK-LABEL: tile.program "grow" attributes {ge.precision_mode = "force_fp16"
// CHECK:       tile.kernel "k1_conv" attributes {kind = "conv", source = "graph.conv at loc(\22conv1\22)", op_type = "conv"
// CHECK:       tile.kernel "k2_conv" attributes {kind = "conv", source = "graph.conv at loc(\22conv2\22)"{{.*}}scale_exp = 7 : i64
// CHECK:       tile.kernel "k3_transdata" attributes {{{.*}}scale_exp = 7 : i64
// CHECK:         tile.transdata "NC1HWC0" to "ND" %{{.*}}, %{{.*}} : !tile.ref<gm, f16>, !tile.ref<gm, f32> {{{.*}}scale = 1.280000e+02 : f64}
// CHECK:       tile.kernel "k4_global_avg_pool" attributes {{{.*}}scale_exp = 7 : i64
// CHECK:       tile.kernel "k5_gemm" attributes {{{.*}}scale_exp = 9 : i64
// CHECK:       tile.kernel "k6_softmax"
// CHECK:         tile.load "gemm" : tensor<1x10xf16>
// CHECK:           arith.extf
// CHECK-NEXT:      arith.constant 5.120000e+02 : f32
// CHECK-NEXT:      arith.mulf
// CHECK:         tile.reduction "max"
// CHECK:         tile.store %{{.*}}, "prob" : tensor<1x10xf32>
// CHECK-NOT:   tile.kernel "k{{[0-9]+}}_cast"

// F32-NOT:     scale_exp
func.func @grow(%x: tensor<1x16x2x16xf32> {ge.name = "x"}) -> (tensor<1x10xf32> {ge.name = "prob"}, tensor<1x16x2x16xf32> {ge.name = "map"}) {
  %w1 = graph.fill 8.0 : tensor<16x16x3x3xf32>
  %w2 = graph.fill 8.0 : tensor<16x16x3x3xf32>
  %b = graph.fill 1.0 : tensor<16xf32>
  %v = graph.fill 0.5 : tensor<16x10xf32>
  %a = graph.conv %x, %w1 bias(%b : tensor<16xf32>) {pads = array<i64: 1, 1, 1, 1>, activation = "relu"} : tensor<1x16x2x16xf32>, tensor<16x16x3x3xf32> -> tensor<1x16x2x16xf32> loc("conv1")
  %c = graph.conv %a, %w2 {pads = array<i64: 1, 1, 1, 1>} : tensor<1x16x2x16xf32>, tensor<16x16x3x3xf32> -> tensor<1x16x2x16xf32> loc("conv2")
  %g = graph.global_avg_pool %c : (tensor<1x16x2x16xf32>) -> tensor<1x16x1x1xf32> loc("gap")
  %f = graph.flatten %g {axis = 1 : i64} : (tensor<1x16x1x1xf32>) -> tensor<1x16xf32> loc("flat")
  %m = graph.gemm %f, %v : (tensor<1x16xf32>, tensor<16x10xf32>) -> tensor<1x10xf32> loc("fc")
  %s = graph.softmax %m {axis = 1 : i64} : (tensor<1x10xf32>) -> tensor<1x10xf32> loc("softmax")
  func.return %s, %c : tensor<1x10xf32>, tensor<1x16x2x16xf32>
}
