// graph-fuse, scaled dot-product attention (AttentionFusionPass): anchored on
// a softmax over the last axis whose only user is a product with the values,
// the chain matmul(q, k^T) -> scalar muls/divs -> mask adds -> softmax ->
// matmul(., v) becomes one graph.attention (keys as rows, the masks in
// mask(...), the scalar factors folded into `scale`), so the scores are never
// stored. A transpose that only makes k^T is absorbed: the keys are one
// transpose of its source with the last two perm entries swapped. Misses are
// remarks; the fused IR prints and parses back (second RUN). With the rule
// switched off (ATC's switch file) no graph.attention is made and every
// chain it would fuse is a "rule switched off" remark; chains it misses are
// still reported with their reasons (OFF, OFF-LOG).
// RUN: ge-opt %s --split-input-file -p graph-fuse --verify-diagnostics | filecheck %s
// RUN: ge-opt %s --split-input-file -p graph-fuse | ge-opt --split-input-file | filecheck %s
// RUN: ge-opt %s --split-input-file -p graph-fuse --fusion-switch-file=%inputs/attention-off.cfg | filecheck %s --check-prefix=OFF
// RUN: ge-opt %s --split-input-file -p graph-fuse --fusion-switch-file=%inputs/attention-off.cfg --log=info 2>&1 | filecheck %s --check-prefix=OFF-LOG

// BERT's self-attention after the head split: the keys [B, S, H, D] are
// transposed to k^T [B, H, D, S] (perm 0,2,3,1), the scores scaled by
// 1/sqrt(D) = 0.25 and the extended mask [B, 1, 1, S] added. The transpose
// is absorbed; the keys as rows [B, H, S, D] are perm 0,2,1,3 of its source.
func.func @bert(%q: tensor<1x4x16x16xf32>, %k: tensor<1x16x4x16xf32>, %v: tensor<1x4x16x16xf32>, %m: tensor<1x1x1x16xf32>) -> tensor<1x4x16x16xf32> {
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x16x4x16xf32>) -> tensor<1x4x16x16xf32> loc("kt")
  %s = graph.matmul %q, %kt : (tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32> loc("qk")
  %c = graph.fill 0.25 : tensor<f32>
  %sc = graph.mul %s, %c : (tensor<1x4x16x16xf32>, tensor<f32>) -> tensor<1x4x16x16xf32> loc("scale")
  %sm = graph.add %sc, %m : (tensor<1x4x16x16xf32>, tensor<1x1x1x16xf32>) -> tensor<1x4x16x16xf32> loc("mask")
  // expected-remark@+1 {{applied AttentionFusionPass at loc("sm"): absorbed [kt, qk, scale, mask, sm, pv]}}
  %p = graph.softmax %sm {axis = -1 : i64} : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32> loc("sm")
  %o = graph.matmul %p, %v : (tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32> loc("pv")
  func.return %o : tensor<1x4x16x16xf32>
}

// CHECK-LABEL: func.func @bert
// CHECK-SAME:    (%[[Q:.*]]: tensor<1x4x16x16xf32>, %[[K:.*]]: tensor<1x16x4x16xf32>, %[[V:.*]]: tensor<1x4x16x16xf32>, %[[M:.*]]: tensor<1x1x1x16xf32>)
// CHECK-NEXT:    %[[KR:.*]] = graph.transpose %[[K]] {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x4x16xf32>) -> tensor<1x4x16x16xf32>
// CHECK-NEXT:    %[[O:.*]] = graph.attention %[[Q]], %[[KR]], %[[V]] mask(%[[M]] : tensor<1x1x1x16xf32>) {absorbed = ["kt", "qk", "scale", "mask", "sm", "pv"], scale = 2.500000e-01 : f32} : tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32> -> tensor<1x4x16x16xf32>
// CHECK-NEXT:    func.return %[[O]]

// Switched off: the chain stays (the scale and mask become a loop fusion of
// their own), the keys' transpose is not touched.
// OFF-LABEL: func.func @bert
// OFF-NOT:     graph.attention
// OFF:         graph.transpose %{{.*}} {perm = array<i64: 0, 2, 3, 1>}
// OFF-NEXT:    graph.matmul
// OFF-NEXT:    graph.fusion
// OFF-NOT:     graph.attention
// OFF:         graph.softmax
// OFF-NEXT:    graph.matmul
// OFF-NEXT:    func.return
// OFF-LOG-NOT: applied AttentionFusionPass
// OFF-LOG:     'graph.softmax' op missed AttentionFusionPass at loc("sm"): rule switched off

// -----

// A 3-D product whose right operand is k^T itself (no transpose to absorb),
// the scores divided by the scalar constant sqrt(64) = 8: scale = 1/8, no
// mask; the keys as rows are a new transpose of k^T (perm 0,2,1).
func.func @div(%q: tensor<2x8x64xf32>, %kt: tensor<2x64x8xf32>, %v: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  %s = graph.matmul %q, %kt : (tensor<2x8x64xf32>, tensor<2x64x8xf32>) -> tensor<2x8x8xf32> loc("qk")
  %c = graph.constant dense<8.0> : tensor<f32>
  %sc = graph.div %s, %c : (tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8x8xf32> loc("div")
  // expected-remark@+1 {{applied AttentionFusionPass at loc("sm"): absorbed [qk, div, sm, pv]}}
  %p = graph.softmax %sc {axis = 2 : i64} : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32> loc("sm")
  %o = graph.matmul %p, %v : (tensor<2x8x8xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32> loc("pv")
  func.return %o : tensor<2x8x32xf32>
}

// CHECK-LABEL: func.func @div
// CHECK-SAME:    (%[[Q:.*]]: tensor<2x8x64xf32>, %[[KT:.*]]: tensor<2x64x8xf32>, %[[V:.*]]: tensor<2x8x32xf32>)
// CHECK-NEXT:    %[[KR:.*]] = graph.transpose %[[KT]] {perm = array<i64: 0, 2, 1>} : (tensor<2x64x8xf32>) -> tensor<2x8x64xf32>
// CHECK-NEXT:    %[[O:.*]] = graph.attention %[[Q]], %[[KR]], %[[V]] {absorbed = ["qk", "div", "sm", "pv"], scale = 1.250000e-01 : f32} : tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x32xf32> -> tensor<2x8x32xf32>
// CHECK-NEXT:    func.return %[[O]]
// OFF-LABEL: func.func @div
// OFF-NOT:     graph.attention
// OFF:         func.return
// OFF-LOG:     'graph.softmax' op missed AttentionFusionPass at loc("sm"): rule switched off

// -----

// T5-style: two additive terms, a position bias [B, H, S, S] and then a
// padding mask [B, 1, 1, S] (written mask + scores), no scale. Both go to
// mask(...) in the order they are added. The keys' transpose swaps only the
// last two dims: the keys as rows are its source itself, no new transpose.
func.func @bias_and_mask(%q: tensor<1x4x16x8xf32>, %k: tensor<1x4x16x8xf32>, %v: tensor<1x4x16x8xf32>, %pb: tensor<1x4x16x16xf32>, %m: tensor<1x1x1x16xf32>) -> tensor<1x4x16x8xf32> {
  %kt = graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x16x8xf32>) -> tensor<1x4x8x16xf32> loc("kt")
  %s = graph.matmul %q, %kt : (tensor<1x4x16x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x16x16xf32> loc("qk")
  %a1 = graph.add %s, %pb : (tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32> loc("bias")
  %a2 = graph.add %m, %a1 : (tensor<1x1x1x16xf32>, tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32> loc("mask")
  // expected-remark@+1 {{applied AttentionFusionPass at loc("sm"): absorbed [kt, qk, bias, mask, sm, pv]}}
  %p = graph.softmax %a2 {axis = -1 : i64} : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32> loc("sm")
  %o = graph.matmul %p, %v : (tensor<1x4x16x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x16x8xf32> loc("pv")
  func.return %o : tensor<1x4x16x8xf32>
}

// CHECK-LABEL: func.func @bias_and_mask
// CHECK-SAME:    (%[[Q:.*]]: tensor<1x4x16x8xf32>, %[[K:.*]]: tensor<1x4x16x8xf32>, %[[V:.*]]: tensor<1x4x16x8xf32>, %[[PB:.*]]: tensor<1x4x16x16xf32>, %[[M:.*]]: tensor<1x1x1x16xf32>)
// CHECK-NEXT:    %[[O:.*]] = graph.attention %[[Q]], %[[K]], %[[V]] mask(%[[PB]], %[[M]] : tensor<1x4x16x16xf32>, tensor<1x1x1x16xf32>) {absorbed = ["kt", "qk", "bias", "mask", "sm", "pv"]} : tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32> -> tensor<1x4x16x8xf32>
// CHECK-NEXT:    func.return %[[O]]
// OFF-LABEL: func.func @bias_and_mask
// OFF-NOT:     graph.attention
// OFF:         func.return
// OFF-LOG:     'graph.softmax' op missed AttentionFusionPass at loc("sm"): rule switched off

// -----

// Swin / SegFormer: q is scaled before the product, the scores are not.
// The mul on q stays where it is and feeds the attention, which has no
// scale (1.0 is not printed).
func.func @swin(%q: tensor<4x16x8xf32>, %kt: tensor<4x8x16xf32>, %v: tensor<4x16x8xf32>) -> tensor<4x16x8xf32> {
  %c = graph.fill 0.125 : tensor<f32>
  %qs = graph.mul %q, %c : (tensor<4x16x8xf32>, tensor<f32>) -> tensor<4x16x8xf32> loc("qscale")
  %s = graph.matmul %qs, %kt : (tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<4x16x16xf32> loc("qk")
  // expected-remark@+1 {{applied AttentionFusionPass at loc("sm"): absorbed [qk, sm, pv]}}
  %p = graph.softmax %s {axis = -1 : i64} : (tensor<4x16x16xf32>) -> tensor<4x16x16xf32> loc("sm")
  %o = graph.matmul %p, %v : (tensor<4x16x16xf32>, tensor<4x16x8xf32>) -> tensor<4x16x8xf32> loc("pv")
  func.return %o : tensor<4x16x8xf32>
}

// CHECK-LABEL: func.func @swin
// CHECK-SAME:    (%[[Q:.*]]: tensor<4x16x8xf32>, %[[KT:.*]]: tensor<4x8x16xf32>, %[[V:.*]]: tensor<4x16x8xf32>)
// CHECK-NEXT:    %[[C:.*]] = graph.fill 0.125 : tensor<f32>
// CHECK-NEXT:    %[[QS:.*]] = graph.mul %[[Q]], %[[C]] : (tensor<4x16x8xf32>, tensor<f32>) -> tensor<4x16x8xf32>
// CHECK-NEXT:    %[[KR:.*]] = graph.transpose %[[KT]] {perm = array<i64: 0, 2, 1>} : (tensor<4x8x16xf32>) -> tensor<4x16x8xf32>
// CHECK-NEXT:    %[[O:.*]] = graph.attention %[[QS]], %[[KR]], %[[V]] {absorbed = ["qk", "sm", "pv"]} : tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32> -> tensor<4x16x8xf32>
// CHECK-NEXT:    func.return %[[O]]
// OFF-LABEL: func.func @swin
// OFF-NOT:     graph.attention
// OFF:         func.return
// OFF-LOG:     'graph.softmax' op missed AttentionFusionPass at loc("sm"): rule switched off

// -----

// The keys' transpose is also returned: it is not absorbed (it stays, as
// k^T) and the keys as rows are a new transpose of k^T.
func.func @kt_returned(%q: tensor<1x4x16x8xf32>, %k: tensor<1x16x4x8xf32>, %v: tensor<1x4x16x8xf32>) -> (tensor<1x4x16x8xf32>, tensor<1x4x8x16xf32>) {
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x16x4x8xf32>) -> tensor<1x4x8x16xf32> loc("kt")
  %s = graph.matmul %q, %kt : (tensor<1x4x16x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x16x16xf32> loc("qk")
  // expected-remark@+1 {{applied AttentionFusionPass at loc("sm"): absorbed [qk, sm, pv]}}
  %p = graph.softmax %s {axis = -1 : i64} : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32> loc("sm")
  %o = graph.matmul %p, %v : (tensor<1x4x16x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x16x8xf32> loc("pv")
  func.return %o, %kt : tensor<1x4x16x8xf32>, tensor<1x4x8x16xf32>
}

// CHECK-LABEL: func.func @kt_returned
// CHECK-SAME:    (%[[Q:.*]]: tensor<1x4x16x8xf32>, %[[K:.*]]: tensor<1x16x4x8xf32>, %[[V:.*]]: tensor<1x4x16x8xf32>)
// CHECK-NEXT:    %[[KT:.*]] = graph.transpose %[[K]] {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x16x4x8xf32>) -> tensor<1x4x8x16xf32>
// CHECK-NEXT:    %[[KR:.*]] = graph.transpose %[[KT]] {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x8x16xf32>) -> tensor<1x4x16x8xf32>
// CHECK-NEXT:    %[[O:.*]] = graph.attention %[[Q]], %[[KR]], %[[V]] {absorbed = ["qk", "sm", "pv"]}
// CHECK-NEXT:    func.return %[[O]], %[[KT]]
// OFF-LABEL: func.func @kt_returned
// OFF-NOT:     graph.attention
// OFF:         func.return
// OFF-LOG:     'graph.softmax' op missed AttentionFusionPass at loc("sm"): rule switched off

// -----

// Missed: the scale is applied after the mask is added, (s + m) * c: the
// mask would need scaling too, and graph.attention adds its masks as they
// are. The attention chain stays; the later epilogue rule
// (MatMulBiasAddFusionPass) still makes the mask add the product's bias.
func.func @scale_after_mask(%q: tensor<1x4x16x8xf32>, %kt: tensor<1x4x8x16xf32>, %v: tensor<1x4x16x8xf32>, %m: tensor<1x1x1x16xf32>) -> tensor<1x4x16x8xf32> {
  // expected-remark@+1 {{applied MatMulBiasAddFusionPass at loc("qk"): absorbed [qk, mask]}}
  %s = graph.matmul %q, %kt : (tensor<1x4x16x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x16x16xf32> loc("qk")
  %a = graph.add %s, %m : (tensor<1x4x16x16xf32>, tensor<1x1x1x16xf32>) -> tensor<1x4x16x16xf32> loc("mask")
  %c = graph.fill 0.25 : tensor<f32>
  %sc = graph.mul %a, %c : (tensor<1x4x16x16xf32>, tensor<f32>) -> tensor<1x4x16x16xf32> loc("scale")
  // expected-remark@+1 {{missed AttentionFusionPass at loc("sm"): unsupported attribute (the scores are scaled after the mask is added)}}
  %p = graph.softmax %sc {axis = -1 : i64} : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32> loc("sm")
  %o = graph.matmul %p, %v : (tensor<1x4x16x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x16x8xf32> loc("pv")
  func.return %o : tensor<1x4x16x8xf32>
}

// CHECK-LABEL: func.func @scale_after_mask
// CHECK-NEXT:    %[[A:.*]] = graph.matmul %{{.*}}, %{{.*}}, %{{.*}} {absorbed = ["qk", "mask"]}
// CHECK-NEXT:    %[[C:.*]] = graph.fill 0.25 : tensor<f32>
// CHECK-NEXT:    %[[SC:.*]] = graph.mul %[[A]], %[[C]]
// CHECK-NEXT:    %[[P:.*]] = graph.softmax %[[SC]] {axis = -1 : i64}
// CHECK-NEXT:    %[[O:.*]] = graph.matmul %[[P]], %{{.*}} : (tensor<1x4x16x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x16x8xf32>
// CHECK-NEXT:    func.return %[[O]]
// The rule's own misses are still reported when it is switched off.
// OFF-LOG:     'graph.softmax' op missed AttentionFusionPass at loc("sm"): unsupported attribute (the scores are scaled after the mask is added)

// -----

// Missed: the scores (an intermediate of the chain) are also returned;
// the chain stays as it is.
func.func @scores_returned(%q: tensor<1x4x16x8xf32>, %kt: tensor<1x4x8x16xf32>, %v: tensor<1x4x16x8xf32>) -> (tensor<1x4x16x8xf32>, tensor<1x4x16x16xf32>) {
  %s = graph.matmul %q, %kt : (tensor<1x4x16x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x16x16xf32> loc("qk")
  %c = graph.fill 0.25 : tensor<f32>
  %sc = graph.mul %s, %c : (tensor<1x4x16x16xf32>, tensor<f32>) -> tensor<1x4x16x16xf32> loc("scale")
  // expected-remark@+1 {{missed AttentionFusionPass at loc("sm"): intermediate has other users (graph.matmul at loc("qk") is also used by func.return)}}
  %p = graph.softmax %sc {axis = -1 : i64} : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32> loc("sm")
  %o = graph.matmul %p, %v : (tensor<1x4x16x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x16x8xf32> loc("pv")
  func.return %o, %s : tensor<1x4x16x8xf32>, tensor<1x4x16x16xf32>
}

// CHECK-LABEL: func.func @scores_returned
// CHECK-NEXT:    %[[S:.*]] = graph.matmul
// CHECK-NEXT:    graph.fill 0.25
// CHECK-NEXT:    %[[SC:.*]] = graph.mul %[[S]]
// CHECK-NEXT:    %[[P:.*]] = graph.softmax %[[SC]]
// CHECK-NEXT:    %[[O:.*]] = graph.matmul %[[P]]
// CHECK-NEXT:    func.return %[[O]], %[[S]]
// OFF-LOG:     'graph.softmax' op missed AttentionFusionPass at loc("sm"): intermediate has other users

// -----

// The probabilities (the softmax's result) are also returned, as with
// output_attentions: a miss naming the other user; the chain stays as it is.
func.func @probs_returned(%q: tensor<1x4x16x8xf32>, %kt: tensor<1x4x8x16xf32>, %v: tensor<1x4x16x8xf32>) -> (tensor<1x4x16x8xf32>, tensor<1x4x16x16xf32>) {
  %s = graph.matmul %q, %kt : (tensor<1x4x16x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x16x16xf32> loc("qk")
  // expected-remark@+1 {{missed AttentionFusionPass at loc("sm"): intermediate has other users (graph.softmax at loc("sm") is also used by func.return)}}
  %p = graph.softmax %s {axis = -1 : i64} : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32> loc("sm")
  %o = graph.matmul %p, %v : (tensor<1x4x16x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x16x8xf32> loc("pv")
  func.return %o, %p : tensor<1x4x16x8xf32>, tensor<1x4x16x16xf32>
}

// CHECK-LABEL: func.func @probs_returned
// CHECK-NEXT:    %[[S:.*]] = graph.matmul
// CHECK-NEXT:    %[[P:.*]] = graph.softmax %[[S]]
// CHECK-NEXT:    %[[O:.*]] = graph.matmul %[[P]]
// CHECK-NEXT:    func.return %[[O]], %[[P]]

// -----

// Missed: a "scalar" scale whose shape broadcasts the scores to a larger
// batch ([2, 1, 1, 1] times [1, 4, 16, 16]): the attention of q, k and v
// would lose the broadcast.
func.func @broadcast_scale(%q: tensor<1x4x16x8xf32>, %kt: tensor<1x4x8x16xf32>, %v: tensor<1x4x16x8xf32>) -> tensor<2x4x16x8xf32> {
  %s = graph.matmul %q, %kt : (tensor<1x4x16x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x16x16xf32> loc("qk")
  %c = graph.fill 0.25 : tensor<2x1x1x1xf32>
  %sc = graph.mul %s, %c : (tensor<1x4x16x16xf32>, tensor<2x1x1x1xf32>) -> tensor<2x4x16x16xf32> loc("scale")
  // expected-remark@+1 {{missed AttentionFusionPass at loc("sm"): unsupported attribute (graph.mul broadcasts the scores to 2x4x16x16)}}
  %p = graph.softmax %sc {axis = -1 : i64} : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32> loc("sm")
  %o = graph.matmul %p, %v : (tensor<2x4x16x16xf32>, tensor<1x4x16x8xf32>) -> tensor<2x4x16x8xf32> loc("pv")
  func.return %o : tensor<2x4x16x8xf32>
}

// CHECK-LABEL: func.func @broadcast_scale
// CHECK-NEXT:    graph.matmul
// CHECK:         graph.mul
// CHECK-NEXT:    graph.softmax
// CHECK-NEXT:    graph.matmul
// CHECK-NEXT:    func.return

// -----

// Missed: the softmax is over the queries (axis 2 of the scores), not the keys.
func.func @query_axis(%q: tensor<1x4x16x8xf32>, %kt: tensor<1x4x8x16xf32>, %v: tensor<1x4x16x8xf32>) -> tensor<1x4x16x8xf32> {
  %s = graph.matmul %q, %kt : (tensor<1x4x16x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x16x16xf32> loc("qk")
  // expected-remark@+1 {{missed AttentionFusionPass at loc("sm"): unsupported attribute (the softmax is not over the keys (the last axis))}}
  %p = graph.softmax %s {axis = 2 : i64} : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32> loc("sm")
  %o = graph.matmul %p, %v : (tensor<1x4x16x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x16x8xf32> loc("pv")
  func.return %o : tensor<1x4x16x8xf32>
}

// CHECK-LABEL: func.func @query_axis
// CHECK-NEXT:    graph.matmul
// CHECK-NEXT:    graph.softmax %{{.*}} {axis = 2 : i64}
// CHECK-NEXT:    graph.matmul
// CHECK-NEXT:    func.return
// OFF-LOG:     'graph.softmax' op missed AttentionFusionPass at loc("sm"): unsupported attribute (the softmax is not over the keys (the last axis))

// -----

// Not attention: a softmax whose result is multiplied by a constant weight
// (a classifier over softmax features) is a projection; no remark, no change.
func.func @projection(%x: tensor<2x8x16xf32>, %y: tensor<2x16x8xf32>) -> tensor<2x8x4xf32> {
  %s = graph.matmul %x, %y : (tensor<2x8x16xf32>, tensor<2x16x8xf32>) -> tensor<2x8x8xf32> loc("mm")
  %p = graph.softmax %s {axis = -1 : i64} : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32> loc("sm")
  %w = graph.constant dense<0.5> : tensor<8x4xf32>
  %o = graph.matmul %p, %w : (tensor<2x8x8xf32>, tensor<8x4xf32>) -> tensor<2x8x4xf32> loc("proj")
  func.return %o : tensor<2x8x4xf32>
}

// CHECK-LABEL: func.func @projection
// CHECK-NEXT:    %[[S:.*]] = graph.matmul
// CHECK-NEXT:    %[[P:.*]] = graph.softmax %[[S]] {axis = -1 : i64}
// CHECK-NEXT:    %[[W:.*]] = graph.constant
// CHECK-NEXT:    %[[O:.*]] = graph.matmul %[[P]], %[[W]]
// CHECK-NEXT:    func.return %[[O]]
// OFF-LOG-NOT: applied AttentionFusionPass

// -----

// torch's sdpa exports (transformers' default attention: BERT, Llama, BART,
// Mistral) zero the probabilities of a fully masked row (all scores -inf:
// softmax gives NaN) with where(is_nan(p), 0, p) before the product with the
// values: the guard is absorbed too, as zero_empty_rows.
func.func @nan_guard(%q: tensor<1x4x16x8xf32>, %kt: tensor<1x4x8x16xf32>, %v: tensor<1x4x16x8xf32>) -> tensor<1x4x16x8xf32> {
  %s = graph.matmul %q, %kt : (tensor<1x4x16x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x16x16xf32> loc("qk")
  // expected-remark@+1 {{applied AttentionFusionPass at loc("sm"): absorbed [qk, sm, isnan, guard, pv]}}
  %p = graph.softmax %s {axis = -1 : i64} : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32> loc("sm")
  %n = graph.is_nan %p : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xi1> loc("isnan")
  %z = graph.fill 0.0 : tensor<f32>
  %g = graph.where %n, %z, %p : (tensor<1x4x16x16xi1>, tensor<f32>, tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32> loc("guard")
  %o = graph.matmul %g, %v : (tensor<1x4x16x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x16x8xf32> loc("pv")
  func.return %o : tensor<1x4x16x8xf32>
}

// CHECK-LABEL: func.func @nan_guard
// CHECK:         %[[K:.*]] = graph.transpose %kt
// CHECK-NEXT:    %[[O:.*]] = graph.attention %q, %[[K]], %v {absorbed = ["qk", "sm", "isnan", "guard", "pv"], zero_empty_rows}
// CHECK-NEXT:    func.return %[[O]]

// -----

// A guard that replaces NaN by something else than 0 is not torch's: the
// product reads the where, not the softmax, and nothing fuses.
func.func @other_guard(%q: tensor<1x4x16x8xf32>, %kt: tensor<1x4x8x16xf32>, %v: tensor<1x4x16x8xf32>) -> tensor<1x4x16x8xf32> {
  %s = graph.matmul %q, %kt : (tensor<1x4x16x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x16x16xf32> loc("qk")
  %p = graph.softmax %s {axis = -1 : i64} : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32> loc("sm")
  %n = graph.is_nan %p : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xi1> loc("isnan")
  %h = graph.fill 0.5 : tensor<f32>
  // expected-remark@+1 {{applied MaskWhereFusionPass at loc("guard"): absorbed [isnan, guard]}}
  %g = graph.where %n, %h, %p : (tensor<1x4x16x16xi1>, tensor<f32>, tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32> loc("guard")
  %o = graph.matmul %g, %v : (tensor<1x4x16x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x16x8xf32> loc("pv")
  func.return %o : tensor<1x4x16x8xf32>
}

// CHECK-LABEL: func.func @other_guard
// CHECK-NOT:     graph.attention
// CHECK:         graph.softmax

// -----

// Missed: one key (MobileViT on a small image attends over a single
// patch): its softmax is 1; the chain stays.
func.func @one_key(%q: tensor<4x4x1x16xf32>, %kt: tensor<4x4x16x1xf32>, %v: tensor<4x4x1x16xf32>) -> tensor<4x4x1x16xf32> {
  %s = graph.matmul %q, %kt : (tensor<4x4x1x16xf32>, tensor<4x4x16x1xf32>) -> tensor<4x4x1x1xf32> loc("qk")
  // expected-remark@+1 {{missed AttentionFusionPass at loc("sm"): unsupported attribute (one key: its softmax is 1, nothing to fuse)}}
  %p = graph.softmax %s {axis = -1 : i64} : (tensor<4x4x1x1xf32>) -> tensor<4x4x1x1xf32> loc("sm")
  %o = graph.matmul %p, %v : (tensor<4x4x1x1xf32>, tensor<4x4x1x16xf32>) -> tensor<4x4x1x16xf32> loc("pv")
  func.return %o : tensor<4x4x1x16xf32>
}

// CHECK-LABEL: func.func @one_key
// CHECK-NOT:     graph.attention
// CHECK:         graph.softmax
