// graph-canonicalize: a reduction over axes of one element is a view.
// RUN: ge-opt %s -p graph-canonicalize | filecheck %s
// RUN: ge-opt %s -p graph-canonicalize --log=info 2>&1 >/dev/null | filecheck %s --check-prefix=LOG

// LeViT's mean over its one remaining token; a max over a unit dim with
// keepdims (a view of the same shape: no op). A reduction over a dim of more than one element stays.
// CHECK-LABEL: func.func @mean_of_one_token
// CHECK-NEXT:    %[[V:.*]] = graph.reshape %x {shape = array<i64: 1, 64>} : (tensor<1x1x64xf32>) -> tensor<1x64xf32>
// CHECK-NEXT:    func.return %[[V]]
func.func @mean_of_one_token(%x: tensor<1x1x64xf32>) -> tensor<1x64xf32> {
  %y = graph.reduce_mean %x {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<1x1x64xf32>) -> tensor<1x64xf32> loc("pool")
  func.return %y : tensor<1x64xf32>
}
// CHECK-LABEL: func.func @max_keepdims
// CHECK-NEXT:    func.return %x
func.func @max_keepdims(%x: tensor<2x1x8xf32>) -> tensor<2x1x8xf32> {
  %y = graph.reduce_max %x {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x1x8xf32>) -> tensor<2x1x8xf32>
  func.return %y : tensor<2x1x8xf32>
}
// CHECK-LABEL: func.func @sum_of_two
// CHECK-NEXT:    graph.reduce_sum
func.func @sum_of_two(%x: tensor<2x2x8xf32>) -> tensor<2x8xf32> {
  %y = graph.reduce_sum %x {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<2x2x8xf32>) -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}
// LOG: INFO: rewrote graph.reduce_mean at loc("pool"): a reduction over one element is a view
