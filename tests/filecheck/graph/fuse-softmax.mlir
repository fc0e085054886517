// graph-fuse, softmax rules: SoftmaxReshapeFusionPass and
// ReshapeSoftmaxFusionPass, when the reshape keeps the softmax axis intact.
// RUN: ge-opt %s --split-input-file -p graph-fuse --verify-diagnostics | filecheck %s

// SqueezeNet's tail (ONNX Softmax before opset 13): flatten, softmax,
// reshape back. Both rules apply; the shapes meet, so no `shape` is left.
func.func @squeezenet(%x: tensor<1x10x1x1xf32>) -> tensor<1x10x1x1xf32> {
  %f = graph.flatten %x {axis = 1 : i64} : (tensor<1x10x1x1xf32>) -> tensor<1x10xf32> loc("flat")
  // expected-remark@+2 {{applied SoftmaxReshapeFusionPass at loc("sm"): absorbed [sm, re]}}
  // expected-remark@+1 {{applied ReshapeSoftmaxFusionPass at loc("sm"): absorbed [flat, sm, re]}}
  %s = graph.softmax %f {axis = 1 : i64} : (tensor<1x10xf32>) -> tensor<1x10xf32> loc("sm")
  %r = graph.reshape %s {shape = array<i64: 1, 10, 1, 1>} : (tensor<1x10xf32>) -> tensor<1x10x1x1xf32> loc("re")
  func.return %r : tensor<1x10x1x1xf32>
}

// CHECK-LABEL: func.func @squeezenet
// CHECK-SAME:    (%[[X:.*]]: tensor<1x10x1x1xf32>)
// CHECK-NEXT:    %[[S:.*]] = graph.softmax %[[X]] {absorbed = ["flat", "sm", "re"], axis = 1 : i64} : (tensor<1x10x1x1xf32>) -> tensor<1x10x1x1xf32>
// CHECK-NEXT:    func.return %[[S]]

// -----

// A reshape that merges dims before the axis: one softmax with a result shape.
func.func @merge_before(%x: tensor<2x3x5xf32>) -> tensor<6x5xf32> {
  // expected-remark@+1 {{applied SoftmaxReshapeFusionPass at loc("sm"): absorbed [sm, re]}}
  %s = graph.softmax %x {axis = -1 : i64} : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32> loc("sm")
  %r = graph.reshape %s {shape = array<i64: 6, 5>} : (tensor<2x3x5xf32>) -> tensor<6x5xf32> loc("re")
  func.return %r : tensor<6x5xf32>
}

// CHECK-LABEL: func.func @merge_before
// CHECK-NEXT:    graph.softmax %{{.*}} {absorbed = ["sm", "re"], axis = 2 : i64, shape = array<i64: 6, 5>} : (tensor<2x3x5xf32>) -> tensor<6x5xf32>

// -----

// Missed: the reshape splits the softmax axis; the reshaped value has
// another user; dynamic shapes.
func.func @missed(%x: tensor<2x6xf32>, %d: tensor<?x6xf32>) -> (tensor<2x2x3xf32>, tensor<12xf32>, tensor<3x4xf32>, tensor<?x2x3xf32>, tensor<2x1x6xf32>) {
  // expected-remark@+1 {{missed SoftmaxReshapeFusionPass at loc("s1"): unsupported attribute (the reshape 2x6 -> 2x2x3 does not keep softmax axis 1 intact)}}
  %s1 = graph.softmax %x {axis = 1 : i64} : (tensor<2x6xf32>) -> tensor<2x6xf32> loc("s1")
  %r1 = graph.reshape %s1 {shape = array<i64: 2, 2, 3>} : (tensor<2x6xf32>) -> tensor<2x2x3xf32> loc("r1")
  %r2 = graph.reshape %x {shape = array<i64: 3, 4>} : (tensor<2x6xf32>) -> tensor<3x4xf32> loc("r2")
  // expected-remark@+1 {{missed ReshapeSoftmaxFusionPass at loc("s2"): unsupported attribute (the reshape 2x6 -> 3x4 does not keep softmax axis 1 intact)}}
  %s2 = graph.softmax %r2 {axis = 1 : i64} : (tensor<3x4xf32>) -> tensor<3x4xf32> loc("s2")
  %f3 = graph.unsqueeze %x {axes = array<i64: 1>} : (tensor<2x6xf32>) -> tensor<2x1x6xf32> loc("f3")
  // expected-remark@+1 {{missed ReshapeSoftmaxFusionPass at loc("s3"): intermediate has other users (graph.unsqueeze at loc("f3") is also used by graph.reshape at loc("r3"))}}
  %s3 = graph.softmax %f3 {axis = 2 : i64} : (tensor<2x1x6xf32>) -> tensor<2x1x6xf32> loc("s3")
  %r3 = graph.reshape %f3 {shape = array<i64: 12>} : (tensor<2x1x6xf32>) -> tensor<12xf32> loc("r3")
  // expected-remark@+1 {{missed SoftmaxReshapeFusionPass at loc("s4"): dynamic shape (the softmax input has a dynamic shape)}}
  %s4 = graph.softmax %d {axis = 1 : i64} : (tensor<?x6xf32>) -> tensor<?x6xf32> loc("s4")
  %r4 = graph.reshape %s4 {shape = array<i64: -1, 2, 3>} : (tensor<?x6xf32>) -> tensor<?x2x3xf32> loc("r4")
  func.return %r1, %r3, %s2, %r4, %s3 : tensor<2x2x3xf32>, tensor<12xf32>, tensor<3x4xf32>, tensor<?x2x3xf32>, tensor<2x1x6xf32>
}

// CHECK-LABEL: func.func @missed
// CHECK-NEXT:    graph.softmax
// CHECK-NEXT:    graph.reshape
// CHECK-NEXT:    graph.reshape
// CHECK-NEXT:    graph.softmax
// CHECK-NEXT:    graph.unsqueeze
// CHECK-NEXT:    graph.softmax
// CHECK-NEXT:    graph.reshape
// CHECK-NEXT:    graph.softmax
// CHECK-NEXT:    graph.reshape
