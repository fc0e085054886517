// A split of a merged query/key/value product (HorizontalMatMulFusionPass)
// whose results are read only as attention heads makes no kernel: each head
// block is a window of the product's result -- its tile.load reads the
// merged tensor viewed as [1, 4, 6, 2] (the last dim 12 in heads of 2) at
// the head's offset, through the heads' permuted strides
// (legality.head_windows, TensorView.window).
// RUN: ge-opt %s --split-input-file -p graph-partition,convert-graph-to-tile | filecheck %s
// RUN: ge-opt %s --split-input-file -p "graph-partition{precision-mode=must_keep_origin_dtype},convert-graph-to-tile{precision-mode=must_keep_origin_dtype}" | filecheck %s --check-prefix=FP32

func.func @qkv(%x: tensor<1x4x4xf32>, %m: tensor<1x1x1x4xf32>) -> tensor<1x2x4x2xf32> {
  %w = graph.fill 0.5 : tensor<4x12xf32>
  %p = graph.matmul %x, %w : (tensor<1x4x4xf32>, tensor<4x12xf32>) -> tensor<1x4x12xf32>
  %q1, %k1, %v1 = graph.split %p {axis = 2 : i64, split = array<i64: 4, 4, 4>} : (tensor<1x4x12xf32>) -> (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>)
  %q2 = graph.reshape %q1 {shape = array<i64: 1, 4, 2, 2>} : (tensor<1x4x4xf32>) -> tensor<1x4x2x2xf32>
  %q3 = graph.transpose %q2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %k2 = graph.reshape %k1 {shape = array<i64: 1, 4, 2, 2>} : (tensor<1x4x4xf32>) -> tensor<1x4x2x2xf32>
  %k3 = graph.transpose %k2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %v2 = graph.reshape %v1 {shape = array<i64: 1, 4, 2, 2>} : (tensor<1x4x4xf32>) -> tensor<1x4x2x2xf32>
  %v3 = graph.transpose %v2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %o = graph.attention %q3, %k3, %v3 mask(%m : tensor<1x1x1x4xf32>) {scale = 0.5 : f32} : tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32> -> tensor<1x2x4x2xf32>
  func.return %o : tensor<1x2x4x2xf32>
}

// force_fp16: the product, then the attention kernel reading its three
// operands from the product's result (no copy, no transpose kernel).
// CHECK-LABEL: tile.program
// CHECK-NOT:     kind = "copy"
// CHECK:         tile.kernel "{{.*}}_matmul"
// CHECK:           tile.store %{{.*}}, "[[P:matmul[_0-9]*]]" : tensor<1x4x12xf16>
// CHECK-NOT:     kind = "copy"
// CHECK:         tile.kernel "{{.*}}_attention"
// CHECK-NEXT:      %[[Q:.*]] = tile.load "[[P]]" {perm = array<i64: 0, 2, 1, 3>, source = array<i64: 1, 4, 6, 2>, offsets = array<i64: 0, 0, 0, 0>} : tensor<1x2x4x2xf16>
// CHECK-NEXT:      %[[K:.*]] = tile.load "[[P]]" {perm = array<i64: 0, 2, 1, 3>, source = array<i64: 1, 4, 6, 2>, offsets = array<i64: 0, 0, 2, 0>} : tensor<1x2x4x2xf16>
// CHECK-NEXT:      %[[V:.*]] = tile.load "[[P]]" {perm = array<i64: 0, 2, 1, 3>, source = array<i64: 1, 4, 6, 2>, offsets = array<i64: 0, 0, 4, 0>} : tensor<1x2x4x2xf16>
// CHECK:           tile.attention %[[Q]], %[[K]], %[[V]]

// fp32 (the cube cannot transpose fp32 fractals on the way to L0): each head
// transpose is a vector kernel, which reads its window of the product.
// FP32-LABEL: tile.program
// FP32-NOT:     kind = "copy"
// FP32:         tile.store %{{.*}}, "[[P:matmul[_0-9]*]]" : tensor<1x4x12xf32>
// FP32:         tile.kernel "{{.*}}_transpose"
// FP32-NEXT:      tile.load "[[P]]" {perm = array<i64: 0, 2, 1, 3>, source = array<i64: 1, 4, 6, 2>, offsets = array<i64: 0, 0, 0, 0>} : tensor<1x2x4x2xf32>
// FP32:         tile.kernel "{{.*}}_transpose"
// FP32-NEXT:      tile.load "[[P]]" {perm = array<i64: 0, 2, 1, 3>, source = array<i64: 1, 4, 6, 2>, offsets = array<i64: 0, 0, 2, 0>} : tensor<1x2x4x2xf32>
// FP32:         tile.kernel "{{.*}}_transpose"
// FP32-NEXT:      tile.load "[[P]]" {perm = array<i64: 0, 2, 1, 3>, source = array<i64: 1, 4, 6, 2>, offsets = array<i64: 0, 0, 4, 0>} : tensor<1x2x4x2xf32>
// FP32-NOT:     kind = "copy"

// -----

// The value is also a graph output: its result is copied out of the product
// (one copy kernel, whose result the value's heads read); the query and the
// key are still windows.
func.func @value_also_returned(%x: tensor<1x4x4xf32>) -> (tensor<1x2x4x2xf32>, tensor<1x4x4xf32>) {
  %w = graph.fill 0.5 : tensor<4x12xf32>
  %p = graph.matmul %x, %w : (tensor<1x4x4xf32>, tensor<4x12xf32>) -> tensor<1x4x12xf32>
  %q1, %k1, %v1 = graph.split %p {axis = 2 : i64, split = array<i64: 4, 4, 4>} : (tensor<1x4x12xf32>) -> (tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>)
  %q2 = graph.reshape %q1 {shape = array<i64: 1, 4, 2, 2>} : (tensor<1x4x4xf32>) -> tensor<1x4x2x2xf32>
  %q3 = graph.transpose %q2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %k2 = graph.reshape %k1 {shape = array<i64: 1, 4, 2, 2>} : (tensor<1x4x4xf32>) -> tensor<1x4x2x2xf32>
  %k3 = graph.transpose %k2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %v2 = graph.reshape %v1 {shape = array<i64: 1, 4, 2, 2>} : (tensor<1x4x4xf32>) -> tensor<1x4x2x2xf32>
  %v3 = graph.transpose %v2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x4x2xf32>
  %o = graph.attention %q3, %k3, %v3 {scale = 0.5 : f32} : tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32> -> tensor<1x2x4x2xf32>
  func.return %o, %v1 : tensor<1x2x4x2xf32>, tensor<1x4x4xf32>
}

// CHECK-LABEL: tile.program
// CHECK:         tile.kernel "{{.*}}_copy"
// CHECK-NEXT:      tile.load "[[P:matmul[_0-9]*]]" {source = array<i64: 1, 4, 12>, offsets = array<i64: 0, 0, 8>} : tensor<1x4x4xf16>
// CHECK-NOT:     kind = "copy"
// CHECK:         tile.kernel "{{.*}}_attention"
// CHECK-NEXT:      tile.load "[[P]]" {perm = array<i64: 0, 2, 1, 3>, source = array<i64: 1, 4, 6, 2>, offsets = array<i64: 0, 0, 0, 0>}
// CHECK-NEXT:      tile.load "[[P]]" {perm = array<i64: 0, 2, 1, 3>, source = array<i64: 1, 4, 6, 2>, offsets = array<i64: 0, 0, 2, 0>}
// CHECK-NEXT:      tile.load "{{.*}}" {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x4x2xf16>

// FP32-LABEL: tile.program
// FP32:         tile.kernel "{{.*}}_copy"
// FP32-NEXT:      tile.load "{{.*}}" {source = array<i64: 1, 4, 12>, offsets = array<i64: 0, 0, 8>} : tensor<1x4x4xf32>
