// graph-fuse, attention masks (MaskWhereFusionPass): a graph.where fused with
// the casts to bool, comparisons and and/or/xor/not that build its condition
// (those other ops read too computed again inside) into one graph.fusion: one map from the
// int64 input (and the constants, cloned into the body) to the float mask.
// The fused IR prints and parses back (last RUN).
// RUN: ge-opt %s --split-input-file -p graph-fuse --verify-diagnostics | filecheck %s
// RUN: ge-opt %s --split-input-file -p graph-fuse | ge-opt --split-input-file | filecheck %s

// BERT's extended attention mask: cast(attention_mask -> bool) (already
// unsqueezed to [1,1,1,16]: graph-canonicalize moves views before casts),
// and with an all-true [1,1,16,1], where(0, -3.4e38).
func.func @bert(%m: tensor<1x1x1x16xi64>) -> tensor<1x1x16x16xf32> {
  %c = graph.cast %m : (tensor<1x1x1x16xi64>) -> tensor<1x1x1x16xi1> loc("cast")
  %t = graph.fill 1 : tensor<1x1x16x1xi1>
  %a = graph.and %t, %c : (tensor<1x1x16x1xi1>, tensor<1x1x1x16xi1>) -> tensor<1x1x16x16xi1> loc("and")
  %z = graph.fill 0.0 : tensor<f32>
  %n = graph.fill -3.4e38 : tensor<f32>
  // expected-remark@+1 {{applied MaskWhereFusionPass at loc("where"): absorbed [cast, and, where]}}
  %w = graph.where %a, %z, %n : (tensor<1x1x16x16xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x16x16xf32> loc("where")
  func.return %w : tensor<1x1x16x16xf32>
}

// CHECK-LABEL: func.func @bert
// CHECK-SAME:    (%[[M:.*]]: tensor<1x1x1x16xi64>)
// CHECK-NEXT:    %[[W:.*]] = graph.fusion %[[M]] {absorbed = ["cast", "and", "where"]} : (tensor<1x1x1x16xi64>) -> tensor<1x1x16x16xf32> {
// CHECK-NEXT:    ^{{.*}}(%[[BM:.*]]: tensor<1x1x1x16xi64>):
// CHECK-NEXT:      %[[C:.*]] = graph.cast %[[BM]] : (tensor<1x1x1x16xi64>) -> tensor<1x1x1x16xi1>
// CHECK-NEXT:      %[[T:.*]] = graph.fill 1 : tensor<1x1x16x1xi1>
// CHECK-NEXT:      %[[A:.*]] = graph.and %[[T]], %[[C]] : (tensor<1x1x16x1xi1>, tensor<1x1x1x16xi1>) -> tensor<1x1x16x16xi1>
// CHECK-NEXT:      %[[Z:.*]] = graph.fill 0.0 : tensor<f32>
// CHECK-NEXT:      %[[N:.*]] = graph.fill -3.4e+38 : tensor<f32>
// CHECK-NEXT:      %[[WB:.*]] = graph.where %[[A]], %[[Z]], %[[N]] : (tensor<1x1x16x16xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x16x16xf32>
// CHECK-NEXT:      graph.yield %[[WB]] : tensor<1x1x16x16xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[W]]

// -----

// GPT-2: the padding mask and a constant causal (lower-triangular) bool; the
// constant is cloned into the body, the fusion's only operand is the input.
func.func @gpt2(%m: tensor<1x1x1x16xi64>) -> tensor<1x1x16x16xf32> {
  %c = graph.cast %m : (tensor<1x1x1x16xi64>) -> tensor<1x1x1x16xi1> loc("cast")
  %causal = graph.constant dense<[[[[true, false, false, false, false, false, false, false, false, false, false, false, false, false, false, false], [true, true, false, false, false, false, false, false, false, false, false, false, false, false, false, false], [true, true, true, false, false, false, false, false, false, false, false, false, false, false, false, false], [true, true, true, true, false, false, false, false, false, false, false, false, false, false, false, false], [true, true, true, true, true, false, false, false, false, false, false, false, false, false, false, false], [true, true, true, true, true, true, false, false, false, false, false, false, false, false, false, false], [true, true, true, true, true, true, true, false, false, false, false, false, false, false, false, false], [true, true, true, true, true, true, true, true, false, false, false, false, false, false, false, false], [true, true, true, true, true, true, true, true, true, false, false, false, false, false, false, false], [true, true, true, true, true, true, true, true, true, true, false, false, false, false, false, false], [true, true, true, true, true, true, true, true, true, true, true, false, false, false, false, false], [true, true, true, true, true, true, true, true, true, true, true, true, false, false, false, false], [true, true, true, true, true, true, true, true, true, true, true, true, true, false, false, false], [true, true, true, true, true, true, true, true, true, true, true, true, true, true, false, false], [true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, false], [true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true]]]]> : tensor<1x1x16x16xi1> loc("causal")
  %a = graph.and %causal, %c : (tensor<1x1x16x16xi1>, tensor<1x1x1x16xi1>) -> tensor<1x1x16x16xi1> loc("and")
  %z = graph.fill 0.0 : tensor<f32>
  %n = graph.fill -3.4e38 : tensor<f32>
  // expected-remark@+1 {{applied MaskWhereFusionPass at loc("where"): absorbed [cast, and, where]}}
  %w = graph.where %a, %z, %n : (tensor<1x1x16x16xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x16x16xf32> loc("where")
  func.return %w : tensor<1x1x16x16xf32>
}

// CHECK-LABEL: func.func @gpt2
// CHECK-SAME:    (%[[M:.*]]: tensor<1x1x1x16xi64>)
// CHECK-NEXT:    %[[W:.*]] = graph.fusion %[[M]] {absorbed = ["cast", "and", "where"]} : (tensor<1x1x1x16xi64>) -> tensor<1x1x16x16xf32> {
// CHECK-NEXT:    ^{{.*}}(%[[BM:.*]]: tensor<1x1x1x16xi64>):
// CHECK-NEXT:      %[[C:.*]] = graph.cast %[[BM]] : (tensor<1x1x1x16xi64>) -> tensor<1x1x1x16xi1>
// CHECK-NEXT:      %[[K:.*]] = graph.constant dense<{{.*}}> : tensor<1x1x16x16xi1>
// CHECK-NEXT:      %[[A:.*]] = graph.and %[[K]], %[[C]]
// CHECK:           graph.where %[[A]]
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[W]]

// -----

// Not, or, xor and a comparison on int64 ids all join the condition:
// where(not(equal(ids, 0)) xor (or(p, q)), -1e4, 0).
func.func @logic(%ids: tensor<1x16xi64>, %p: tensor<1x16xi64>, %q: tensor<1x16xf32>) -> tensor<1x16xf32> {
  %zero = graph.constant dense<0> : tensor<i64>
  %e = graph.equal %ids, %zero : (tensor<1x16xi64>, tensor<i64>) -> tensor<1x16xi1> loc("eq")
  %ne = graph.not %e : (tensor<1x16xi1>) -> tensor<1x16xi1> loc("not")
  %pb = graph.cast %p : (tensor<1x16xi64>) -> tensor<1x16xi1> loc("pb")
  %qb = graph.cast %q : (tensor<1x16xf32>) -> tensor<1x16xi1> loc("qb")
  %o = graph.or %pb, %qb : (tensor<1x16xi1>, tensor<1x16xi1>) -> tensor<1x16xi1> loc("or")
  %x = graph.xor %ne, %o : (tensor<1x16xi1>, tensor<1x16xi1>) -> tensor<1x16xi1> loc("xor")
  %big = graph.fill -1.0e4 : tensor<f32>
  %z = graph.fill 0.0 : tensor<f32>
  // expected-remark@+1 {{applied MaskWhereFusionPass at loc("where"): absorbed [eq, not, pb, qb, or, xor, where]}}
  %w = graph.where %x, %big, %z : (tensor<1x16xi1>, tensor<f32>, tensor<f32>) -> tensor<1x16xf32> loc("where")
  func.return %w : tensor<1x16xf32>
}

// CHECK-LABEL: func.func @logic
// CHECK-SAME:    (%[[I:.*]]: tensor<1x16xi64>, %[[P:.*]]: tensor<1x16xi64>, %[[Q:.*]]: tensor<1x16xf32>)
// CHECK-NEXT:    %[[W:.*]] = graph.fusion %[[I]], %[[P]], %[[Q]] {absorbed = ["eq", "not", "pb", "qb", "or", "xor", "where"]} : (tensor<1x16xi64>, tensor<1x16xi64>, tensor<1x16xf32>) -> tensor<1x16xf32> {
// CHECK:           graph.equal
// CHECK-NEXT:      graph.not
// CHECK-NEXT:      graph.cast
// CHECK-NEXT:      graph.cast
// CHECK-NEXT:      graph.or
// CHECK-NEXT:      graph.xor
// CHECK:           graph.where
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[W]]

// -----

// The cast's result is also returned: it stays a tensor of its own for the
// return, and the fusion computes it again from the int64 input (a bool
// tensor between kernels has no AI-core kernel).
func.func @cast_used_outside(%m: tensor<1x1x1x16xi64>) -> (tensor<1x1x16x16xf32>, tensor<1x1x1x16xi1>) {
  %c = graph.cast %m : (tensor<1x1x1x16xi64>) -> tensor<1x1x1x16xi1> loc("cast")
  %t = graph.fill 1 : tensor<1x1x16x1xi1>
  %a = graph.and %t, %c : (tensor<1x1x16x1xi1>, tensor<1x1x1x16xi1>) -> tensor<1x1x16x16xi1> loc("and")
  %z = graph.fill 0.0 : tensor<f32>
  %n = graph.fill -3.4e38 : tensor<f32>
  // expected-remark@+1 {{applied MaskWhereFusionPass at loc("where"): absorbed [and, where]}}
  %w = graph.where %a, %z, %n : (tensor<1x1x16x16xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x16x16xf32> loc("where")
  func.return %w, %c : tensor<1x1x16x16xf32>, tensor<1x1x1x16xi1>
}

// CHECK-LABEL: func.func @cast_used_outside
// CHECK-SAME:    (%[[M:.*]]: tensor<1x1x1x16xi64>)
// CHECK-NEXT:    %[[C:.*]] = graph.cast %[[M]] : (tensor<1x1x1x16xi64>) -> tensor<1x1x1x16xi1>
// CHECK-NEXT:    %[[W:.*]] = graph.fusion %[[M]] {absorbed = ["and", "where"]} : (tensor<1x1x1x16xi64>) -> tensor<1x1x16x16xf32> {
// CHECK-NEXT:    ^{{.*}}(%[[BM:.*]]: tensor<1x1x1x16xi64>):
// CHECK-NEXT:      %[[BC:.*]] = graph.cast %[[BM]]
// CHECK:           graph.and %{{.*}}, %[[BC]]
// CHECK:           graph.where
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[W]], %[[C]]

// -----

// A condition that is a function argument: no bool producer to absorb, no
// fusion. A cast read by two wheres (DeBERTa's layers share their padding
// mask): the first where's fusion computes it again, the last absorbs it.
func.func @no_producer(%b: tensor<1x16xi1>, %x: tensor<1x16xf32>, %m: tensor<1x16xi64>) -> (tensor<1x16xf32>, tensor<1x16xf32>, tensor<1x16xf32>) {
  %z = graph.fill 0.0 : tensor<f32>
  %w = graph.where %b, %x, %z : (tensor<1x16xi1>, tensor<1x16xf32>, tensor<f32>) -> tensor<1x16xf32> loc("w0")
  %c = graph.cast %m : (tensor<1x16xi64>) -> tensor<1x16xi1> loc("cast")
  // expected-remark@+1 {{applied MaskWhereFusionPass at loc("w1"): absorbed [w1]}}
  %w1 = graph.where %c, %x, %z : (tensor<1x16xi1>, tensor<1x16xf32>, tensor<f32>) -> tensor<1x16xf32> loc("w1")
  // expected-remark@+1 {{applied MaskWhereFusionPass at loc("w2"): absorbed [cast, w2]}}
  %w2 = graph.where %c, %z, %x : (tensor<1x16xi1>, tensor<f32>, tensor<1x16xf32>) -> tensor<1x16xf32> loc("w2")
  func.return %w, %w1, %w2 : tensor<1x16xf32>, tensor<1x16xf32>, tensor<1x16xf32>
}

// CHECK-LABEL: func.func @no_producer
// CHECK-SAME:    (%[[B:.*]]: tensor<1x16xi1>, %[[X:.*]]: tensor<1x16xf32>, %[[M:.*]]: tensor<1x16xi64>)
// CHECK:         graph.where %[[B]], %{{.*}}, %{{.*}} : (tensor<1x16xi1>, tensor<1x16xf32>, tensor<f32>) -> tensor<1x16xf32>
// CHECK-NEXT:    graph.fusion %[[M]], %[[X]] {absorbed = ["w1"]}
// CHECK-NEXT:    ^{{.*}}(%[[M1:.*]]: tensor<1x16xi64>, %{{.*}}: tensor<1x16xf32>):
// CHECK-NEXT:      graph.cast %[[M1]]
// CHECK:         graph.fusion %[[M]], %[[X]] {absorbed = ["cast", "w2"]}
// CHECK-NEXT:    ^{{.*}}(%[[M2:.*]]: tensor<1x16xi64>, %{{.*}}: tensor<1x16xf32>):
// CHECK-NEXT:      graph.cast %[[M2]]
// CHECK-NOT:     graph.cast
