// graph-fuse, LayerNorm rules: LayerNormFusionPass (the decomposition
// exporters emit) and AddLayerNormFusionPass (a residual add before it).
// The fused IR prints and parses back (last RUN).
// RUN: ge-opt %s --split-input-file -p graph-fuse --verify-diagnostics | filecheck %s
// RUN: ge-opt %s --split-input-file -p graph-fuse | ge-opt --split-input-file | filecheck %s

// Add + decomposed LayerNorm (pow form, gamma on the left, beta on the
// left, beta with an extra leading unit dim) → one layer_norm with a residual.
func.func @add_layer_norm(%x: tensor<2x3x8xf32>, %y: tensor<2x3x8xf32>, %gamma: tensor<8xf32>) -> tensor<2x3x8xf32> {
  %s = graph.add %x, %y : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32> loc("res")
  // expected-remark@+2 {{applied LayerNormFusionPass at loc("mean"): absorbed [mean, sub, pow, var, addeps, sqrt, div, gamma, beta]}}
  // expected-remark@+1 {{applied AddLayerNormFusionPass at loc("mean"): absorbed [res, mean, sub, pow, var, addeps, sqrt, div, gamma, beta]}}
  %m = graph.reduce_mean %s {axes = array<i64: -1>} : (tensor<2x3x8xf32>) -> tensor<2x3x1xf32> loc("mean")
  %d = graph.sub %s, %m : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32> loc("sub")
  %two = graph.fill 2.0 : tensor<f32>
  %p = graph.pow %d, %two : (tensor<2x3x8xf32>, tensor<f32>) -> tensor<2x3x8xf32> loc("pow")
  %v = graph.reduce_mean %p {axes = array<i64: 2>} : (tensor<2x3x8xf32>) -> tensor<2x3x1xf32> loc("var")
  %eps = graph.constant dense<1.0e-05> : tensor<1xf32>
  %ve = graph.add %v, %eps : (tensor<2x3x1xf32>, tensor<1xf32>) -> tensor<2x3x1xf32> loc("addeps")
  %sd = graph.sqrt %ve : (tensor<2x3x1xf32>) -> tensor<2x3x1xf32> loc("sqrt")
  %n = graph.div %d, %sd : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32> loc("div")
  %g = graph.mul %gamma, %n : (tensor<8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32> loc("gamma")
  %beta = graph.fill 0.5 : tensor<1x8xf32>
  %z = graph.add %beta, %g : (tensor<1x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32> loc("beta")
  func.return %z : tensor<2x3x8xf32>
}

// CHECK-LABEL: func.func @add_layer_norm
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x8xf32>, %[[Y:.*]]: tensor<2x3x8xf32>, %[[GAMMA:.*]]: tensor<8xf32>)
// CHECK-NEXT:    %[[BETA:.*]] = graph.fill 0.5 : tensor<8xf32>
// CHECK-NEXT:    %[[Z:.*]] = graph.layer_norm %[[X]], %[[GAMMA]] bias(%[[BETA]] : tensor<8xf32>) residual(%[[Y]] : tensor<2x3x8xf32>) {absorbed = ["res", "mean", "sub", "pow", "var", "addeps", "sqrt", "div", "gamma", "beta"], axis = 2 : i64, epsilon = 1.000000e-05 : f32}
// CHECK-NEXT:    func.return %[[Z]]

// -----

// x * x for the square, no gamma/beta (scale 1), normalising the last two dims.
func.func @no_affine(%x: tensor<2x3x8xf32>) -> tensor<2x3x8xf32> {
  // expected-remark@+1 {{applied LayerNormFusionPass at loc("mean"): absorbed [mean, sub, sq, var, addeps, sqrt, div]}}
  %m = graph.reduce_mean %x {axes = array<i64: 1, 2>} : (tensor<2x3x8xf32>) -> tensor<2x1x1xf32> loc("mean")
  %d = graph.sub %x, %m : (tensor<2x3x8xf32>, tensor<2x1x1xf32>) -> tensor<2x3x8xf32> loc("sub")
  %p = graph.mul %d, %d : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32> loc("sq")
  %v = graph.reduce_mean %p {axes = array<i64: -2, -1>} : (tensor<2x3x8xf32>) -> tensor<2x1x1xf32> loc("var")
  %eps = graph.fill 1.0e-03 : tensor<f32>
  %ve = graph.add %eps, %v : (tensor<f32>, tensor<2x1x1xf32>) -> tensor<2x1x1xf32> loc("addeps")
  %sd = graph.sqrt %ve : (tensor<2x1x1xf32>) -> tensor<2x1x1xf32> loc("sqrt")
  %n = graph.div %d, %sd : (tensor<2x3x8xf32>, tensor<2x1x1xf32>) -> tensor<2x3x8xf32> loc("div")
  func.return %n : tensor<2x3x8xf32>
}

// CHECK-LABEL: func.func @no_affine
// CHECK-NEXT:    %[[ONE:.*]] = graph.fill 1.0 : tensor<3x8xf32>
// CHECK-NEXT:    graph.layer_norm %{{.*}}, %[[ONE]] {absorbed = ["mean", "sub", "sq", "var", "addeps", "sqrt", "div"], axis = 1 : i64, epsilon = 1.000000e-03 : f32}

// -----

// Missed: a centred value with another user, an epsilon that is computed,
// the mean over a non-trailing axis; and an add whose sum is used elsewhere.
// What is left of each decomposition is loop-fused (sub+mul, add+sqrt+div).
func.func @missed(%x: tensor<2x8xf32>, %e: tensor<f32>, %s: tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) {
  %eps = graph.fill 1.0e-05 : tensor<f32>
  // expected-remark@+1 {{missed LayerNormFusionPass at loc("m1"): intermediate has other users (graph.sub at loc("d1") is also used by graph.exp at loc("exp"))}}
  %m1 = graph.reduce_mean %x {axes = array<i64: 1>} : (tensor<2x8xf32>) -> tensor<2x1xf32> loc("m1")
  // expected-remark@+1 {{applied ElementwiseLoopFusionPass at loc("d1"): absorbed [d1, graph.mul]}}
  %d1 = graph.sub %x, %m1 : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32> loc("d1")
  %p1 = graph.mul %d1, %d1 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %v1 = graph.reduce_mean %p1 {axes = array<i64: 1>} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  // expected-remark@+1 {{applied ElementwiseLoopFusionPass at graph.add: absorbed [graph.add, graph.sqrt, graph.div]}}
  %a1 = graph.add %v1, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %s1 = graph.sqrt %a1 : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %n1 = graph.div %d1, %s1 : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %x1 = graph.exp %d1 : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("exp")
  // expected-remark@+1 {{missed LayerNormFusionPass at loc("m2"): operand not constant (epsilon is not a scalar constant)}}
  %m2 = graph.reduce_mean %x {axes = array<i64: 1>} : (tensor<2x8xf32>) -> tensor<2x1xf32> loc("m2")
  // expected-remark@+1 {{applied ElementwiseLoopFusionPass at graph.sub: absorbed [graph.sub, graph.mul]}}
  %d2 = graph.sub %x, %m2 : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %p2 = graph.mul %d2, %d2 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %v2 = graph.reduce_mean %p2 {axes = array<i64: 1>} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  // expected-remark@+1 {{applied ElementwiseLoopFusionPass at graph.add: absorbed [graph.add, graph.sqrt, graph.div]}}
  %a2 = graph.add %v2, %e : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %s2 = graph.sqrt %a2 : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %n2 = graph.div %d2, %s2 : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  // expected-remark@+1 {{missed LayerNormFusionPass at loc("m3"): unsupported attribute (the mean is taken over axes [0], not the trailing dims)}}
  %m3 = graph.reduce_mean %x {axes = array<i64: 0>} : (tensor<2x8xf32>) -> tensor<1x8xf32> loc("m3")
  // expected-remark@+1 {{applied ElementwiseLoopFusionPass at graph.sub: absorbed [graph.sub, graph.mul]}}
  %d3 = graph.sub %x, %m3 : (tensor<2x8xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  %p3 = graph.mul %d3, %d3 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %v3 = graph.reduce_mean %p3 {axes = array<i64: 0>} : (tensor<2x8xf32>) -> tensor<1x8xf32>
  // expected-remark@+1 {{applied ElementwiseLoopFusionPass at graph.add: absorbed [graph.add, graph.sqrt, graph.div]}}
  %a3 = graph.add %v3, %eps : (tensor<1x8xf32>, tensor<f32>) -> tensor<1x8xf32>
  %s3 = graph.sqrt %a3 : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %n3 = graph.div %d3, %s3 : (tensor<2x8xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  %r = graph.add %x, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("res")
  // expected-remark@+1 {{missed AddLayerNormFusionPass at loc("ln"): intermediate has other users (graph.add at loc("res") is also used by func.return)}}
  %ln = graph.layer_norm %r, %s : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32> loc("ln")
  func.return %n1, %n2, %n3, %ln, %r : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
}

// CHECK-LABEL: func.func @missed
// CHECK-NOT:     graph.layer_norm {{.*}}absorbed
