// graph-decompose: a resize of the last two dims as products with constant
// interpolation matrices, an up-convolution whose kernel is its stride as a
// product and a tap interleave, any other up-convolution as a zero insertion
// and a conv, 1-d convs as 2-d ones, instance and group norms as layer
// norms; what it cannot rewrite stays. The
// second RUN shows its log.
// RUN: ge-opt %s -p graph-decompose | filecheck %s
// RUN: ge-opt %s -p graph-decompose --log=info 2>&1 >/dev/null | filecheck %s --check-prefix=LOG

// Bilinear 2x2 -> 4x4 (SegFormer's decoder): x . R_w^T with R_w^T [2, 4],
// then R_h . (...) with R_h [4, 2], a constant left operand broadcast over
// [N, C]. Half-pixel weights of a 2x upsampling are 1, 0.75/0.25 and 1.
// CHECK-LABEL: func.func @bilinear
// CHECK:         %[[RW:.*]] = graph.constant dense<{{\[\[}}1.000000e+00, 7.500000e-01, 2.500000e-01, 0.000000e+00], [0.000000e+00, 2.500000e-01, 7.500000e-01, 1.000000e+00]]> : tensor<2x4xf32>
// CHECK-NEXT:    %[[W:.*]] = graph.matmul %x, %[[RW]] : (tensor<1x8x2x2xf32>, tensor<2x4xf32>) -> tensor<1x8x2x4xf32>
// CHECK-NEXT:    %[[RH:.*]] = graph.constant {{.*}} : tensor<4x2xf32>
// CHECK-NEXT:    %[[H:.*]] = graph.matmul %[[RH]], %[[W]] : (tensor<4x2xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x4x4xf32>
// CHECK-NEXT:    func.return %[[H]]
func.func @bilinear(%x: tensor<1x8x2x2xf32>) -> tensor<1x8x4x4xf32> {
  %y = graph.resize %x {scales = array<f64: 1.0, 1.0, 2.0, 2.0>, mode = "linear", coordinate_transformation_mode = "half_pixel"} : (tensor<1x8x2x2xf32>) -> tensor<1x8x4x4xf32> loc("up")
  func.return %y : tensor<1x8x4x4xf32>
}

// Nearest along W only: one product, its matrix of 0s and 1s.
// CHECK-LABEL: func.func @nearest_w
// CHECK:         %[[R:.*]] = graph.constant dense<{{\[\[}}1.000000e+00, 1.000000e+00, 0.000000e+00, 0.000000e+00], [0.000000e+00, 0.000000e+00, 1.000000e+00, 1.000000e+00]]> : tensor<2x4xf32>
// CHECK-NEXT:    %[[W:.*]] = graph.matmul %x, %[[R]] : (tensor<1x4x3x2xf32>, tensor<2x4xf32>) -> tensor<1x4x3x4xf32>
// CHECK-NEXT:    func.return %[[W]]
func.func @nearest_w(%x: tensor<1x4x3x2xf32>) -> tensor<1x4x3x4xf32> {
  %y = graph.resize %x {scales = array<f64: 1.0, 1.0, 1.0, 2.0>, mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"} : (tensor<1x4x3x2xf32>) -> tensor<1x4x3x4xf32>
  func.return %y : tensor<1x4x3x4xf32>
}

// Extents past the limit (RESIZE_PRODUCT_LIMIT, 512) and a resize of the
// channels stay resizes.
// CHECK-LABEL: func.func @kept_resizes
// CHECK-NEXT:    graph.resize
// CHECK-NEXT:    graph.resize
// CHECK-NEXT:    func.return
func.func @kept_resizes(%x: tensor<1x1x2x300xf32>, %z: tensor<1x2x4x4xf32>) -> (tensor<1x1x2x600xf32>, tensor<1x4x4x4xf32>) {
  %a = graph.resize %x {scales = array<f64: 1.0, 1.0, 1.0, 2.0>, mode = "linear"} : (tensor<1x1x2x300xf32>) -> tensor<1x1x2x600xf32>
  %b = graph.resize %z {scales = array<f64: 1.0, 2.0, 1.0, 1.0>, mode = "nearest"} : (tensor<1x2x4x4xf32>) -> tensor<1x4x4x4xf32>
  func.return %a, %b : tensor<1x1x2x600xf32>, tensor<1x4x4x4xf32>
}

// UNet's 2x2 up-convolution of stride 2: x to NHWC, a product with the
// weight as [C, O*2*2] and the bias repeated over the 4 taps, the taps
// viewed as [N, H, W, O, 2, 2] and interleaved to [N, O, H, 2, W, 2], the
// output's row-major order.
// CHECK-LABEL: func.func @up_conv
// CHECK:         %[[T:.*]] = graph.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x16x4x4xf32>) -> tensor<1x4x4x16xf32>
// CHECK:         %[[W:.*]] = graph.{{constant|fill}} {{.*}} : tensor<16x32xf32>
// CHECK:         %[[B:.*]] = graph.{{constant|fill}} {{.*}} : tensor<32xf32>
// CHECK-NEXT:    %[[P:.*]] = graph.matmul %[[T]], %[[W]], %[[B]] : (tensor<1x4x4x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> tensor<1x4x4x32xf32>
// CHECK-NEXT:    %[[V:.*]] = graph.reshape %[[P]] {shape = array<i64: 1, 4, 4, 8, 2, 2>}
// CHECK-NEXT:    %[[I:.*]] = graph.transpose %[[V]] {perm = array<i64: 0, 3, 1, 4, 2, 5>} : (tensor<1x4x4x8x2x2xf32>) -> tensor<1x8x4x2x4x2xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.reshape %[[I]] {shape = array<i64: 1, 8, 8, 8>} : (tensor<1x8x4x2x4x2xf32>) -> tensor<1x8x8x8xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @up_conv(%x: tensor<1x16x4x4xf32>) -> tensor<1x8x8x8xf32> {
  %w = graph.fill 0.25 : tensor<16x8x2x2xf32>
  %b = graph.fill 0.5 : tensor<8xf32>
  %y = graph.conv_transpose %x, %w, %b {strides = array<i64: 2, 2>} : (tensor<1x16x4x4xf32>, tensor<16x8x2x2xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32> loc("ups.0")
  func.return %y : tensor<1x8x8x8xf32>
}

// Overlapping windows (kernel 4, stride 2, pads 1: DCGAN's): the input's
// zeros inserted by products with 0/1 matrices (x . E_w, then E_h . (...):
// 4 -> 7 = (4 - 1) * 2 + 1 along each dim), then a conv of stride 1 with the
// weight flipped and its channel axes swapped ([C, O, 4, 4] -> [O, C, 4, 4];
// the numerical tests check the flip) padding d * (k - 1) - pad = 2 on every side.
// CHECK-LABEL: func.func @overlapping_up_conv
// CHECK:         %[[EW:.*]] = graph.constant {{.*}} : tensor<4x7xf32>
// CHECK-NEXT:    %[[ZW:.*]] = graph.matmul %x, %[[EW]] : (tensor<1x4x4x4xf32>, tensor<4x7xf32>) -> tensor<1x4x4x7xf32>
// CHECK-NEXT:    %[[EH:.*]] = graph.constant {{.*}} : tensor<7x4xf32>
// CHECK-NEXT:    %[[Z:.*]] = graph.matmul %[[EH]], %[[ZW]] : (tensor<7x4xf32>, tensor<1x4x4x7xf32>) -> tensor<1x4x7x7xf32>
// CHECK-NEXT:    %[[W:.*]] = graph.fill 0.5 : tensor<6x4x4x4xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.conv %[[Z]], %[[W]] {pads = array<i64: 2, 2, 2, 2>} : tensor<1x4x7x7xf32>, tensor<6x4x4x4xf32> -> tensor<1x6x8x8xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @overlapping_up_conv(%x: tensor<1x4x4x4xf32>) -> tensor<1x6x8x8xf32> {
  %w = graph.fill 0.5 : tensor<4x6x4x4xf32>
  %y = graph.conv_transpose %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x4x4xf32>, tensor<4x6x4x4xf32>) -> tensor<1x6x8x8xf32>
  func.return %y : tensor<1x6x8x8xf32>
}

// DCGAN's first layer (4x4, stride 1, no pads, on the 1x1 latent): no zeros
// to insert, so no product; the conv pads 3 on every side.
// CHECK-LABEL: func.func @latent_up_conv
// CHECK-NEXT:    %[[W:.*]] = graph.fill 0.5 : tensor<4x8x4x4xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.conv %z, %[[W]] {pads = array<i64: 3, 3, 3, 3>} : tensor<1x8x1x1xf32>, tensor<4x8x4x4xf32> -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @latent_up_conv(%z: tensor<1x8x1x1xf32>) -> tensor<1x4x4x4xf32> {
  %w = graph.fill 0.5 : tensor<8x4x4x4xf32>
  %y = graph.conv_transpose %z, %w : (tensor<1x8x1x1xf32>, tensor<8x4x4x4xf32>) -> tensor<1x4x4x4xf32> loc("netG.0")
  func.return %y : tensor<1x4x4x4xf32>
}

// A pad past the kernel (3 > d * (k - 1) = 2 at the top) crops: E_h drops
// the first dilated row (9 -> 8 rows) and the conv pads nothing there.
// CHECK-LABEL: func.func @cropping_up_conv
// CHECK:         graph.matmul %x, %{{.*}} : (tensor<1x2x5x5xf32>, tensor<5x9xf32>) -> tensor<1x2x5x9xf32>
// CHECK:         graph.matmul %{{.*}}, %{{.*}} : (tensor<8x5xf32>, tensor<1x2x5x9xf32>) -> tensor<1x2x8x9xf32>
// CHECK:         graph.conv {{.*}} {pads = array<i64: 0, 0, 0, 0>} : tensor<1x2x8x9xf32>, tensor<2x2x3x3xf32> -> tensor<1x2x6x7xf32>
func.func @cropping_up_conv(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x6x7xf32> {
  %w = graph.fill 0.5 : tensor<2x2x3x3xf32>
  %y = graph.conv_transpose %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 3, 2, 2, 2>} : (tensor<1x2x5x5xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x6x7xf32>
  func.return %y : tensor<1x2x6x7xf32>
}

// A weight computed at run time stays a conv_transpose (the AI CPU runs it).
// CHECK-LABEL: func.func @runtime_weight
// CHECK:         graph.conv_transpose
func.func @runtime_weight(%x: tensor<1x4x4x4xf32>, %w: tensor<4x4x4x4xf32>) -> tensor<1x4x8x8xf32> {
  %y = graph.conv_transpose %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x4x4xf32>, tensor<4x4x4x4xf32>) -> tensor<1x4x8x8xf32>
  func.return %y : tensor<1x4x8x8xf32>
}

// A 1-d conv (Whisper's and wav2vec2's audio stems) as a 2-d conv on a map
// of height 1: views around it, the constant weight reshaped at compile
// time, the stride and dilation the same along H (one row stays one row),
// no pads along H.
// CHECK-LABEL: func.func @conv1d
// CHECK:         %[[X:.*]] = graph.reshape %x {shape = array<i64: 1, 16, 1, 64>} : (tensor<1x16x64xf32>) -> tensor<1x16x1x64xf32>
// CHECK-NEXT:    %[[W:.*]] = graph.fill 0.5 : tensor<8x16x1x3xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.conv %[[X]], %[[W]] bias(%{{.*}} : tensor<8xf32>) {strides = array<i64: 2, 2>, pads = array<i64: 0, 1, 0, 1>, dilations = array<i64: 1, 1>} : tensor<1x16x1x64xf32>, tensor<8x16x1x3xf32> -> tensor<1x8x1x32xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.reshape %[[C]] {shape = array<i64: 1, 8, 32>} : (tensor<1x8x1x32xf32>) -> tensor<1x8x32xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @conv1d(%x: tensor<1x16x64xf32>) -> tensor<1x8x32xf32> {
  %w = graph.fill 0.5 : tensor<8x16x3xf32>
  %b = graph.fill 0.25 : tensor<8xf32>
  %y = graph.conv %x, %w bias(%b : tensor<8xf32>) {strides = array<i64: 2>, pads = array<i64: 1, 1>} : tensor<1x16x64xf32>, tensor<8x16x3xf32> -> tensor<1x8x32xf32> loc("conv1")
  func.return %y : tensor<1x8x32xf32>
}

// wav2vec2's group norm of one group per channel (exported as
// InstanceNormalization) on [N, C, L]: a layer_norm over L, already the
// last axis; its unit scale and zero bias need no mul or add.
// CHECK-LABEL: func.func @instance_norm
// CHECK-NEXT:    %[[ONE:.*]] = graph.fill 1.0 : tensor<50xf32>
// CHECK-NEXT:    %[[N:.*]] = graph.layer_norm %x, %[[ONE]] {axis = -1 : i64, epsilon = 1.000000e-05 : f32}
// CHECK-NEXT:    func.return %[[N]]
func.func @instance_norm(%x: tensor<1x8x50xf32>) -> tensor<1x8x50xf32> {
  %s = graph.fill 1.0 : tensor<8xf32>
  %b = graph.fill 0.0 : tensor<8xf32>
  %y = graph.instance_norm %x, %s, %b {epsilon = 1.0e-05 : f32} : (tensor<1x8x50xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x8x50xf32> loc("gn")
  func.return %y : tensor<1x8x50xf32>
}

// A group norm of 2 groups: each sample's group as a row of C/G * H * W = 64
// values, then the per-channel scale (a run-time value, viewed as [C, 1, 1])
// and bias.
// CHECK-LABEL: func.func @group_norm
// CHECK:         %[[R:.*]] = graph.reshape %x {shape = array<i64: 1, 2, 64>}
// CHECK-NEXT:    %[[ONE:.*]] = graph.fill 1.0 : tensor<64xf32>
// CHECK-NEXT:    %[[N:.*]] = graph.layer_norm %[[R]], %[[ONE]] {axis = -1 : i64}
// CHECK-NEXT:    %[[B:.*]] = graph.reshape %[[N]] {shape = array<i64: 1, 8, 4, 4>}
// CHECK-NEXT:    %[[S:.*]] = graph.reshape %s {shape = array<i64: 8, 1, 1>}
// CHECK-NEXT:    %[[M:.*]] = graph.mul %[[B]], %[[S]]
// CHECK-NEXT:    %[[BIAS:.*]] = graph.fill 0.5 : tensor<8x1x1xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.add %[[M]], %[[BIAS]]
// CHECK-NEXT:    func.return %[[Y]]
func.func @group_norm(%x: tensor<1x8x4x4xf32>, %s: tensor<8xf32>) -> tensor<1x8x4x4xf32> {
  %b = graph.fill 0.5 : tensor<8xf32>
  %y = graph.group_norm %x, %s, %b {num_groups = 2 : i64} : (tensor<1x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x8x4x4xf32>
  func.return %y : tensor<1x8x4x4xf32>
}

// LOG: INFO: rewrote graph.resize at loc("up"): linear interpolation as products with constant matrices (4 x 4)
// LOG: INFO: rewrote graph.resize: nearest interpolation as products with constant matrices (3 x 4)
// LOG: INFO: rewrote graph.conv_transpose at loc("ups.0"): a 2x2 up-convolution of stride 2x2 as a product and a tap interleave
// LOG: INFO: rewrote graph.conv_transpose: a 4x4 up-convolution of stride 2x2 as a zero insertion and a 4x4 conv
// LOG: INFO: rewrote graph.conv_transpose at loc("netG.0"): a 4x4 up-convolution of stride 1x1 as a zero insertion and a 4x4 conv
// LOG: INFO: rewrote graph.conv_transpose: a 3x3 up-convolution of stride 2x2 as a zero insertion and a 3x3 conv
// LOG: INFO: rewrote graph.conv at loc("conv1"): a 1-d conv as a 2-d one on a map of height 1
// LOG: INFO: rewrote graph.instance_norm at loc("gn"): 8 group(s) of 50 values per sample as a layer_norm
// LOG: INFO: rewrote graph.group_norm: 2 group(s) of 64 values per sample as a layer_norm
// LOG-NOT: rewrote
