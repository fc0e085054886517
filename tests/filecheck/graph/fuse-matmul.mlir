// graph-fuse, matmul rules: MatMulBiasAddFusionPass, MatMulActivationFusionPass,
// GemmActivationFusionPass.
// RUN: ge-opt %s --split-input-file -p graph-fuse --verify-diagnostics | filecheck %s

// 2-d MatMul + Add (bias as the first operand) + Relu → gemm with bias and relu.
func.func @matmul_bias_relu(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<16xf32>) -> tensor<4x16xf32> {
  // expected-remark@+2 {{applied MatMulBiasAddFusionPass at loc("mm"): absorbed [mm, add]}}
  // expected-remark@+1 {{applied GemmActivationFusionPass at loc("mm"): absorbed [mm, add, relu]}}
  %m = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("mm")
  %s = graph.add %c, %m : (tensor<16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> loc("add")
  %r = graph.relu %s : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("relu")
  func.return %r : tensor<4x16xf32>
}

// CHECK-LABEL: func.func @matmul_bias_relu
// CHECK-SAME:    (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8x16xf32>, %[[C:.*]]: tensor<16xf32>)
// CHECK-NEXT:    %[[R:.*]] = graph.gemm %[[A]], %[[B]], %[[C]] {absorbed = ["mm", "add", "relu"], activation = "relu"} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    func.return %[[R]]

// -----

// Batched MatMul + broadcast bias (1x16) + Gelu (tanh) → matmul with bias and gelu.
func.func @batched(%a: tensor<2x4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<1x16xf32>) -> tensor<2x4x16xf32> {
  // expected-remark@+2 {{applied MatMulBiasAddFusionPass at loc("mm"): absorbed [mm, add]}}
  // expected-remark@+1 {{applied MatMulActivationFusionPass at loc("mm"): absorbed [mm, add, gelu]}}
  %m = graph.matmul %a, %b : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32> loc("mm")
  %s = graph.add %m, %c : (tensor<2x4x16xf32>, tensor<1x16xf32>) -> tensor<2x4x16xf32> loc("add")
  %g = graph.gelu %s {approximate = "tanh"} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32> loc("gelu")
  func.return %g : tensor<2x4x16xf32>
}

// CHECK-LABEL: func.func @batched
// CHECK-SAME:    (%[[A:.*]]: tensor<2x4x8xf32>, %[[B:.*]]: tensor<8x16xf32>, %[[C:.*]]: tensor<1x16xf32>)
// CHECK-NEXT:    %[[R:.*]] = graph.matmul %[[A]], %[[B]], %[[C]] {absorbed = ["mm", "add", "gelu"], activation = "gelu", activation_params = array<f64: 1.000000e+00>} : (tensor<2x4x8xf32>, tensor<8x16xf32>, tensor<1x16xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT:    func.return %[[R]]

// -----

// Gemm + Sigmoid; a gemm without C takes the add as its bias (beta drops:
// it scaled nothing).
func.func @gemm(%a: tensor<4x8xf32>, %b: tensor<16x8xf32>, %c: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  // expected-remark@+1 {{applied GemmActivationFusionPass at loc("g1"): absorbed [g1, sig]}}
  %g1 = graph.gemm %a, %b, %c {trans_b = 1 : i64} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32> loc("g1")
  %y1 = graph.sigmoid %g1 : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("sig")
  // expected-remark@+1 {{applied MatMulBiasAddFusionPass at loc("g2"): absorbed [g2, add]}}
  %g2 = graph.gemm %a, %b {trans_b = 1 : i64, alpha = 2.0 : f32, beta = 3.0 : f32} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32> loc("g2")
  %y2 = graph.add %g2, %c : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> loc("add")
  func.return %y1, %y2 : tensor<4x16xf32>, tensor<4x16xf32>
}

// CHECK-LABEL: func.func @gemm
// CHECK-SAME:    (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<16x8xf32>, %[[C:.*]]: tensor<16xf32>)
// CHECK-NEXT:    graph.gemm %[[A]], %[[B]], %[[C]] {absorbed = ["g1", "sig"], trans_b = 1 : i64, activation = "sigmoid"}
// CHECK-NEXT:    graph.gemm %[[A]], %[[B]], %[[C]] {absorbed = ["g2", "add"], trans_b = 1 : i64, alpha = 2.000000e+00 : f32}

// -----

// Missed: the product is used twice; the bias would grow the result; a gemm
// that already has a bias; integers.
func.func @missed(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<16xf32>, %big: tensor<2x4x16xf32>, %ai: tensor<4x8xi32>, %bi: tensor<8x16xi32>, %ci: tensor<16xi32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<2x4x16xf32>, tensor<4x16xf32>, tensor<4x16xi32>) {
  // expected-remark@+2 {{missed MatMulBiasAddFusionPass at loc("m1"): intermediate has other users (graph.matmul at loc("m1") is also used by graph.exp at loc("exp"))}}
  // expected-remark@+1 {{missed MatMulActivationFusionPass at loc("m1"): unknown/custom op (graph.exp has no epilogue form)}}
  %m1 = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("m1")
  %s1 = graph.add %m1, %c : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> loc("a1")
  %e1 = graph.exp %m1 : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("exp")
  // expected-remark@+1 {{missed MatMulBiasAddFusionPass at loc("m2"): unsupported attribute (the bias 2x4x16 does not broadcast to 4x16)}}
  %m2 = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("m2")
  %s2 = graph.add %m2, %big : (tensor<4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32> loc("a2")
  // expected-remark@+1 {{missed MatMulBiasAddFusionPass at loc("g3"): unsupported attribute (the graph.gemm already has a bias)}}
  %g3 = graph.gemm %a, %b, %c : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> loc("g3")
  %s3 = graph.add %g3, %c : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> loc("a3")
  // expected-remark@+1 {{missed MatMulBiasAddFusionPass at loc("m4"): unsupported dtype (graph.matmul result has type tensor<4x16xi32>)}}
  %m4 = graph.matmul %ai, %bi : (tensor<4x8xi32>, tensor<8x16xi32>) -> tensor<4x16xi32> loc("m4")
  %s4 = graph.add %m4, %ci : (tensor<4x16xi32>, tensor<16xi32>) -> tensor<4x16xi32> loc("a4")
  func.return %s1, %e1, %s2, %s3, %s4 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<2x4x16xf32>, tensor<4x16xf32>, tensor<4x16xi32>
}

// CHECK-LABEL: func.func @missed
// CHECK-NEXT:    graph.matmul
// CHECK-NEXT:    graph.add
// CHECK-NEXT:    graph.exp
// CHECK-NEXT:    graph.matmul
// CHECK-NEXT:    graph.add
// CHECK-NEXT:    graph.gemm
// CHECK-NEXT:    graph.add
// CHECK-NEXT:    graph.matmul
// CHECK-NEXT:    graph.add
