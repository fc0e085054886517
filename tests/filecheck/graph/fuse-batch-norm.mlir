// graph-fuse, a batch_norm no conv takes in: BatchnormScaleFusionPass folds the
// per-channel mul/add/sub after it into its scale and bias,
// BatchnormLoopFusionPass turns it into that scale and shift for
// ElementwiseLoopFusionPass to take in; a remark for every candidate, applied
// or missed, checked by --verify-diagnostics. The fused IR prints and parses
// back (last RUN).
// RUN: ge-opt %s --split-input-file -p graph-fuse --verify-diagnostics | filecheck %s
// RUN: ge-opt %s --split-input-file -p graph-fuse | ge-opt --split-input-file | filecheck %s
// Without loop fusion the scale and shift would be two kernels for one: the
// batch_norm stays (its folds still apply).
// RUN: ge-opt %s --split-input-file -p 'graph-fuse{disable=ElementwiseLoopFusionPass}' --log=info 2>&1 | filecheck %s --check-prefix=NO-LOOP

// NO-LOOP: applied BatchnormScaleFusionPass at loc("bn"): absorbed [bn, mul, add]
// NO-LOOP: missed BatchnormLoopFusionPass at loc("bn"): rule switched off (it prepares ElementwiseLoopFusionPass, which is off)
// NO-LOOP-LABEL: func.func @densenet_preactivation
// NO-LOOP:         %[[N:.*]] = graph.batch_norm %{{.*}} {absorbed = ["bn", "mul", "add"]
// NO-LOOP-NEXT:    graph.relu %[[N]]

// DenseNet's pre-activation: BatchNormalization on a concatenation, then Mul
// and Add by per-channel constants, then Relu, before the next conv: one
// fusion (was a batch_norm kernel and a mul/add/relu kernel).
func.func @densenet_preactivation(%a: tensor<1x2x4x4xf32>, %b: tensor<1x2x4x4xf32>) -> tensor<1x3x4x4xf32> {
  %cat = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x4x4x4xf32> loc("concat")
  %s = graph.constant dense<[1.0, 2.0, 0.5, 1.0]> : tensor<4xf32>
  %t = graph.fill 0.25 : tensor<4xf32>
  %m = graph.fill 0.5 : tensor<4xf32>
  %v = graph.fill 3.0 : tensor<4xf32>
  %k = graph.constant dense<[[[2.0]], [[3.0]], [[-1.0]], [[0.5]]]> : tensor<4x1x1xf32>
  %d = graph.constant dense<[[[1.0]], [[-1.0]], [[0.0]], [[2.0]]]> : tensor<4x1x1xf32>
  // expected-remark@+4 {{applied BatchnormScaleFusionPass at loc("bn"): absorbed [bn, mul]}}
  // expected-remark@+3 {{applied BatchnormScaleFusionPass at loc("bn"): absorbed [bn, mul, add]}}
  // expected-remark@+2 {{applied BatchnormLoopFusionPass at loc("bn"): absorbed [bn, mul, add]}}
  // expected-remark@+1 {{applied ElementwiseLoopFusionPass at loc("bn"): absorbed [bn, mul, add, relu]}}
  %n = graph.batch_norm %cat, %s, %t, %m, %v {epsilon = 1.0 : f32} : (tensor<1x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32> loc("bn")
  %mul = graph.mul %n, %k : (tensor<1x4x4x4xf32>, tensor<4x1x1xf32>) -> tensor<1x4x4x4xf32> loc("mul")
  %add = graph.add %mul, %d : (tensor<1x4x4x4xf32>, tensor<4x1x1xf32>) -> tensor<1x4x4x4xf32> loc("add")
  %r = graph.relu %add : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> loc("relu")
  %w = graph.fill 0.5 : tensor<3x4x1x1xf32>
  %c = graph.conv %r, %w : tensor<1x4x4x4xf32>, tensor<3x4x1x1xf32> -> tensor<1x3x4x4xf32> loc("conv")
  func.return %c : tensor<1x3x4x4xf32>
}

// scale / sqrt(var + eps) = [0.5, 1, 0.25, 0.5], times the mul's [2, 3, -1, 0.5];
// shift = (0.25 * [2, 3, -1, 0.5] + [1, -1, 0, 2]) - 0.5 * scale.
// CHECK-LABEL: func.func @densenet_preactivation
// CHECK:         %[[CAT:.*]] = graph.concat
// CHECK-NEXT:    %[[F:.*]] = graph.fusion %[[CAT]] {absorbed = ["bn", "mul", "add", "relu"]}
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: tensor<1x4x4x4xf32>):
// CHECK-NEXT:      %[[S:.*]] = graph.constant dense<{{\[\[\[}}1.000000e+00]], {{\[\[}}3.000000e+00]], {{\[\[}}-2.500000e-01]], {{\[\[}}2.500000e-01]]]> : tensor<4x1x1xf32>
// CHECK-NEXT:      %[[XS:.*]] = graph.mul %[[X]], %[[S]]
// CHECK-NEXT:      %[[T:.*]] = graph.constant dense<{{\[\[\[}}1.000000e+00]], {{\[\[}}-1.750000e+00]], {{\[\[}}-1.250000e-01]], {{\[\[}}2.000000e+00]]]> : tensor<4x1x1xf32>
// CHECK-NEXT:      %[[Y:.*]] = graph.add %[[XS]], %[[T]]
// CHECK-NEXT:      %[[R:.*]] = graph.relu %[[Y]]
// CHECK-NEXT:      graph.yield %[[R]]
// CHECK:         graph.conv %[[F]]

// -----

// bn - c folds into the bias; c - (...) negates it: not a scale, but loop
// fusion takes it. A scale of ones leaves no mul.
func.func @sub_and_reversed_sub(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %s = graph.fill 2.0 : tensor<2xf32>
  %t = graph.fill 1.0 : tensor<2xf32>
  %m = graph.fill 0.0 : tensor<2xf32>
  %v = graph.fill 3.0 : tensor<2xf32>
  %c = graph.constant dense<[[[4.0]], [[8.0]]]> : tensor<2x1x1xf32>
  // expected-remark@+3 {{applied BatchnormScaleFusionPass at loc("bn"): absorbed [bn, sub]}}
  // expected-remark@+2 {{applied BatchnormLoopFusionPass at loc("bn"): absorbed [bn, sub]}}
  // expected-remark@+1 {{applied ElementwiseLoopFusionPass at loc("bn"): absorbed [bn, sub, rsub]}}
  %n = graph.batch_norm %x, %s, %t, %m, %v {epsilon = 1.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32> loc("bn")
  %d = graph.sub %n, %c : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32> loc("sub")
  %r = graph.sub %c, %d : (tensor<2x1x1xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> loc("rsub")
  func.return %r : tensor<1x2x3x3xf32>
}

// CHECK-LABEL: func.func @sub_and_reversed_sub
// CHECK-NEXT:    graph.fusion %{{.*}} {absorbed = ["bn", "sub", "rsub"]}
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: tensor<1x2x3x3xf32>):
// CHECK-NEXT:      %[[T:.*]] = graph.constant dense<{{\[\[\[}}-3.000000e+00]], {{\[\[}}-7.000000e+00]]]> : tensor<2x1x1xf32>
// CHECK-NEXT:      %[[Y:.*]] = graph.add %[[X]], %[[T]]
// CHECK-NEXT:      %[[C:.*]] = graph.constant dense<{{\[\[\[}}4.000000e+00]], {{\[\[}}8.000000e+00]]]>
// CHECK-NEXT:      graph.sub %[[C]], %[[Y]]

// -----

// A computed mean: the mul still folds (it needs the scale and bias only),
// the normalisation stays a batch_norm (missed), its relu a kernel of its own.
func.func @computed_mean(%x: tensor<1x2x3x3xf32>, %m: tensor<2xf32>) -> tensor<1x2x3x3xf32> {
  %s = graph.fill 2.0 : tensor<2xf32>
  %t = graph.fill 1.0 : tensor<2xf32>
  %v = graph.fill 3.0 : tensor<2xf32>
  %k = graph.fill 0.5 : tensor<2x1x1xf32>
  // expected-remark@+2 {{applied BatchnormScaleFusionPass at loc("bn"): absorbed [bn, mul]}}
  // expected-remark@+1 {{missed BatchnormLoopFusionPass at loc("bn"): operand not constant (the batch_norm mean is computed, not a constant)}}
  %n = graph.batch_norm %x, %s, %t, %m, %v {epsilon = 1.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32> loc("bn")
  %p = graph.mul %k, %n : (tensor<2x1x1xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> loc("mul")
  %r = graph.relu %p : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> loc("relu")
  func.return %r : tensor<1x2x3x3xf32>
}

// CHECK-LABEL: func.func @computed_mean
// CHECK-DAG:     %[[S:.*]] = graph.fill 1.0 : tensor<2xf32>
// CHECK-DAG:     %[[T:.*]] = graph.fill 0.5 : tensor<2xf32>
// CHECK:         %[[N:.*]] = graph.batch_norm %{{.*}}, %[[S]], %[[T]], %{{.*}}, %{{.*}} {absorbed = ["bn", "mul"]
// CHECK-NEXT:    graph.relu %[[N]]

// -----

// No elementwise reader: the batch_norm stays, nothing to report.
func.func @before_pool(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
  %s = graph.fill 2.0 : tensor<2xf32>
  %t = graph.fill 1.0 : tensor<2xf32>
  %m = graph.fill 0.0 : tensor<2xf32>
  %v = graph.fill 3.0 : tensor<2xf32>
  %n = graph.batch_norm %x, %s, %t, %m, %v {epsilon = 1.0 : f32} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32> loc("bn")
  %p = graph.max_pool %n {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> loc("pool")
  func.return %p : tensor<1x2x2x2xf32>
}

// CHECK-LABEL: func.func @before_pool
// CHECK:         %[[N:.*]] = graph.batch_norm
// CHECK-NEXT:    graph.max_pool %[[N]]

// -----

// A conv's batch_norm is ConvBatchnormFusionPass's; when that misses (the
// conv's result is also returned) loop fusion takes it with its relu (its
// scale is ones: a shift, which the conv's bias epilogue cannot take either).
func.func @conv_read_twice(%x: tensor<1x2x3x3xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
  %w = graph.fill 0.5 : tensor<2x2x1x1xf32>
  %s = graph.fill 2.0 : tensor<2xf32>
  %t = graph.fill 1.0 : tensor<2xf32>
  %m = graph.fill 0.0 : tensor<2xf32>
  %v = graph.fill 3.0 : tensor<2xf32>
  // expected-remark@+2 {{missed ConvBatchnormFusionPass at loc("conv"): intermediate has other users (graph.conv at loc("conv") is also used by func.return)}}
  // expected-remark@+1 {{missed ConvAddFusionPass at loc("conv"): intermediate has other users (graph.conv at loc("conv") is also used by func.return)}}
  %c = graph.conv %x, %w : tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32> -> tensor<1x2x3x3xf32> loc("conv")
  // expected-remark@+2 {{applied BatchnormLoopFusionPass at loc("bn"): absorbed [bn]}}
  // expected-remark@+1 {{applied ElementwiseLoopFusionPass at loc("bn"): absorbed [bn, relu]}}
  %n = graph.batch_norm %c, %s, %t, %m, %v {epsilon = 1.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32> loc("bn")
  %r = graph.relu %n : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> loc("relu")
  func.return %c, %r : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
}

// CHECK-LABEL: func.func @conv_read_twice
// CHECK:         %[[C:.*]] = graph.conv
// CHECK-NEXT:    %[[F:.*]] = graph.fusion %[[C]] {absorbed = ["bn", "relu"]}
// CHECK:           graph.add
// CHECK-NEXT:      graph.relu
// CHECK:         func.return %[[C]], %[[F]]
