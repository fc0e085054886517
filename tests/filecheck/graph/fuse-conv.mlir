// graph-fuse, conv rules: ConvBatchnormFusionPass, ConvScaleFusionPass,
// ConvAddFusionPass, ConvActivationFusionPass; a remark for every candidate,
// applied or missed, checked by --verify-diagnostics.
// The fused IR prints and parses back (last RUN).
// RUN: ge-opt %s --split-input-file -p graph-fuse --allow-unregistered-dialect --verify-diagnostics | filecheck %s
// RUN: ge-opt %s --split-input-file -p graph-fuse --allow-unregistered-dialect --log=info 2>&1 >/dev/null | filecheck %s --check-prefix=LOG
// RUN: ge-opt %s --split-input-file -p graph-fuse --allow-unregistered-dialect | ge-opt --split-input-file --allow-unregistered-dialect | filecheck %s

// Conv(+bias) + BatchNorm + Relu: one conv with folded weights and bias.
func.func @conv_bias_bn_relu(%x: tensor<1x3x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %w = graph.fill 0.5 : tensor<4x3x3x3xf32>
  %b = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %s = graph.constant dense<[1.0, 2.0, 0.5, 1.0]> : tensor<4xf32>
  %t = graph.fill 0.25 : tensor<4xf32>
  %m = graph.fill 0.5 : tensor<4xf32>
  %v = graph.fill 3.0 : tensor<4xf32>
  // expected-remark@+2 {{applied ConvBatchnormFusionPass at loc("conv"): absorbed [conv, bn]}}
  // expected-remark@+1 {{applied ConvActivationFusionPass at loc("conv"): absorbed [conv, bn, relu]}}
  %c = graph.conv %x, %w bias(%b : tensor<4xf32>) {pads = array<i64: 1, 1, 1, 1>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x8x8xf32> loc("conv")
  %n = graph.batch_norm %c, %s, %t, %m, %v {epsilon = 1.0 : f32} : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32> loc("bn")
  %r = graph.relu %n : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> loc("relu")
  func.return %r : tensor<1x4x8x8xf32>
}

// s / sqrt(var + eps) = [0.5, 1, 0.25, 0.5]; b' = (b - mean) * that + beta.
// CHECK-LABEL: func.func @conv_bias_bn_relu
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense_resource<{{.*}}> : tensor<4x3x3x3xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<[5.000000e-01, 1.750000e+00, 8.750000e-01, 2.000000e+00]> : tensor<4xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.conv %{{.*}}, %[[W]] bias(%[[B]] : tensor<4xf32>) {absorbed = ["conv", "bn", "relu"], pads = array<i64: 1, 1, 1, 1>, activation = "relu"}
// CHECK-NEXT:    func.return %[[R]]

// -----

// Without a bias, a splat BN on splat weights: the folded weights stay a fill.
func.func @conv_bn_splat(%x: tensor<1x3x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.fill 0.5 : tensor<2x3x1x1xf32>
  %one = graph.fill 1.0 : tensor<2xf32>
  %zero = graph.fill 0.0 : tensor<2xf32>
  %three = graph.fill 3.0 : tensor<2xf32>
  // expected-remark@+1 {{applied ConvBatchnormFusionPass at loc("conv"): absorbed [conv, bn]}}
  %c = graph.conv %x, %w : tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32> -> tensor<1x2x4x4xf32> loc("conv")
  %n = graph.batch_norm %c, %three, %one, %zero, %three {epsilon = 1.0 : f32} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32> loc("bn")
  func.return %n : tensor<1x2x4x4xf32>
}

// CHECK-LABEL: func.func @conv_bn_splat
// CHECK-NEXT:    %[[W:.*]] = graph.fill 0.75 : tensor<2x3x1x1xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.fill 1.0 : tensor<2xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.conv %{{.*}}, %[[W]] bias(%[[B]] : tensor<2xf32>) {absorbed = ["conv", "bn"]}
// CHECK-NEXT:    func.return %[[C]]

// -----

// BatchNorm exported as Mul + Add by per-channel constants (DenseNet,
// Inception-v2): folded like a BN; then Relu (a Clip with only min = 0).
func.func @conv_scale(%x: tensor<1x3x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.fill 1.0 : tensor<2x3x1x1xf32>
  %k = graph.constant dense<[[[2.0]], [[3.0]]]> : tensor<2x1x1xf32>
  %d = graph.constant dense<[[[1.0]], [[-1.0]]]> : tensor<2x1x1xf32>
  // expected-remark@+3 {{applied ConvScaleFusionPass at loc("conv"): absorbed [conv, mul]}}
  // expected-remark@+2 {{applied ConvScaleFusionPass at loc("conv"): absorbed [conv, mul, add]}}
  // expected-remark@+1 {{applied ConvActivationFusionPass at loc("conv"): absorbed [conv, mul, add, clip]}}
  %c = graph.conv %x, %w : tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32> -> tensor<1x2x4x4xf32> loc("conv")
  %m = graph.mul %c, %k : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32> loc("mul")
  %a = graph.add %d, %m : (tensor<2x1x1xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("add")
  %r = graph.clip %a {min = 0.0 : f32} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("clip")
  func.return %r : tensor<1x2x4x4xf32>
}

// CHECK-LABEL: func.func @conv_scale
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense<{{\[\[\[\[}}2.000000e+00]], {{.*}}3.000000e+00]]]]> : tensor<2x3x1x1xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<[1.000000e+00, -1.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.conv %{{.*}}, %[[W]] bias(%[[B]] : tensor<2xf32>) {absorbed = ["conv", "mul", "add", "clip"], activation = "relu"}
// CHECK-NEXT:    func.return %[[C]]

// -----

// ResNet: Conv + Sum (two operands) + Relu → residual epilogue, then relu.
func.func @conv_residual(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32> {
  // expected-remark@+2 {{applied ConvAddFusionPass at loc("conv"): absorbed [conv, sum]}}
  // expected-remark@+1 {{applied ConvActivationFusionPass at loc("conv"): absorbed [conv, sum, relu]}}
  %c = graph.conv %x, %w : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32> -> tensor<1x2x4x4xf32> loc("conv")
  %s = graph.sum %x, %c : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("sum")
  %r = graph.relu %s : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("relu")
  func.return %r : tensor<1x2x4x4xf32>
}

// CHECK-LABEL: func.func @conv_residual
// CHECK-SAME:    (%[[X:.*]]: tensor<1x2x4x4xf32>, %[[W:.*]]: tensor<2x2x1x1xf32>)
// CHECK-NEXT:    %[[C:.*]] = graph.conv %[[X]], %[[W]] residual(%[[X]] : tensor<1x2x4x4xf32>) {absorbed = ["conv", "sum", "relu"], activation = "relu"}
// CHECK-NEXT:    func.return %[[C]]

// -----

// Clip(ReLU6), Sigmoid, LeakyRelu, HardSigmoid (its alpha and beta) and
// HardSwish (MobileNetV3) epilogues; a broadcast residual.
func.func @activations(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>, %r: tensor<2x1x1xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  // expected-remark@+1 {{applied ConvActivationFusionPass at loc("c1"): absorbed [c1, relu6]}}
  %c1 = graph.conv %x, %w : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32> -> tensor<1x2x4x4xf32> loc("c1")
  %y1 = graph.clip %c1 {min = 0.0 : f32, max = 6.0 : f32} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("relu6")
  // expected-remark@+1 {{applied ConvActivationFusionPass at loc("c2"): absorbed [c2, sig]}}
  %c2 = graph.conv %x, %w : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32> -> tensor<1x2x4x4xf32> loc("c2")
  %y2 = graph.sigmoid %c2 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("sig")
  // expected-remark@+2 {{applied ConvAddFusionPass at loc("c3"): absorbed [c3, add]}}
  // expected-remark@+1 {{applied ConvActivationFusionPass at loc("c3"): absorbed [c3, add, leaky]}}
  %c3 = graph.conv %x, %w : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32> -> tensor<1x2x4x4xf32> loc("c3")
  %a3 = graph.add %c3, %r : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32> loc("add")
  %y3 = graph.leaky_relu %a3 {alpha = 0.2 : f32} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("leaky")
  // expected-remark@+1 {{applied ConvActivationFusionPass at loc("c4"): absorbed [c4, hsig]}}
  %c4 = graph.conv %x, %w : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32> -> tensor<1x2x4x4xf32> loc("c4")
  %y4 = graph.hard_sigmoid %c4 {alpha = 0.25 : f32, beta = 0.4 : f32} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("hsig")
  // expected-remark@+1 {{applied ConvActivationFusionPass at loc("c5"): absorbed [c5, hswish]}}
  %c5 = graph.conv %x, %w : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32> -> tensor<1x2x4x4xf32> loc("c5")
  %y5 = graph.hard_swish %c5 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("hswish")
  func.return %y1, %y2, %y3, %y4, %y5 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}

// CHECK-LABEL: func.func @activations
// CHECK-SAME:    (%[[X:.*]]: tensor<1x2x4x4xf32>, %[[W:.*]]: tensor<2x2x1x1xf32>, %[[R:.*]]: tensor<2x1x1xf32>)
// CHECK-NEXT:    graph.conv %[[X]], %[[W]] {absorbed = ["c1", "relu6"], activation = "clip", activation_params = array<f64: 0.000000e+00, 6.000000e+00>}
// CHECK-NEXT:    graph.conv %[[X]], %[[W]] {absorbed = ["c2", "sig"], activation = "sigmoid"}
// CHECK-NEXT:    graph.conv %[[X]], %[[W]] residual(%[[R]] : tensor<2x1x1xf32>) {absorbed = ["c3", "add", "leaky"], activation = "leaky_relu", activation_params = array<f64: 2.000000e-01>}
// CHECK-NEXT:    graph.conv %[[X]], %[[W]] {absorbed = ["c4", "hsig"], activation = "hard_sigmoid", activation_params = array<f64: 2.500000e-01, 4.000000e-01>}
// CHECK-NEXT:    graph.conv %[[X]], %[[W]] {absorbed = ["c5", "hswish"], activation = "hard_swish"}

// -----

// Missed: the conv result has another user (never fuse across it).
func.func @other_users(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x2x2xf32>) {
  // expected-remark@+1 {{missed ConvActivationFusionPass at loc("conv"): intermediate has other users (graph.conv at loc("conv") is also used by graph.max_pool at loc("pool"))}}
  %c = graph.conv %x, %w : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32> -> tensor<1x2x4x4xf32> loc("conv")
  %r = graph.relu %c : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("relu")
  %p = graph.max_pool %c {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> loc("pool")
  func.return %r, %p : tensor<1x2x4x4xf32>, tensor<1x2x2x2xf32>
}

// CHECK-LABEL: func.func @other_users
// CHECK-NEXT:    %[[C:.*]] = graph.conv
// CHECK-NEXT:    graph.relu %[[C]]
// CHECK-NEXT:    graph.max_pool %[[C]]

// -----

// Missed: dynamic shape (a BN after a conv with a dynamic batch).
func.func @dynamic(%x: tensor<?x2x4x4xf32>) -> tensor<?x2x4x4xf32> {
  %w = graph.fill 1.0 : tensor<2x2x1x1xf32>
  %p = graph.fill 1.0 : tensor<2xf32>
  // expected-remark@+1 {{missed ConvBatchnormFusionPass at loc("conv"): dynamic shape}}
  %c = graph.conv %x, %w : tensor<?x2x4x4xf32>, tensor<2x2x1x1xf32> -> tensor<?x2x4x4xf32> loc("conv")
  %n = graph.batch_norm %c, %p, %p, %p, %p : (tensor<?x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<?x2x4x4xf32> loc("bn")
  func.return %n : tensor<?x2x4x4xf32>
}

// CHECK-LABEL: func.func @dynamic
// CHECK:         graph.conv
// CHECK-NEXT:    graph.batch_norm

// -----

// Missed: the BN statistics are inputs, not constants.
func.func @not_constant(%x: tensor<1x2x4x4xf32>, %var: tensor<2xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.fill 1.0 : tensor<2x2x1x1xf32>
  %p = graph.fill 1.0 : tensor<2xf32>
  // expected-remark@+1 {{missed ConvBatchnormFusionPass at loc("conv"): operand not constant (the batch_norm variance is computed, not a constant)}}
  %c = graph.conv %x, %w : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32> -> tensor<1x2x4x4xf32> loc("conv")
  %n = graph.batch_norm %c, %p, %p, %p, %var : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32> loc("bn")
  func.return %n : tensor<1x2x4x4xf32>
}

// CHECK-LABEL: func.func @not_constant
// CHECK:         graph.conv
// CHECK-NEXT:    graph.batch_norm

// -----

// Missed: an op with no epilogue form after the conv (unknown/custom op:
// a graph op that is no activation, an op of another dialect), and integer
// tensors (unsupported dtype).
func.func @unknown_and_dtype(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>, %xi: tensor<1x2x4x4xi32>, %wi: tensor<2x2x1x1xi32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xi32>) {
  // expected-remark@+1 {{missed ConvActivationFusionPass at loc("conv"): unknown/custom op (graph.exp has no epilogue form)}}
  %c = graph.conv %x, %w : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32> -> tensor<1x2x4x4xf32> loc("conv")
  %e = graph.exp %c : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("exp")
  // expected-remark@+1 {{missed ConvActivationFusionPass at loc("c2"): unknown/custom op (custom.swish at loc("swish") is not a graph op)}}
  %c2 = graph.conv %x, %w : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32> -> tensor<1x2x4x4xf32> loc("c2")
  %s = "custom.swish"(%c2) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("swish")
  // expected-remark@+1 {{missed ConvActivationFusionPass at loc("iconv"): unsupported dtype (graph.conv result has type tensor<1x2x4x4xi32>)}}
  %ci = graph.conv %xi, %wi : tensor<1x2x4x4xi32>, tensor<2x2x1x1xi32> -> tensor<1x2x4x4xi32> loc("iconv")
  %ri = graph.relu %ci : (tensor<1x2x4x4xi32>) -> tensor<1x2x4x4xi32> loc("irelu")
  func.return %e, %s, %ri : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xi32>
}

// CHECK-LABEL: func.func @unknown_and_dtype
// CHECK-NEXT:    graph.conv
// CHECK-NEXT:    graph.exp
// CHECK-NEXT:    graph.conv
// CHECK-NEXT:    "custom.swish"
// CHECK-NEXT:    graph.conv
// CHECK-NEXT:    graph.relu

// -----

// Missed: unsupported attributes. An activation epilogue is already set (the
// residual would have to be added before it), and a Clip with an open upper
// bound other than Relu has no epilogue form.
func.func @attributes(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  // expected-remark@+1 {{missed ConvAddFusionPass at loc("conv"): unsupported attribute (the conv already has a relu epilogue (the residual is added before it))}}
  %c = graph.conv %x, %w {activation = "relu"} : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32> -> tensor<1x2x4x4xf32> loc("conv")
  %a = graph.add %c, %x : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("add")
  // expected-remark@+1 {{missed ConvActivationFusionPass at loc("c2"): unsupported attribute (a clip with an open bound other than max(x, 0) has no epilogue form)}}
  %c2 = graph.conv %x, %w : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32> -> tensor<1x2x4x4xf32> loc("c2")
  %y2 = graph.clip %c2 {max = 6.0 : f32} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("clip")
  func.return %a, %y2 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}

// CHECK-LABEL: func.func @attributes
// CHECK-NEXT:    graph.conv
// CHECK-NEXT:    graph.add
// CHECK-NEXT:    graph.conv
// CHECK-NEXT:    graph.clip

// The log (--log=info) prints each remark naming the op and the source line.
// LOG: INFO: {{.*}}fuse-conv.mlir:{{[0-9]+}}:3: 'graph.conv' op applied ConvBatchnormFusionPass at loc("conv"): absorbed [conv, bn]
// LOG: INFO: {{.*}}fuse-conv.mlir:{{[0-9]+}}:3: 'graph.conv' op applied ConvActivationFusionPass at loc("conv"): absorbed [conv, bn, relu]
// LOG: INFO: graph-fuse: 2 fusions applied, 0 candidates missed
// LOG: 'graph.conv' op missed ConvActivationFusionPass at loc("conv"): intermediate has other users
