// graph-fuse, loop fusion (ElementwiseLoopFusionPass): connected elementwise
// ops → one graph.fusion; splat and small constants are cloned into the body,
// intermediates used outside are yielded as extra results.
// The fused IR prints and parses back (last RUN).
// RUN: ge-opt %s --split-input-file -p graph-fuse --verify-diagnostics | filecheck %s
// RUN: ge-opt %s --split-input-file -p graph-fuse | ge-opt --split-input-file | filecheck %s

// A DAG: %e is used outside the group, so it is a result too.
func.func @dag(%x: tensor<4x8xf32>, %y: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // expected-remark@+1 {{applied ElementwiseLoopFusionPass at loc("a"): absorbed [a, e, m, n]}}
  %a = graph.add %x, %y : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> loc("a")
  %e = graph.exp %a : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("e")
  %h = graph.fill 0.5 : tensor<f32>
  %m = graph.mul %e, %h : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32> loc("m")
  %n = graph.sub %m, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("n")
  func.return %n, %e : tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @dag
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>, %[[Y:.*]]: tensor<8xf32>)
// CHECK-NEXT:    %[[E:.*]], %[[N:.*]] = graph.fusion %[[X]], %[[Y]] {absorbed = ["a", "e", "m", "n"]} : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[BX:.*]]: tensor<4x8xf32>, %[[BY:.*]]: tensor<8xf32>):
// CHECK-NEXT:      %[[A:.*]] = graph.add %[[BX]], %[[BY]]
// CHECK-NEXT:      %[[E2:.*]] = graph.exp %[[A]]
// CHECK-NEXT:      %[[H:.*]] = graph.fill 0.5 : tensor<f32>
// CHECK-NEXT:      %[[M:.*]] = graph.mul %[[E2]], %[[H]]
// CHECK-NEXT:      %[[N2:.*]] = graph.sub %[[M]], %[[A]]
// CHECK-NEXT:      graph.yield %[[E2]], %[[N2]] : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[N]], %[[E]]

// -----

// A padding mask ((1 - m) * min, [1, 1, 1, S]) that the next layer reads
// too, next to one layer's score scaling ([1, H, S, S]): two iteration
// spaces, so two fusions (one output shape each), cut where the mask is
// complete (one fusion yielding both is lowered by no kernel family).
func.func @mask_and_scores(%m: tensor<1x1x1x4xf32>, %s: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %one = graph.fill 1.0 : tensor<f32>
  %min = graph.fill -3.0e38 : tensor<f32>
  %half = graph.fill 0.5 : tensor<f32>
  // expected-remark@+1 {{applied ElementwiseLoopFusionPass at loc("inv"): absorbed [inv, mask]}}
  %i = graph.sub %one, %m : (tensor<f32>, tensor<1x1x1x4xf32>) -> tensor<1x1x1x4xf32> loc("inv")
  %k = graph.mul %i, %min : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32> loc("mask")
  // expected-remark@+1 {{applied ElementwiseLoopFusionPass at loc("scale"): absorbed [scale, add0]}}
  %d = graph.mul %s, %half : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32> loc("scale")
  %a = graph.add %d, %k : (tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x4xf32> loc("add0")
  %b = graph.softmax %a {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("next_layer")
  %c = graph.add %b, %k : (tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x4xf32> loc("add1")
  func.return %c : tensor<1x2x4x4xf32>
}

// CHECK-LABEL: func.func @mask_and_scores
// CHECK:         %[[K:.*]] = graph.fusion %{{.*}} {absorbed = ["inv", "mask"]} : (tensor<1x1x1x4xf32>) -> tensor<1x1x1x4xf32>
// CHECK:         graph.fusion %{{.*}}, %[[K]] {absorbed = ["scale", "add0"]} : (tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK:         graph.add %{{.*}}, %[[K]] : (tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>)

// -----

// DenseNet's BatchNorm tail: mul and add by per-channel weights (blobs, passed
// in) and relu; the sum of three takes part; identity and cast stay outside.
func.func @densenet_tail(%x: tensor<1x32x2x2xf32>, %w: tensor<32x1x1xf32>) -> tensor<1x32x2x2xf16> {
  // expected-remark@+1 {{applied ElementwiseLoopFusionPass at loc("mul"): absorbed [mul, add, relu, sum]}}
  %m = graph.mul %x, %w : (tensor<1x32x2x2xf32>, tensor<32x1x1xf32>) -> tensor<1x32x2x2xf32> loc("mul")
  %a = graph.add %m, %w : (tensor<1x32x2x2xf32>, tensor<32x1x1xf32>) -> tensor<1x32x2x2xf32> loc("add")
  %r = graph.relu %a : (tensor<1x32x2x2xf32>) -> tensor<1x32x2x2xf32> loc("relu")
  %s = graph.sum %r, %x, %m : (tensor<1x32x2x2xf32>, tensor<1x32x2x2xf32>, tensor<1x32x2x2xf32>) -> tensor<1x32x2x2xf32> loc("sum")
  %i = graph.identity %s : (tensor<1x32x2x2xf32>) -> tensor<1x32x2x2xf32> loc("id")
  %c = graph.cast %i : (tensor<1x32x2x2xf32>) -> tensor<1x32x2x2xf16> loc("cast")
  func.return %c : tensor<1x32x2x2xf16>
}

// CHECK-LABEL: func.func @densenet_tail
// CHECK-SAME:    (%[[X:.*]]: tensor<1x32x2x2xf32>, %[[W:.*]]: tensor<32x1x1xf32>)
// CHECK-NEXT:    %[[S:.*]] = graph.fusion %[[X]], %[[W]] {absorbed = ["mul", "add", "relu", "sum"]}
// CHECK:           graph.sum
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[I:.*]] = graph.identity %[[S]]
// CHECK-NEXT:    graph.cast %[[I]]

// -----

// Missed: an outside user of %a runs before the next op of the group (the
// fusion would take the place of its last op); integer tensors; dynamic shapes.
func.func @missed(%x: tensor<1x2x4x4xf32>, %i: tensor<4xi32>, %d: tensor<?x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<4xi32>, tensor<?x4xf32>) {
  // expected-remark@+1 {{missed ElementwiseLoopFusionPass at loc("a"): intermediate has other users (graph.abs at loc("a") is also used by graph.softmax at loc("sm"), which runs before graph.add at loc("b"))}}
  %a = graph.abs %x : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("a")
  %c = graph.softmax %a {axis = 1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("sm")
  %b = graph.add %a, %c : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("b")
  // expected-remark@+1 {{missed ElementwiseLoopFusionPass at loc("i1"): unsupported dtype (graph.neg result has type tensor<4xi32>)}}
  %i1 = graph.neg %i : (tensor<4xi32>) -> tensor<4xi32> loc("i1")
  %i2 = graph.abs %i1 : (tensor<4xi32>) -> tensor<4xi32> loc("i2")
  // expected-remark@+1 {{missed ElementwiseLoopFusionPass at loc("d1"): dynamic shape (graph.neg result has type tensor<?x4xf32>)}}
  %d1 = graph.neg %d : (tensor<?x4xf32>) -> tensor<?x4xf32> loc("d1")
  %d2 = graph.exp %d1 : (tensor<?x4xf32>) -> tensor<?x4xf32> loc("d2")
  func.return %b, %i2, %d2 : tensor<1x2x4x4xf32>, tensor<4xi32>, tensor<?x4xf32>
}

// CHECK-LABEL: func.func @missed
// CHECK-NOT:     graph.fusion
