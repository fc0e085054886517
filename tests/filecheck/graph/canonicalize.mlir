// graph-canonicalize: no-op removal (pads of zero and resizes by 1 too),
// view-chain and transpose-chain merging, constant and shape folding, max-pool ceil_mode as
// pads, spatial means as global pools, whole-map average pools with their
// exact window, global pools of rows as means (a softmax over one element:
// canonicalize-softmax.mlir), gathers of a constant index run as slices, gather_nd of constant tuples as
// gathers, views of casts as casts of views, CSE (and the patterns again
// after it) and DCE. The second RUN
// uses MLIR's --pass-pipeline syntax and shows that folded ops keep their
// locations; its log names what was done.
// RUN: ge-opt %s -p graph-canonicalize | filecheck %s
// RUN: ge-opt %s --pass-pipeline='builtin.module(graph-canonicalize)' --mlir-print-debuginfo --log=info 2>&1 | filecheck %s --check-prefix=LOC

// Identity, and reshape/cast/transpose/concat/sum that do not change
// their operand, disappear.
func.func @noops(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.identity %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.reshape %0 {shape = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = graph.cast %1 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = graph.transpose %2 {perm = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = graph.concat %3 {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = graph.sum %4 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %6 = graph.relu %5 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %6 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @noops
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  %[[V0:.*]] = graph.relu %[[X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return %[[V0]] : tensor<2x3xf32>
// CHECK-NEXT:  }

// The same ops stay when they do change something.
func.func @real_ops_stay(%x: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<2x3xf16>, tensor<6xf32>) {
  %t = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %c = graph.cast %x : (tensor<2x3xf32>) -> tensor<2x3xf16>
  %r = graph.reshape %x {shape = array<i64: 6>} : (tensor<2x3xf32>) -> tensor<6xf32>
  func.return %t, %c, %r : tensor<3x2xf32>, tensor<2x3xf16>, tensor<6xf32>
}

// CHECK-LABEL: func.func @real_ops_stay
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<2x3xf16>, tensor<6xf32>)
// CHECK-NEXT:  %[[T:.*]] = graph.transpose %[[X]] {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:  %[[C:.*]] = graph.cast %[[X]] : (tensor<2x3xf32>) -> tensor<2x3xf16>
// CHECK-NEXT:  %[[R:.*]] = graph.reshape %[[X]] {shape = array<i64: 6>} : (tensor<2x3xf32>) -> tensor<6xf32>
// CHECK-NEXT:  func.return %[[T]], %[[C]], %[[R]] : tensor<3x2xf32>, tensor<2x3xf16>, tensor<6xf32>
// CHECK-NEXT:  }

// A chain of view ops with a static result becomes one reshape.
func.func @view_chain(%x: tensor<2x3x4xf32>) -> tensor<24xf32> {
  %0 = graph.flatten %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %1 = graph.unsqueeze %0 {axes = array<i64: 0>} : (tensor<2x12xf32>) -> tensor<1x2x12xf32>
  %2 = graph.reshape %1 {shape = array<i64: -1>} : (tensor<1x2x12xf32>) -> tensor<24xf32>
  func.return %2 : tensor<24xf32>
}

// CHECK-LABEL: func.func @view_chain
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>) -> tensor<24xf32>
// CHECK-NEXT:  %[[V0:.*]] = graph.reshape %[[X]] {shape = array<i64: 24>} : (tensor<2x3x4xf32>) -> tensor<24xf32>
// CHECK-NEXT:  func.return %[[V0]] : tensor<24xf32>
// CHECK-NEXT:  }

// ... but not when the result shape is dynamic.
func.func @dynamic_view_chain(%x: tensor<?x3x4xf32>) -> tensor<?x12xf32> {
  %0 = graph.unsqueeze %x {axes = array<i64: 0>} : (tensor<?x3x4xf32>) -> tensor<1x?x3x4xf32>
  %1 = graph.reshape %0 {shape = array<i64: -1, 12>} : (tensor<1x?x3x4xf32>) -> tensor<?x12xf32>
  func.return %1 : tensor<?x12xf32>
}

// CHECK-LABEL: func.func @dynamic_view_chain
// CHECK-SAME:    (%[[X:.*]]: tensor<?x3x4xf32>) -> tensor<?x12xf32>
// CHECK-NEXT:  %[[V0:.*]] = graph.unsqueeze %[[X]] {axes = array<i64: 0>} : (tensor<?x3x4xf32>) -> tensor<1x?x3x4xf32>
// CHECK-NEXT:  %[[V1:.*]] = graph.reshape %[[V0]] {shape = array<i64: -1, 12>} : (tensor<1x?x3x4xf32>) -> tensor<?x12xf32>
// CHECK-NEXT:  func.return %[[V1]] : tensor<?x12xf32>
// CHECK-NEXT:  }

// Two transposes in a row are one (torch's split-heads permute then
// k.transpose(-1, -2)); a chain that composes to the identity disappears.
func.func @transpose_chain(%x: tensor<1x16x4x8xf32>) -> (tensor<1x4x8x16xf32>, tensor<1x16x4x8xf32>) {
  %0 = graph.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x4x8xf32>) -> tensor<1x4x16x8xf32>
  %1 = graph.transpose %0 {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x16x8xf32>) -> tensor<1x4x8x16xf32>
  %2 = graph.transpose %0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x16x8xf32>) -> tensor<1x16x4x8xf32>
  func.return %1, %2 : tensor<1x4x8x16xf32>, tensor<1x16x4x8xf32>
}

// CHECK-LABEL: func.func @transpose_chain
// CHECK-SAME:    (%[[X:.*]]: tensor<1x16x4x8xf32>)
// CHECK-NEXT:  %[[T:.*]] = graph.transpose %[[X]] {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x16x4x8xf32>) -> tensor<1x4x8x16xf32>
// CHECK-NEXT:  func.return %[[T]], %[[X]] : tensor<1x4x8x16xf32>, tensor<1x16x4x8xf32>
// CHECK-NEXT:  }

// An op whose operands are all constants folds into a constant that keeps
// its location and still feeds its users.
func.func @fold_add(%x: tensor<3x2xf32>) -> (tensor<2xf32>, tensor<3x2xf32>) {
  %a = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = graph.constant dense<[10.0, 20.0]> : tensor<2xf32>
  %s = graph.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> loc("add1")
  %y = graph.add %x, %s : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32> loc("add2")
  func.return %s, %y : tensor<2xf32>, tensor<3x2xf32>
}

// CHECK-LABEL: func.func @fold_add
// CHECK-SAME:    (%[[X:.*]]: tensor<3x2xf32>) -> (tensor<2xf32>, tensor<3x2xf32>)
// CHECK-NEXT:  %[[S:.*]] = graph.constant dense<[1.100000e+01, 2.200000e+01]> : tensor<2xf32>
// CHECK-NEXT:  %[[Y:.*]] = graph.add %[[X]], %[[S]] : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:  func.return %[[S]], %[[Y]] : tensor<2xf32>, tensor<3x2xf32>
// CHECK-NEXT:  }

// A view of a splat is a splat of the new shape.
func.func @fold_unsqueeze_fill() -> tensor<1x4x4xf32> {
  %f = graph.fill 0.5 : tensor<4x4xf32>
  %u = graph.unsqueeze %f {axes = array<i64: 0>} : (tensor<4x4xf32>) -> tensor<1x4x4xf32>
  func.return %u : tensor<1x4x4xf32>
}

// CHECK-LABEL: func.func @fold_unsqueeze_fill
// CHECK-SAME:    () -> tensor<1x4x4xf32>
// CHECK-NEXT:  %[[U:.*]] = graph.fill 0.5 : tensor<1x4x4xf32>
// CHECK-NEXT:  func.return %[[U]] : tensor<1x4x4xf32>
// CHECK-NEXT:  }

// A large splat result stays a graph.fill (no 800 KB blob of equal values).
func.func @fold_large_splat() -> tensor<1x64x56x56xf32> {
  %a = graph.fill 1.5 : tensor<1x64x56x56xf32>
  %b = graph.fill 2.0 : tensor<64x1x1xf32>
  %m = graph.mul %a, %b : (tensor<1x64x56x56xf32>, tensor<64x1x1xf32>) -> tensor<1x64x56x56xf32>
  func.return %m : tensor<1x64x56x56xf32>
}

// CHECK-LABEL: func.func @fold_large_splat
// CHECK-SAME:    () -> tensor<1x64x56x56xf32>
// CHECK-NEXT:  %[[M:.*]] = graph.fill 3.0 : tensor<1x64x56x56xf32>
// CHECK-NEXT:  func.return %[[M]] : tensor<1x64x56x56xf32>
// CHECK-NEXT:  }

// A large non-splat result becomes a dense_resource blob named after the node;
// the operand's blob goes with its last user.
func.func @fold_into_blob() -> tensor<32xf32> {
  %a = graph.constant dense_resource<ramp> : tensor<32xf32>
  %n = graph.neg %a : (tensor<32xf32>) -> tensor<32xf32> loc("neg1")
  func.return %n : tensor<32xf32>
}

// CHECK-LABEL: func.func @fold_into_blob
// CHECK-SAME:    () -> tensor<32xf32>
// CHECK-NEXT:  %[[N:.*]] = graph.constant dense_resource<[[BLOB:neg1_folded[_0-9]*]]> : tensor<32xf32>
// CHECK-NEXT:  func.return %[[N]] : tensor<32xf32>
// CHECK-NEXT:  }

// graph.shape of a static tensor is a constant.
func.func @shape_static(%x: tensor<2x3xf32>) -> tensor<2xi64> {
  %s = graph.shape %x : (tensor<2x3xf32>) -> tensor<2xi64>
  func.return %s : tensor<2xi64>
}

// CHECK-LABEL: func.func @shape_static
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>) -> tensor<2xi64>
// CHECK-NEXT:  %[[S:.*]] = graph.constant dense<[2, 3]> : tensor<2xi64>
// CHECK-NEXT:  func.return %[[S]] : tensor<2xi64>
// CHECK-NEXT:  }

// graph.shape of a dynamic tensor stays.
func.func @shape_dynamic(%x: tensor<?x3xf32>) -> tensor<2xi64> {
  %s = graph.shape %x : (tensor<?x3xf32>) -> tensor<2xi64>
  func.return %s : tensor<2xi64>
}

// CHECK-LABEL: func.func @shape_dynamic
// CHECK-SAME:    (%[[X:.*]]: tensor<?x3xf32>) -> tensor<2xi64>
// CHECK-NEXT:  %[[S:.*]] = graph.shape %[[X]] : (tensor<?x3xf32>) -> tensor<2xi64>
// CHECK-NEXT:  func.return %[[S]] : tensor<2xi64>
// CHECK-NEXT:  }

// Duplicate ops and duplicate small constants are merged.
func.func @cse(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = graph.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = graph.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %c1 = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %c2 = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %s = graph.add %a, %c1 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %t = graph.add %b, %c2 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %m = graph.mul %s, %t : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %m : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @cse
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  %[[A:.*]] = graph.relu %[[X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  %[[C1:.*]] = graph.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>
// CHECK-NEXT:  %[[S:.*]] = graph.add %[[A]], %[[C1]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  %[[M:.*]] = graph.mul %[[S]], %[[S]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return %[[M]] : tensor<2x3xf32>
// CHECK-NEXT:  }

// Unused ops are erased.
func.func @dce(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %unused = graph.exp %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %dead = graph.fill 1.0 : tensor<64x64xf32>
  %r = graph.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @dce
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  %[[R:.*]] = graph.relu %[[X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return %[[R]] : tensor<2x3xf32>
// CHECK-NEXT:  }

// max_pool ceil_mode = 1 is the same max pool with the extra end pads the
// ceil adds (SqueezeNet 1.1's 3x3/2 pools over even maps), none when the
// pads already reach (the shape rule drops a window starting in the end pad).
// CHECK-LABEL: func.func @max_pool_ceil
// CHECK:         graph.max_pool %{{.*}} {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>} : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x4xf32>
// CHECK:         graph.max_pool %{{.*}} {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>} : (tensor<1x8x4x4xf32>) -> tensor<1x8x2x2xf32>
func.func @max_pool_ceil(%x: tensor<1x8x8x8xf32>, %z: tensor<1x8x4x4xf32>) -> (tensor<1x8x4x4xf32>, tensor<1x8x2x2xf32>) {
  %y = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64} : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x4xf32>
  %w = graph.max_pool %z {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, ceil_mode = 1 : i64} : (tensor<1x8x4x4xf32>) -> tensor<1x8x2x2xf32>
  func.return %y, %w : tensor<1x8x4x4xf32>, tensor<1x8x2x2xf32>
}

// A mean over H and W of a batch-1 map is a global average pool (a reshape
// drops the unit dims without keepdims; CSE then shares the one pool).
// CHECK-LABEL: func.func @spatial_mean
// CHECK-NEXT:    %[[P:.*]] = graph.global_avg_pool %{{.*}} : (tensor<1x8x2x2xf32>) -> tensor<1x8x1x1xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %[[P]] {shape = array<i64: 1, 8>}
// CHECK-NEXT:    %[[B:.*]] = graph.reduce_mean %{{.*}} {axes = array<i64: 2, 3>} : (tensor<2x8x2x2xf32>)
// CHECK-NEXT:    func.return %[[P]], %[[R]], %[[B]]
func.func @spatial_mean(%x: tensor<1x8x2x2xf32>, %z: tensor<2x8x2x2xf32>) -> (tensor<1x8x1x1xf32>, tensor<1x8xf32>, tensor<2x8x1x1xf32>) {
  %a = graph.reduce_mean %x {axes = array<i64: 2, 3>} : (tensor<1x8x2x2xf32>) -> tensor<1x8x1x1xf32>
  %b = graph.reduce_mean %x {axes = array<i64: -1, -2>, keepdims = 0 : i64} : (tensor<1x8x2x2xf32>) -> tensor<1x8xf32>
  %c = graph.reduce_mean %z {axes = array<i64: 2, 3>} : (tensor<2x8x2x2xf32>) -> tensor<2x8x1x1xf32>
  func.return %a, %b, %c : tensor<1x8x1x1xf32>, tensor<1x8xf32>, tensor<2x8x1x1xf32>
}

// An average pool whose one window is the whole map (HF EfficientNet's
// AvgPool2d(1280, ceil_mode=True) head on a 7x7 map) is the pool with the
// exact window, ResNet's head (no ceil_mode); with explicit pads, or a
// window smaller than the map, it stays.
// CHECK-LABEL: func.func @whole_map_pool
// CHECK-NEXT:    %[[G:.*]] = graph.avg_pool %{{.*}} {kernel_shape = array<i64: 7, 7>, strides = array<i64: 7, 7>} : (tensor<1x8x7x7xf32>) -> tensor<1x8x1x1xf32>
// CHECK-NEXT:    %[[P:.*]] = graph.avg_pool %{{.*}} {kernel_shape = array<i64: 8, 8>, strides = array<i64: 8, 8>, pads = array<i64: 1, 1, 0, 0>}
// CHECK-NEXT:    %[[S:.*]] = graph.avg_pool %{{.*}} {kernel_shape = array<i64: 6, 6>, strides = array<i64: 6, 6>, ceil_mode = 1 : i64}
// CHECK-NEXT:    func.return %[[G]], %[[P]], %[[S]]
func.func @whole_map_pool(%x: tensor<1x8x7x7xf32>) -> (tensor<1x8x1x1xf32>, tensor<1x8x1x1xf32>, tensor<1x8x2x2xf32>) {
  %a = graph.avg_pool %x {kernel_shape = array<i64: 320, 320>, strides = array<i64: 320, 320>, ceil_mode = 1 : i64, count_include_pad = 1 : i64} : (tensor<1x8x7x7xf32>) -> tensor<1x8x1x1xf32>
  %b = graph.avg_pool %x {kernel_shape = array<i64: 8, 8>, strides = array<i64: 8, 8>, pads = array<i64: 1, 1, 0, 0>} : (tensor<1x8x7x7xf32>) -> tensor<1x8x1x1xf32>
  %c = graph.avg_pool %x {kernel_shape = array<i64: 6, 6>, strides = array<i64: 6, 6>, ceil_mode = 1 : i64} : (tensor<1x8x7x7xf32>) -> tensor<1x8x2x2xf32>
  func.return %a, %b, %c : tensor<1x8x1x1xf32>, tensor<1x8x1x1xf32>, tensor<1x8x2x2xf32>
}

// A global average pool of a tensor that is no 4-D map (Swin's pooler over
// [1, C, tokens]) is a mean over the dims after C, kept.
// CHECK-LABEL: func.func @global_pool_of_rows
// CHECK-NEXT:    %[[M:.*]] = graph.reduce_mean %{{.*}} {axes = array<i64: 2>} : (tensor<1x32x64xf32>) -> tensor<1x32x1xf32>
// CHECK-NEXT:    %[[G:.*]] = graph.global_avg_pool %{{.*}} : (tensor<1x8x2x2xf32>) -> tensor<1x8x1x1xf32>
func.func @global_pool_of_rows(%x: tensor<1x32x64xf32>, %m: tensor<1x8x2x2xf32>) -> (tensor<1x32x1xf32>, tensor<1x8x1x1xf32>) {
  %a = graph.global_avg_pool %x : (tensor<1x32x64xf32>) -> tensor<1x32x1xf32>
  %b = graph.global_avg_pool %m : (tensor<1x8x2x2xf32>) -> tensor<1x8x1x1xf32>
  func.return %a, %b : tensor<1x32x1xf32>, tensor<1x8x1x1xf32>
}

// Pads of zero (HF Swin pads its map to whole windows: by 0 when they fit)
// and a resize by scale 1 (SegFormer brings every stage to the first's size,
// the first too) do nothing; a real pad and a real resize stay.
// CHECK-LABEL: func.func @noop_pad_and_resize
// CHECK-NEXT:    %[[P:.*]] = graph.pad %{{.*}} {pads = array<i64: 0, 1, 1, 0, 0, 0, 0, 0>}
// CHECK-NEXT:    %[[R:.*]] = graph.resize %{{.*}} {scales = array<f64: 1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00>
// CHECK-NEXT:    %[[E:.*]] = graph.relu %{{.*}} : (tensor<1x8x8x16xf32>)
// CHECK-NEXT:    func.return %[[P]], %[[R]], %[[E]]
func.func @noop_pad_and_resize(%x: tensor<1x8x8x16xf32>) -> (tensor<1x9x9x16xf32>, tensor<1x8x16x32xf32>, tensor<1x8x8x16xf32>) {
  %p0 = graph.pad %x {pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  %r0 = graph.resize %p0 {scales = array<f64: 1.0, 1.0, 1.0, 1.0>, mode = "linear", coordinate_transformation_mode = "half_pixel"} : (tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  %p = graph.pad %x {pads = array<i64: 0, 1, 1, 0, 0, 0, 0, 0>} : (tensor<1x8x8x16xf32>) -> tensor<1x9x9x16xf32>
  %r = graph.resize %x {scales = array<f64: 1.0, 1.0, 2.0, 2.0>, mode = "linear", coordinate_transformation_mode = "half_pixel"} : (tensor<1x8x8x16xf32>) -> tensor<1x8x16x32xf32>
  %e = graph.relu %r0 : (tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  func.return %p, %r, %e : tensor<1x9x9x16xf32>, tensor<1x8x16x32xf32>, tensor<1x8x8x16xf32>
}

// An inverse pair of format changes cancels; a one-way transdata stays.
func.func @transdata_pair(%x: tensor<1x16x4x4xf32>) -> (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) {
  %a = graph.transdata %x {src_format = "NCHW", dst_format = "NC1HWC0"} : (tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %b = graph.transdata %a {src_format = "NC1HWC0", dst_format = "ND"} : (tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %c = graph.relu %a : (tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  func.return %b, %c : tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>
}

// CHECK-LABEL: func.func @transdata_pair
// CHECK-NEXT:    %[[A:.*]] = graph.transdata %x {src_format = "NCHW", dst_format = "NC1HWC0"}
// CHECK-NEXT:    %[[C:.*]] = graph.relu %[[A]]
// CHECK-NEXT:    func.return %x, %[[C]]


// A gather of constant indices that run k, k+1, ..., k+n-1 (negative ones
// wrapped by the axis length) is a slice of the axis plus a reshape to the
// gather's shape: GPT-2's causal-mask rows (a reshape only: the whole axis),
// BERT's pooler CLS token (a scalar index drops the axis), negative indices
// and a negative axis (a slice only), the whole axis in order (nothing).
// CHECK-LABEL: func.func @gather_run
// CHECK-SAME:    (%[[M:.*]]: tensor<16x1xi1>, %[[H:.*]]: tensor<1x16x64xf32>, %[[X:.*]]: tensor<8x4xf32>, %[[Z:.*]]: tensor<2x5xf32>)
// CHECK-NEXT:    %[[R0:.*]] = graph.reshape %[[M]] {shape = array<i64: 1, 1, 1, 16, 1>} : (tensor<16x1xi1>) -> tensor<1x1x1x16x1xi1>
// CHECK-NEXT:    %[[S1:.*]] = graph.slice %[[H]] {starts = array<i64: 0>, ends = array<i64: 1>, axes = array<i64: 1>} : (tensor<1x16x64xf32>) -> tensor<1x1x64xf32>
// CHECK-NEXT:    %[[R1:.*]] = graph.reshape %[[S1]] {shape = array<i64: 1, 64>} : (tensor<1x1x64xf32>) -> tensor<1x64xf32>
// CHECK-NEXT:    %[[S2:.*]] = graph.slice %[[X]] {starts = array<i64: 5>, ends = array<i64: 7>, axes = array<i64: 0>} : (tensor<8x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[S3:.*]] = graph.slice %[[Z]] {starts = array<i64: 1>, ends = array<i64: 4>, axes = array<i64: 1>} : (tensor<2x5xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[R0]], %[[R1]], %[[S2]], %[[S3]], %[[X]]
// CHECK-NEXT:  }
// CHECK-NOT:   graph.gather
func.func @gather_run(%m: tensor<16x1xi1>, %h: tensor<1x16x64xf32>, %x: tensor<8x4xf32>, %z: tensor<2x5xf32>) -> (tensor<1x1x1x16x1xi1>, tensor<1x64xf32>, tensor<2x4xf32>, tensor<2x3xf32>, tensor<8x4xf32>) {
  %i0 = graph.constant dense<[[[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]]]]> : tensor<1x1x1x16xi64>
  %g0 = graph.gather %m, %i0 {axis = 0 : i64} : (tensor<16x1xi1>, tensor<1x1x1x16xi64>) -> tensor<1x1x1x16x1xi1>
  %i1 = graph.constant dense<0> : tensor<i64>
  %g1 = graph.gather %h, %i1 {axis = 1 : i64} : (tensor<1x16x64xf32>, tensor<i64>) -> tensor<1x64xf32> loc("pooler_gather")
  %i2 = graph.constant dense<[-3, 6]> : tensor<2xi64>
  %g2 = graph.gather %x, %i2 {axis = 0 : i64} : (tensor<8x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %i3 = graph.constant dense<[1, 2, 3]> : tensor<3xi32>
  %g3 = graph.gather %z, %i3 {axis = -1 : i64} : (tensor<2x5xf32>, tensor<3xi32>) -> tensor<2x3xf32>
  %i4 = graph.constant dense<[-8, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi64>
  %g4 = graph.gather %x, %i4 {axis = 0 : i64} : (tensor<8x4xf32>, tensor<8xi64>) -> tensor<8x4xf32>
  func.return %g0, %g1, %g2, %g3, %g4 : tensor<1x1x1x16x1xi1>, tensor<1x64xf32>, tensor<2x4xf32>, tensor<2x3xf32>, tensor<8x4xf32>
}

// Indices that are not a run, or not constant, stay a gather.
// CHECK-LABEL: func.func @gather_not_a_run
// CHECK-SAME:    (%[[X:.*]]: tensor<8x4xf32>, %[[I:.*]]: tensor<2xi64>)
// CHECK-NEXT:    %[[C:.*]] = graph.constant dense<[0, 2]> : tensor<2xi64>
// CHECK-NEXT:    %[[A:.*]] = graph.gather %[[X]], %[[C]] {axis = 0 : i64} : (tensor<8x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.gather %[[X]], %[[I]] {axis = 0 : i64} : (tensor<8x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %[[A]], %[[B]]
// CHECK-NOT:     graph.slice
func.func @gather_not_a_run(%x: tensor<8x4xf32>, %i: tensor<2xi64>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %c = graph.constant dense<[0, 2]> : tensor<2xi64>
  %a = graph.gather %x, %c {axis = 0 : i64} : (tensor<8x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %b = graph.gather %x, %i {axis = 0 : i64} : (tensor<8x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  func.return %a, %b : tensor<2x4xf32>, tensor<2x4xf32>
}


// A view of a cast whose only user is the view becomes a cast of the view
// (so the cast meets the elementwise ops after the view and fuses with them:
// BERT's cast(attention_mask -> bool) then unsqueeze); the view is a reshape
// of the cast's input, named after the view.
// CHECK-LABEL: func.func @view_before_cast
// CHECK-SAME:    (%[[M:.*]]: tensor<1x16xi64>, %[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT:    %[[U:.*]] = graph.reshape %[[M]] {shape = array<i64: 1, 1, 1, 16>} : (tensor<1x16xi64>) -> tensor<1x1x1x16xi64>
// CHECK-NEXT:    %[[C:.*]] = graph.cast %[[U]] : (tensor<1x1x1x16xi64>) -> tensor<1x1x1x16xi1>
// CHECK-NEXT:    %[[F:.*]] = graph.reshape %[[X]] {shape = array<i64: 2, 12>} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
// CHECK-NEXT:    %[[H:.*]] = graph.cast %[[F]] : (tensor<2x12xf32>) -> tensor<2x12xf16>
// CHECK-NEXT:    func.return %[[C]], %[[H]]
// CHECK-NEXT:  }
func.func @view_before_cast(%m: tensor<1x16xi64>, %x: tensor<2x3x4xf32>) -> (tensor<1x1x1x16xi1>, tensor<2x12xf16>) {
  %c = graph.cast %m : (tensor<1x16xi64>) -> tensor<1x16xi1> loc("mask_cast")
  %u = graph.unsqueeze %c {axes = array<i64: 1, 2>} : (tensor<1x16xi1>) -> tensor<1x1x1x16xi1> loc("mask_unsqueeze")
  %h = graph.cast %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf16>
  %f = graph.flatten %h {axis = 1 : i64} : (tensor<2x3x4xf16>) -> tensor<2x12xf16>
  func.return %u, %f : tensor<1x1x1x16xi1>, tensor<2x12xf16>
}

// ... not when the cast has another user (it would be computed twice).
// CHECK-LABEL: func.func @view_after_shared_cast
// CHECK-SAME:    (%[[M:.*]]: tensor<1x16xi64>)
// CHECK-NEXT:    %[[C:.*]] = graph.cast %[[M]] : (tensor<1x16xi64>) -> tensor<1x16xi1>
// CHECK-NEXT:    %[[U:.*]] = graph.unsqueeze %[[C]] {axes = array<i64: 1, 2>} : (tensor<1x16xi1>) -> tensor<1x1x1x16xi1>
// CHECK-NEXT:    func.return %[[U]], %[[C]]
// CHECK-NEXT:  }
func.func @view_after_shared_cast(%m: tensor<1x16xi64>) -> (tensor<1x1x1x16xi1>, tensor<1x16xi1>) {
  %c = graph.cast %m : (tensor<1x16xi64>) -> tensor<1x16xi1>
  %u = graph.unsqueeze %c {axes = array<i64: 1, 2>} : (tensor<1x16xi1>) -> tensor<1x1x1x16xi1>
  func.return %u, %c : tensor<1x1x1x16xi1>, tensor<1x16xi1>
}

// Two equal views of one cast (BART's encoder and decoder unsqueeze the same
// bool mask): CSE makes them one, the cast's only user, and the patterns run
// again after CSE: the cast moves after the view.
// CHECK-LABEL: func.func @equal_views_of_a_cast
// CHECK-SAME:    (%[[M:.*]]: tensor<1x16xi64>)
// CHECK-NEXT:    %[[U:.*]] = graph.reshape %[[M]] {shape = array<i64: 1, 1, 1, 16>} : (tensor<1x16xi64>) -> tensor<1x1x1x16xi64>
// CHECK-NEXT:    %[[C:.*]] = graph.cast %[[U]] : (tensor<1x1x1x16xi64>) -> tensor<1x1x1x16xi1>
// CHECK-NEXT:    func.return %[[C]], %[[C]]
// CHECK-NEXT:  }
func.func @equal_views_of_a_cast(%m: tensor<1x16xi64>) -> (tensor<1x1x1x16xi1>, tensor<1x1x1x16xi1>) {
  %c = graph.cast %m : (tensor<1x16xi64>) -> tensor<1x16xi1>
  %u = graph.unsqueeze %c {axes = array<i64: 1, 2>} : (tensor<1x16xi1>) -> tensor<1x1x1x16xi1>
  %v = graph.unsqueeze %c {axes = array<i64: 1, 2>} : (tensor<1x16xi1>) -> tensor<1x1x1x16xi1>
  func.return %u, %v : tensor<1x1x1x16xi1>, tensor<1x1x1x16xi1>
}

// gather_nd with constant index tuples (batch_dims 0) is a gather of the data
// with its first m dims merged, by the tuples' row-major offsets (a negative
// index wrapped): [1, 2] and [-1, 0] of a [4, 6, 5] are rows 8 and 18 of a
// [24, 5]. Consecutive offsets then become a slice (rows 8..10) or, when they
// are the whole axis, a view only: torch's `mask[:, None, None, :]` on a
// [1, 16] bool mask is a reshape.
// CHECK-LABEL: func.func @gather_nd_constant
// CHECK-SAME:    (%[[X:.*]]: tensor<4x6x5xf32>, %[[M:.*]]: tensor<1x16xi1>)
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %[[X]] {shape = array<i64: 24, 5>} : (tensor<4x6x5xf32>) -> tensor<24x5xf32>
// CHECK-NEXT:    %[[O:.*]] = graph.constant dense<[8, 18]> : tensor<2xi64>
// CHECK-NEXT:    %[[G:.*]] = graph.gather %[[R]], %[[O]] {axis = 0 : i64} : (tensor<24x5xf32>, tensor<2xi64>) -> tensor<2x5xf32>
// CHECK-NEXT:    %[[S:.*]] = graph.slice %[[R]] {starts = array<i64: 8>, ends = array<i64: 11>, axes = array<i64: 0>} : (tensor<24x5xf32>) -> tensor<3x5xf32>
// CHECK-NEXT:    %[[V:.*]] = graph.reshape %[[M]] {shape = array<i64: 1, 1, 1, 16>} : (tensor<1x16xi1>) -> tensor<1x1x1x16xi1>
// CHECK-NEXT:    func.return %[[G]], %[[S]], %[[V]]
// CHECK-NEXT:  }
func.func @gather_nd_constant(%x: tensor<4x6x5xf32>, %m: tensor<1x16xi1>) -> (tensor<2x5xf32>, tensor<3x5xf32>, tensor<1x1x1x16xi1>) {
  %i = graph.constant dense<[[1, 2], [-1, 0]]> : tensor<2x2xi64>
  %a = graph.gather_nd %x, %i {batch_dims = 0 : i64} : (tensor<4x6x5xf32>, tensor<2x2xi64>) -> tensor<2x5xf32> loc("gnd")
  %j = graph.constant dense<[[1, 2], [1, 3], [1, 4]]> : tensor<3x2xi64>
  %b = graph.gather_nd %x, %j {batch_dims = 0 : i64} : (tensor<4x6x5xf32>, tensor<3x2xi64>) -> tensor<3x5xf32>
  %k = graph.constant dense<[[[[[0, 0], [0, 1], [0, 2], [0, 3], [0, 4], [0, 5], [0, 6], [0, 7], [0, 8], [0, 9], [0, 10], [0, 11], [0, 12], [0, 13], [0, 14], [0, 15]]]]]> : tensor<1x1x1x16x2xi64>
  %c = graph.gather_nd %m, %k {batch_dims = 0 : i64} : (tensor<1x16xi1>, tensor<1x1x1x16x2xi64>) -> tensor<1x1x1x16xi1> loc("torch_mask")
  func.return %a, %b, %c : tensor<2x5xf32>, tensor<3x5xf32>, tensor<1x1x1x16xi1>
}

// Left alone: non-constant indices, batch_dims = 1, and a constant index out
// of range (left to the op's own error).
// CHECK-LABEL: func.func @gather_nd_stays
// CHECK-SAME:    (%[[X:.*]]: tensor<4x6x5xf32>, %[[I:.*]]: tensor<3x2xi64>, %[[Y:.*]]: tensor<2x6x5xf32>)
// CHECK-NEXT:    %[[A:.*]] = graph.gather_nd %[[X]], %[[I]] {batch_dims = 0 : i64} : (tensor<4x6x5xf32>, tensor<3x2xi64>) -> tensor<3x5xf32>
// CHECK-NEXT:    %[[J:.*]] = graph.constant dense<{{\[\[\[}}1], [2], [3]], {{\[\[}}0], [1], [5]]]> : tensor<2x3x1xi64>
// CHECK-NEXT:    %[[B:.*]] = graph.gather_nd %[[Y]], %[[J]] {batch_dims = 1 : i64} : (tensor<2x6x5xf32>, tensor<2x3x1xi64>) -> tensor<2x3x5xf32>
// CHECK-NEXT:    %[[K:.*]] = graph.constant dense<{{\[\[}}4, 0]]> : tensor<1x2xi64>
// CHECK-NEXT:    %[[C:.*]] = graph.gather_nd %[[X]], %[[K]] {batch_dims = 0 : i64} : (tensor<4x6x5xf32>, tensor<1x2xi64>) -> tensor<1x5xf32>
// CHECK-NEXT:    func.return %[[A]], %[[B]], %[[C]]
// CHECK-NEXT:  }
// CHECK-NOT:   graph.gather %
func.func @gather_nd_stays(%x: tensor<4x6x5xf32>, %i: tensor<3x2xi64>, %y: tensor<2x6x5xf32>) -> (tensor<3x5xf32>, tensor<2x3x5xf32>, tensor<1x5xf32>) {
  %a = graph.gather_nd %x, %i {batch_dims = 0 : i64} : (tensor<4x6x5xf32>, tensor<3x2xi64>) -> tensor<3x5xf32>
  %j = graph.constant dense<[[[1], [2], [3]], [[0], [1], [5]]]> : tensor<2x3x1xi64>
  %b = graph.gather_nd %y, %j {batch_dims = 1 : i64} : (tensor<2x6x5xf32>, tensor<2x3x1xi64>) -> tensor<2x3x5xf32>
  %k = graph.constant dense<[[4, 0]]> : tensor<1x2xi64>
  %c = graph.gather_nd %x, %k {batch_dims = 0 : i64} : (tensor<4x6x5xf32>, tensor<1x2xi64>) -> tensor<1x5xf32>
  func.return %a, %b, %c : tensor<3x5xf32>, tensor<2x3x5xf32>, tensor<1x5xf32>
}

// An expand to its operand's own shape (also by a shape of ones: numpy
// broadcasting keeps the operand's) is no op; a real broadcast stays.
// CHECK-LABEL: func.func @expand_noop
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>, %[[I:.*]]: tensor<2x3xi64>)
// CHECK-NEXT:    %[[E:.*]] = graph.expand %[[X]] {shape = array<i64: 2, 1, 1>} : (tensor<2x3xf32>) -> tensor<2x2x3xf32>
// CHECK-NEXT:    func.return %[[X]], %[[I]], %[[E]]
// CHECK-NEXT:  }
func.func @expand_noop(%x: tensor<2x3xf32>, %i: tensor<2x3xi64>) -> (tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x2x3xf32>) {
  %a = graph.expand %x {shape = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = graph.expand %i {shape = array<i64: 1, 1>} : (tensor<2x3xi64>) -> tensor<2x3xi64>
  %c = graph.expand %x {shape = array<i64: 2, 1, 1>} : (tensor<2x3xf32>) -> tensor<2x2x3xf32>
  func.return %a, %b, %c : tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x2x3xf32>
}

// Two weights equal in value are still two layers' parameters: CSE keeps
// them apart (and leaves no trace of its guard attribute on them).
func.func @weights_not_merged(%x: tensor<1x3x8x8xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
  %w1 = graph.fill 2.000000e-02 : tensor<4x3x3x3xf32> loc("conv1.weight")
  %w2 = graph.fill 2.000000e-02 : tensor<4x3x3x3xf32> loc("conv2.weight")
  %a = graph.conv %x, %w1 : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
  %b = graph.conv %x, %w2 : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
  func.return %a, %b : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
}

{-#
  dialect_resources: {
    builtin: {
      ramp: "0x04000000000000000000803F0000004000004040000080400000A0400000C0400000E0400000004100001041000020410000304100004041000050410000604100007041000080410000884100009041000098410000A0410000A8410000B0410000B8410000C0410000C8410000D0410000D8410000E0410000E8410000F0410000F841"
    }
  }
#-}

// CHECK-LABEL: func.func @weights_not_merged
// CHECK-SAME:    (%[[X:.*]]: tensor<1x3x8x8xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>)
// CHECK-NEXT:  %[[W1:.*]] = graph.fill 0.02 : tensor<4x3x3x3xf32>
// CHECK-NEXT:  %[[W2:.*]] = graph.fill 0.02 : tensor<4x3x3x3xf32>
// CHECK-NEXT:  %[[A:.*]] = graph.conv %[[X]], %[[W1]] : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
// CHECK-NEXT:  %[[B:.*]] = graph.conv %[[X]], %[[W2]] : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
// CHECK-NEXT:  func.return %[[A]], %[[B]] : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
// CHECK-NEXT:  }
// CHECK:       dialect_resources
// CHECK-NOT:     ramp
// CHECK:         [[BLOB]]: "0x0400000000000080000080bf000000c0000040c0000080c0

// LOC:         INFO: removed graph.identity: it does not change its operand
// LOC:         INFO: merged graph.flatten into graph.unsqueeze
// LOC:         INFO: folded graph.add at loc("add1") into a constant
// LOC:         INFO: folded graph.shape: the shape is static
// LOC:         INFO: {{.*}}cancelled graph.transdata against graph.transdata: inverse format changes
// LOC:         INFO: rewrote graph.gather at loc("pooler_gather"): indices 0..0 are a slice of axis 1
// LOC:         INFO: moved graph.cast at loc("mask_cast") after graph.unsqueeze at loc("mask_unsqueeze")
// LOC:         INFO: rewrote graph.gather_nd at loc("gnd"): constant index tuples are offsets into the first 2 dims
// LOC:         INFO: rewrote graph.gather_nd at loc("torch_mask"): constant index tuples are offsets into the first 2 dims
// LOC:         INFO: rewrote graph.gather at loc("torch_mask"): indices 0..15 are a slice of axis 0
// LOC-LABEL:   func.func @fold_add
// LOC:           %[[S:.*]] = graph.constant dense<[1.100000e+01, 2.200000e+01]> : tensor<2xf32> loc("add1")
// LOC-NEXT:      %{{.*}} = graph.add %{{.*}}, %[[S]] : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32> loc("add2")
// LOC-LABEL:   func.func @fold_into_blob
// LOC:           graph.constant dense_resource<{{.*}}> : tensor<32xf32> loc("neg1")
// LOC-LABEL:   func.func @gather_run
// LOC:           graph.slice {{.*}} -> tensor<1x1x64xf32> loc("pooler_gather")
// LOC-NEXT:      graph.reshape {{.*}} -> tensor<1x64xf32> loc("pooler_gather")
// LOC-LABEL:   func.func @view_before_cast
// LOC:           graph.reshape {{.*}} -> tensor<1x1x1x16xi64> loc("mask_unsqueeze")
// LOC-NEXT:      graph.cast {{.*}} -> tensor<1x1x1x16xi1> loc("mask_cast")
// LOC-LABEL:   func.func @gather_nd_constant
// LOC:           graph.reshape {{.*}} -> tensor<24x5xf32> loc("gnd")
// LOC-NEXT:      graph.constant dense<[8, 18]> : tensor<2xi64> loc("gnd")
// LOC-NEXT:      graph.gather {{.*}} loc("gnd")
// LOC-LABEL:   func.func @weights_not_merged
// LOC:           graph.fill 0.02 : tensor<4x3x3x3xf32> loc("conv1.weight")
// LOC-NEXT:      graph.fill 0.02 : tensor<4x3x3x3xf32> loc("conv2.weight")


