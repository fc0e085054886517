// graph-fuse, HorizontalMatMulFusionPass: products of one input by constant
// weights whose results are read only as attention heads (a reshape of the
// last dim, a transpose keeping it innermost, a product) become one product
// by the weights side by side and a graph.split of its result along the last
// axis (the cube reads the heads through windows of it: no copy).
// RUN: ge-opt %s --split-input-file -p graph-fuse --verify-diagnostics | filecheck %s
// RUN: ge-opt %s --split-input-file -p 'graph-fuse{disable=HorizontalMatMulFusionPass}' | filecheck %s --check-prefix=OFF

// Query, key and value projections with biases (fused into the products
// first), read as two heads of width 2 by an attention.
func.func @qkv(%x: tensor<1x4x4xf32>, %m: tensor<1x1x1x4xf32>) -> tensor<1x2x4x2xf32> {
  %wq = graph.constant dense<[[1.0, 0.0, 0.5, 0.0], [0.0, 1.0, 0.0, 0.5], [0.5, 0.0, 1.0, 0.0], [0.0, 0.5, 0.0, 1.0]]> : tensor<4x4xf32>
  %wk = graph.constant dense<2.0> : tensor<4x4xf32>
  %wv = graph.constant dense<[[2.0, 0.0, 0.0, 1.0], [0.0, 2.0, 1.0, 0.0], [0.0, 1.0, 2.0, 0.0], [1.0, 0.0, 0.0, 2.0]]> : tensor<4x4xf32>
  %bq = graph.constant dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %bk = graph.constant dense<[0.5, 0.6, 0.7, 0.8]> : tensor<4xf32>
  %bv = graph.constant dense<[0.9, 1.0, 1.1, 1.2]> : tensor<4xf32>
  // expected-remark@+2 {{applied MatMulBiasAddFusionPass at loc("q"): absorbed [q, qb]}}
  // expected-remark@+1 {{applied HorizontalMatMulFusionPass at loc("q"): absorbed [q, qb, k, kb, v, vb]}}
  %q0 = graph.matmul %x, %wq : (tensor<1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x4x4xf32> loc("q")
  %q1 = graph.add %q0, %bq : (tensor<1x4x4xf32>, tensor<4xf32>) -> tensor<1x4x4xf32> loc("qb")
  // expected-remark@+1 {{applied MatMulBiasAddFusionPass at loc("k"): absorbed [k, kb]}}
  %k0 = graph.matmul %x, %wk : (tensor<1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x4x4xf32> loc("k")
  %k1 = graph.add %bk, %k0 : (tensor<4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32> loc("kb")
  // expected-remark@+1 {{applied MatMulBiasAddFusionPass at loc("v"): absorbed [v, vb]}}
  %v0 = graph.matmul %x, %wv : (tensor<1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x4x4xf32> loc("v")
  %v1 = graph.add %v0, %bv : (tensor<1x4x4xf32>, tensor<4xf32>) -> tensor<1x4x4xf32> loc("vb")
  %q2 = graph.reshape %q1 {shape = array<i64: 1, 4, 2, 2>} : (tensor<1x4x4xf32>) -> tensor<1x4x2x2xf32>
  %q3 = graph.transpose %q2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %k2 = graph.reshape %k1 {shape = array<i64: 1, 4, 2, 2>} : (tensor<1x4x4xf32>) -> tensor<1x4x2x2xf32>
  %k3 = graph.transpose %k2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %v2 = graph.reshape %v1 {shape = array<i64: 1, 4, 2, 2>} : (tensor<1x4x4xf32>) -> tensor<1x4x2x2xf32>
  %v3 = graph.transpose %v2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %o = graph.attention %q3, %k3, %v3 mask(%m : tensor<1x1x1x4xf32>) {scale = 0.5 : f32} : tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32> -> tensor<1x2x4x2xf32> loc("attn")
  func.return %o : tensor<1x2x4x2xf32>
}

// The weights side by side ([4, 12]: the query's columns, the key's, the
// value's), the biases likewise, one product, its split into the three
// results the heads read as before.
// CHECK-LABEL: func.func @qkv
// CHECK-SAME:    (%[[X:.*]]: tensor<1x4x4xf32>, %[[M:.*]]: tensor<1x1x1x4xf32>)
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense_resource<q_w_merged> : tensor<4x12xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<[1.000000e-01, 2.000000e-01, 3.000000e-01, 4.000000e-01, 5.000000e-01, 6.000000e-01, 7.000000e-01, 8.000000e-01, 9.000000e-01, 1.000000e+00, 1.100000e+00, 1.200000e+00]> : tensor<12xf32>
// CHECK-NEXT:    %[[P:.*]] = graph.matmul %[[X]], %[[W]], %[[B]] {absorbed = ["q", "qb", "k", "kb", "v", "vb"]} : (tensor<1x4x4xf32>, tensor<4x12xf32>, tensor<12xf32>) -> tensor<1x4x12xf32>
// CHECK-NEXT:    %[[Q:.*]], %[[K:.*]], %[[V:.*]] = graph.split %[[P]] {axis = 2 : i64, split = array<i64: 4, 4, 4>} : (tensor<1x4x12xf32>) -> (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>)
// CHECK-NEXT:    graph.reshape %[[Q]]
// CHECK-NEXT:    graph.transpose
// CHECK-NEXT:    graph.reshape %[[K]]
// CHECK-NEXT:    graph.transpose
// CHECK-NEXT:    graph.reshape %[[V]]
// CHECK-NEXT:    graph.transpose
// CHECK-NEXT:    graph.attention
// CHECK-NEXT:    func.return
// CHECK:       q_w_merged: "0x04000000
// Each column block of the merged weights is one projection's: row 0 is
// 1, 0, 0.5, 0 (query), 2, 2, 2, 2 (key), 2, 0, 0, 1 (value).
// CHECK-SAME:  0000803f000000000000003f00000000000000400000004000000040000000400000004000000000000000000000803f

// OFF-LABEL: func.func @qkv
// OFF-NOT:     graph.split
// OFF-COUNT-3: graph.matmul %{{.*}}, %{{.*}}, %{{.*}} {absorbed
// OFF-NOT:     graph.split

// -----

// The value is also a graph output, not read as heads only: the query and
// the key merge (their split has two results), the value's product stays.
func.func @two_of_three(%x: tensor<1x4x4xf32>, %vh: tensor<1x2x4x2xf32>) -> (tensor<1x2x4x2xf32>, tensor<1x4x4xf32>) {
  %wq = graph.constant dense<[[1.0, 0.0, 0.5, 0.0], [0.0, 1.0, 0.0, 0.5], [0.5, 0.0, 1.0, 0.0], [0.0, 0.5, 0.0, 1.0]]> : tensor<4x4xf32>
  %wk = graph.constant dense<2.0> : tensor<4x4xf32>
  %wv = graph.constant dense<3.0> : tensor<4x4xf32>
  // expected-remark@+1 {{applied HorizontalMatMulFusionPass at loc("q"): absorbed [q, k]}}
  %q0 = graph.matmul %x, %wq : (tensor<1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x4x4xf32> loc("q")
  %k0 = graph.matmul %x, %wk : (tensor<1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x4x4xf32> loc("k")
  %v0 = graph.matmul %x, %wv : (tensor<1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x4x4xf32> loc("v")
  %q2 = graph.reshape %q0 {shape = array<i64: 1, 4, 2, 2>} : (tensor<1x4x4xf32>) -> tensor<1x4x2x2xf32>
  %q3 = graph.transpose %q2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %k2 = graph.reshape %k0 {shape = array<i64: 1, 4, 2, 2>} : (tensor<1x4x4xf32>) -> tensor<1x4x2x2xf32>
  %k3 = graph.transpose %k2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %o = graph.attention %q3, %k3, %vh {scale = 0.5 : f32} : tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32> -> tensor<1x2x4x2xf32> loc("attn")
  func.return %o, %v0 : tensor<1x2x4x2xf32>, tensor<1x4x4xf32>
}

// CHECK-LABEL: func.func @two_of_three
// CHECK:         %[[P:.*]] = graph.matmul %{{.*}}, %{{.*}} {absorbed = ["q", "k"]} : (tensor<1x4x4xf32>, tensor<4x8xf32>) -> tensor<1x4x8xf32>
// CHECK-NEXT:    %{{.*}}, %{{.*}} = graph.split %[[P]] {axis = 2 : i64, split = array<i64: 4, 4>}
// CHECK:         graph.matmul %{{.*}}, %{{.*}} : (tensor<1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x4x4xf32>
// CHECK:         graph.attention

// -----

// Missed: products read otherwise than as heads (their split would be a
// copy). A product by an activation is no candidate.
func.func @missed(%x: tensor<1x4x4xf32>, %a: tensor<4x4xf32>) -> (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) {
  %w1 = graph.constant dense<[[1.0, 0.0, 0.5, 0.0], [0.0, 1.0, 0.0, 0.5], [0.5, 0.0, 1.0, 0.0], [0.0, 0.5, 0.0, 1.0]]> : tensor<4x4xf32>
  %w2 = graph.constant dense<2.0> : tensor<4x4xf32>
  // expected-remark@+1 {{missed HorizontalMatMulFusionPass at loc("m1"): unsupported attribute (a result is read by func.return, not as heads (a reshape of its last dim))}}
  %m1 = graph.matmul %x, %w1 : (tensor<1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x4x4xf32> loc("m1")
  %m2 = graph.matmul %x, %w2 : (tensor<1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x4x4xf32> loc("m2")
  %m3 = graph.matmul %x, %a : (tensor<1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x4x4xf32> loc("m3")
  func.return %m1, %m2, %m3 : tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>
}

// CHECK-LABEL: func.func @missed
// CHECK-NOT:     graph.split
