// graph-decompose: a batch_norm of rows as a per-channel scale and shift,
// reduce_l2 as a sum of squares, a reduction over axes that are not the
// trailing ones after a transpose that moves them last, a transpose that
// moves the innermost dim without swapping two dim groups as a group swap
// and a transpose of rows, a bicubic resize as a product (its matrix from
// the reference kernel), and a gather_elements by constant indices as
// products with one-hot matrices. The second RUN shows the log.
// RUN: ge-opt %s -p graph-decompose | filecheck %s
// RUN: ge-opt %s -p graph-decompose --log=info 2>&1 >/dev/null | filecheck %s --check-prefix=LOG

// LeViT's BatchNorm1d after a linear: s = gamma / sqrt(var + eps),
// t = beta - mean * s, per column.
// CHECK-LABEL: func.func @batch_norm_of_rows
// CHECK-NEXT:    %[[S:.*]] = graph.constant dense<[1.000000e+00, 1.000000e+00, 5.000000e-01, 2.000000e+00]> : tensor<4xf32>
// CHECK-NEXT:    %[[M:.*]] = graph.mul %x, %[[S]] : (tensor<16x4xf32>, tensor<4xf32>) -> tensor<16x4xf32>
// CHECK-NEXT:    %[[T:.*]] = graph.constant dense<[0.000000e+00, 1.000000e+00, -5.000000e-01, -3.000000e+00]> : tensor<4xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.add %[[M]], %[[T]]
// CHECK-NEXT:    func.return %[[Y]]
func.func @batch_norm_of_rows(%x: tensor<16x4xf32>) -> tensor<16x4xf32> {
  %s = graph.constant dense<[1.0, 2.0, 0.5, 1.0]> : tensor<4xf32>
  %b = graph.constant dense<[0.0, 1.0, 0.0, -1.0]> : tensor<4xf32>
  %m = graph.constant dense<[0.0, 0.0, 1.0, 1.0]> : tensor<4xf32>
  %v = graph.constant dense<[1.0, 4.0, 1.0, 0.25]> : tensor<4xf32>
  %y = graph.batch_norm %x, %s, %b, %m, %v {epsilon = 0.0 : f32} : (tensor<16x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<16x4xf32> loc("bn")
  func.return %y : tensor<16x4xf32>
}

// ConvNeXt V2's global response norm: the L2 norm over the pixels of an
// NHWC map, its channels moved before the pixels to reduce trailing axes.
// CHECK-LABEL: func.func @l2_over_pixels
// CHECK-NEXT:    %[[SQ:.*]] = graph.mul %x, %x
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %[[SQ]] {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.reduce_sum %[[T]] {axes = array<i64: 2, 3>, keepdims = 0 : i64} : (tensor<1x8x4x4xf32>) -> tensor<1x8xf32>
// CHECK-NEXT:    %[[V:.*]] = graph.reshape %[[R]] {shape = array<i64: 1, 1, 1, 8>}
// CHECK-NEXT:    %[[Y:.*]] = graph.sqrt %[[V]]
// CHECK-NEXT:    func.return %[[Y]]
func.func @l2_over_pixels(%x: tensor<1x4x4x8xf32>) -> tensor<1x1x1x8xf32> {
  %y = graph.reduce_l2 %x {axes = array<i64: 1, 2>, keepdims = 1 : i64} : (tensor<1x4x4x8xf32>) -> tensor<1x1x1x8xf32> loc("grn")
  func.return %y : tensor<1x1x1x8xf32>
}

// Trailing axes already: kept.
// CHECK-LABEL: func.func @sum_trailing
// CHECK-NEXT:    graph.reduce_sum %x {axes = array<i64: 1, 2>, keepdims = 1 : i64}
// CHECK-NEXT:    func.return
func.func @sum_trailing(%x: tensor<4x6x8xf32>) -> tensor<4x1x1xf32> {
  %y = graph.reduce_sum %x {axes = array<i64: 1, 2>, keepdims = 1 : i64} : (tensor<4x6x8xf32>) -> tensor<4x1x1xf32>
  func.return %y : tensor<4x1x1xf32>
}

// MobileViT's (0, 3, 2, 1) of its patches: (0, 2, 3, 1) brings dim 1 last
// (a swap of the groups [1] and [2, 3]: an identity product on the cube),
// then (0, 2, 1, 3) keeps the innermost dim (rows copied by DMA).
// CHECK-LABEL: func.func @patches
// CHECK-NEXT:    %[[S:.*]] = graph.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x16x4xf32>) -> tensor<1x16x4x8xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.transpose %[[S]] {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x4x8xf32>) -> tensor<1x4x16x8xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @patches(%x: tensor<1x8x16x4xf32>) -> tensor<1x4x16x8xf32> {
  %y = graph.transpose %x {perm = array<i64: 0, 3, 2, 1>} : (tensor<1x8x16x4xf32>) -> tensor<1x4x16x8xf32> loc("unfold")
  func.return %y : tensor<1x4x16x8xf32>
}

// A group swap and a transpose that keeps the innermost dim: kept.
// CHECK-LABEL: func.func @kept_transposes
// CHECK-NEXT:    graph.transpose %x {perm = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT:    graph.transpose %x {perm = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT:    func.return
func.func @kept_transposes(%x: tensor<1x8x16x4xf32>) -> (tensor<1x16x4x8xf32>, tensor<1x16x8x4xf32>) {
  %a = graph.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x16x4xf32>) -> tensor<1x16x4x8xf32>
  %b = graph.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x16x4xf32>) -> tensor<1x16x8x4xf32>
  func.return %a, %b : tensor<1x16x4x8xf32>, tensor<1x16x8x4xf32>
}

// Bicubic 2x along W (a = -0.75, edge cells repeated): one product with
// the matrix the reference kernel gives.
// CHECK-LABEL: func.func @bicubic
// CHECK-NEXT:    %[[R:.*]] = graph.constant {{.*}} : tensor<4x8xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.matmul %x, %[[R]] : (tensor<1x2x4x4xf32>, tensor<4x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @bicubic(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32> {
  %y = graph.resize %x {scales = array<f64: 1.0, 1.0, 1.0, 2.0>, mode = "cubic", coordinate_transformation_mode = "half_pixel", cubic_coeff_a = -7.500000e-01 : f64, exclude_outside = 0 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  func.return %y : tensor<1x2x4x8xf32>
}

// DeBERTa's relative positions: gather_elements along the last axis by
// constant indices (-1 wraps to 3) is each row of x, [6, 1, 4], times its
// one-hot [4, 2] selection, [6, 4, 2] (its values: test_decompose_family);
// indices computed at run time, or another axis: kept.
// CHECK-LABEL: func.func @relative_positions
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %x {shape = array<i64: 6, 1, 4>}
// CHECK-NEXT:    %[[M:.*]] = graph.constant {{.*}} : tensor<6x4x2xf32>
// CHECK-NEXT:    %[[P:.*]] = graph.matmul %[[R]], %[[M]] : (tensor<6x1x4xf32>, tensor<6x4x2xf32>) -> tensor<6x1x2xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.reshape %[[P]] {shape = array<i64: 2, 3, 2>}
// CHECK-NEXT:    func.return %[[Y]]
// CHECK-LABEL: func.func @kept_gathers
// CHECK:         graph.gather_elements %x, %j {axis = -1 : i64}
// CHECK:         graph.gather_elements %x, %{{.*}} {axis = 0 : i64}
func.func @relative_positions(%x: tensor<2x3x4xf32>) -> tensor<2x3x2xf32> {
  %i = graph.constant dense<[[[0, 3], [1, 1], [2, 0]], [[3, 2], [-1, 0], [1, 2]]]> : tensor<2x3x2xi64>
  %y = graph.gather_elements %x, %i {axis = -1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x2xi64>) -> tensor<2x3x2xf32> loc("c2p")
  func.return %y : tensor<2x3x2xf32>
}
func.func @kept_gathers(%x: tensor<2x3x4xf32>, %j: tensor<2x3x2xi64>) -> (tensor<2x3x2xf32>, tensor<1x3x4xf32>) {
  %a = graph.gather_elements %x, %j {axis = -1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x2xi64>) -> tensor<2x3x2xf32>
  %i = graph.constant dense<[[[0, 1, 0, 1], [1, 0, 1, 0], [0, 0, 1, 1]]]> : tensor<1x3x4xi64>
  %b = graph.gather_elements %x, %i {axis = 0 : i64} : (tensor<2x3x4xf32>, tensor<1x3x4xi64>) -> tensor<1x3x4xf32>
  func.return %a, %b : tensor<2x3x2xf32>, tensor<1x3x4xf32>
}

// LOG: INFO: rewrote graph.batch_norm at loc("bn"): a batch_norm of a 16x4 tensor as a per-channel scale and shift
// LOG: INFO: rewrote graph.reduce_l2 at loc("grn"): reduce_l2 as the square root of a sum of squares
// LOG: INFO: rewrote graph.reduce_sum at loc("grn"): a reduction over axes (1, 2) of 1x4x4x8 as a transpose and a reduction over the trailing axes
// LOG: INFO: rewrote graph.transpose at loc("unfold"): transpose (0, 3, 2, 1) as (0, 2, 3, 1) then (0, 2, 1, 3)
// LOG: INFO: rewrote graph.resize: cubic interpolation as products with constant matrices (4 x 8)
// LOG: INFO: rewrote graph.gather_elements at loc("c2p"): a gather_elements by constant indices as rows times one-hot matrices (6 x 4 -> 2)
