// graph-canonicalize: a softmax along an axis of one element is exp(x - x).
// RUN: ge-opt %s -p graph-canonicalize | filecheck %s
// RUN: ge-opt %s -p graph-canonicalize --log=info 2>&1 >/dev/null | filecheck %s --check-prefix=LOC

// A softmax along an axis of one element (MobileViT's attention over one
// patch) is exp(x - x): 1, or NaN where x is infinite, as softmax gives.
// CHECK-LABEL: func.func @softmax_of_one_key
// CHECK-NEXT:    %[[Z:.*]] = graph.sub %s, %s
// CHECK-NEXT:    %[[E:.*]] = graph.exp %[[Z]]
// CHECK-NEXT:    func.return %[[E]]
// CHECK-LABEL: func.func @softmax_of_keys
// CHECK-NEXT:    graph.softmax
func.func @softmax_of_one_key(%s: tensor<4x4x1x1xf32>) -> tensor<4x4x1x1xf32> {
  %p = graph.softmax %s {axis = -1 : i64} : (tensor<4x4x1x1xf32>) -> tensor<4x4x1x1xf32> loc("sm1")
  func.return %p : tensor<4x4x1x1xf32>
}
func.func @softmax_of_keys(%s: tensor<4x4x1x2xf32>) -> tensor<4x4x1x2xf32> {
  %p = graph.softmax %s {axis = -1 : i64} : (tensor<4x4x1x2xf32>) -> tensor<4x4x1x2xf32>
  func.return %p : tensor<4x4x1x2xf32>
}
// LOC: INFO: rewrote graph.softmax at loc("sm1"): a softmax over one element is exp(x - x)
