// graph-decompose: a resize of the last two dims as products with constant
// interpolation matrices, and an up-convolution whose kernel is its stride
// as a product and a tap interleave; what it cannot rewrite stays. The
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

// Overlapping windows (kernel 4, stride 2, pads 1: DCGAN's) stay.
// CHECK-LABEL: func.func @overlapping_up_conv
// CHECK:         graph.conv_transpose
func.func @overlapping_up_conv(%x: tensor<1x4x4x4xf32>) -> tensor<1x4x8x8xf32> {
  %w = graph.fill 0.25 : tensor<4x4x4x4xf32>
  %y = graph.conv_transpose %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x4x4xf32>, tensor<4x4x4x4xf32>) -> tensor<1x4x8x8xf32>
  func.return %y : tensor<1x4x8x8xf32>
}

// LOG: INFO: rewrote graph.resize at loc("up"): linear interpolation as products with constant matrices (4 x 4)
// LOG: INFO: rewrote graph.resize: nearest interpolation as products with constant matrices (3 x 4)
// LOG: INFO: rewrote graph.conv_transpose at loc("ups.0"): a 2x2 up-convolution of stride 2x2 as a product and a tap interleave
// LOG-NOT: rewrote
