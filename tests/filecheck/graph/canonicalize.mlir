// graph-canonicalize: no-op removal, view-chain merging, constant and shape
// folding, max-pool ceil_mode as pads, spatial means as global pools, CSE
// and DCE. The second RUN uses MLIR's --pass-pipeline syntax and
// shows that folded ops keep their locations; its log names what was done.
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
// LOC-LABEL:   func.func @fold_add
// LOC:           %[[S:.*]] = graph.constant dense<[1.100000e+01, 2.200000e+01]> : tensor<2xf32> loc("add1")
// LOC-NEXT:      %{{.*}} = graph.add %{{.*}}, %[[S]] : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32> loc("add2")
// LOC-LABEL:   func.func @fold_into_blob
// LOC:           graph.constant dense_resource<{{.*}}> : tensor<32xf32> loc("neg1")
// LOC-LABEL:   func.func @weights_not_merged
// LOC:           graph.fill 0.02 : tensor<4x3x3x3xf32> loc("conv1.weight")
// LOC-NEXT:      graph.fill 0.02 : tensor<4x3x3x3xf32> loc("conv2.weight")


