// Every verifier error of the graph dialect, one per chunk, checked with
// MLIR's --verify-diagnostics semantics. Messages name the op (and its model node
// when it has a name location), say what is wrong, and give the shapes.
// RUN: ge-opt %s --split-input-file --verify-diagnostics

// A conv whose input channels differ from the weight's; an op with a name
// location (as imported from ONNX) is named by it: the model node shows.
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error@+1 {{graph.conv at loc("conv1"): input channels 3 do not match weight channels 2 x group 1}}
  %y = graph.conv %x, %w : tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32> -> tensor<1x4x6x6xf32> loc("conv1")
  func.return
}

// -----

// A fused location (an op standing for several model nodes) names them all.
func.func @f(%x: tensor<1x4x6x6xf32>) {
  // expected-error@+1 {{graph.relu at loc("conv1"), loc("relu1"): result #0 has element type f16 but the operands give f32}}
  %y = graph.relu %x : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf16> loc(fused["conv1", "relu1"])
  func.return
}

// -----

// Output channels must split evenly into the groups.
func.func @f(%x: tensor<1x6x8x8xf32>, %w: tensor<3x3x3x3xf32>) {
  // expected-error@+1 {{graph.conv: output channels 3 are not divisible by group 2}}
  %y = graph.conv %x, %w {group = 2 : i64} : tensor<1x6x8x8xf32>, tensor<3x3x3x3xf32> -> tensor<1x3x6x6xf32>
  func.return
}

// -----

// Input and weight of different rank.
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error@+1 {{graph.conv: input 1x3x8x8 and weight 4x3x3 must have the same rank (>= 3)}}
  %y = graph.conv %x, %w : tensor<1x3x8x8xf32>, tensor<4x3x3xf32> -> tensor<1x4x6x6xf32>
  func.return
}

// -----

// One stride for a 2-d window.
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+1 {{graph.conv: expected 2 strides, 2 dilations and 4 pads, got 1, 2 and 4}}
  %y = graph.conv %x, %w {strides = array<i64: 2>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x3x3xf32>
  func.return
}

// -----

// Pads are [begins..., ends...]: a 2-d window needs four.
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+1 {{graph.conv: expected 2 strides, 2 dilations and 4 pads, got 2, 2 and 2}}
  %y = graph.conv %x, %w {pads = array<i64: 1, 1>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x8x8xf32>
  func.return
}

// -----

// Negative padding.
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+1 {{graph.conv: pads must be non-negative}}
  %y = graph.conv %x, %w {pads = array<i64: -1, 0, 0, 0>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x5x6xf32>
  func.return
}

// -----

// A zero stride.
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+1 {{graph.conv: strides and dilations must be positive}}
  %y = graph.conv %x, %w {strides = array<i64: 0, 1>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
  func.return
}

// -----

// The bias has one value per output channel.
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  // expected-error@+1 {{graph.conv: bias 3 must be 1-d of extent 4}}
  %y = graph.conv %x, %w bias(%b : tensor<3xf32>) : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
  func.return
}

// -----

// The residual is added to the result: it must broadcast to the result shape.
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %r: tensor<1x4x8x8xf32>) {
  // expected-error@+1 {{graph.conv: residual 1x4x8x8 does not broadcast to 1x4x6x6}}
  %y = graph.conv %x, %w residual(%r : tensor<1x4x8x8xf32>) : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
  func.return
}

// -----

// ... without growing it.
func.func @f(%x: tensor<1x3x3x3xf32>, %w: tensor<4x3x3x3xf32>, %r: tensor<1x4x2x2xf32>) {
  // expected-error@+1 {{graph.conv: residual 1x4x2x2 does not broadcast to 1x4x1x1}}
  %y = graph.conv %x, %w residual(%r : tensor<1x4x2x2xf32>) : tensor<1x3x3x3xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x1x1xf32>
  func.return
}

// -----

// Only the known activation epilogues.
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+1 {{graph.conv: unknown activation 'swish' (expected one of relu, leaky_relu, clip, sigmoid, tanh, gelu, hard_sigmoid, hard_swish)}}
  %y = graph.conv %x, %w {activation = "swish"} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
  func.return
}

// -----

// A window larger than the (padded) input.
func.func @f(%x: tensor<1x3x2x2xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+1 {{graph.conv: window of extent 3 does not fit input extent 2 with padding 0+0}}
  %y = graph.conv %x, %w : tensor<1x3x2x2xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x1x1xf32>
  func.return
}

// -----

// conv_transpose: input channels must match weight dim 0.
func.func @f(%x: tensor<1x4x4x4xf32>, %w: tensor<3x2x3x3xf32>) {
  // expected-error@+1 {{graph.conv_transpose: input channels 4 do not match weight dim 0 3}}
  %y = graph.conv_transpose %x, %w : (tensor<1x4x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  func.return
}

// -----

// conv_transpose with an output extent below one.
func.func @f(%x: tensor<1x4x1x1xf32>, %w: tensor<4x2x1x1xf32>) {
  // expected-error@+1 {{graph.conv_transpose: output extent -1 along spatial axis 0 is not positive}}
  %y = graph.conv_transpose %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x1x1xf32>, tensor<4x2x1x1xf32>) -> tensor<1x2x1x1xf32>
  func.return
}

// -----

// batch_norm parameters have one value per channel.
func.func @f(%x: tensor<1x4x8x8xf32>, %p: tensor<4xf32>, %q: tensor<3xf32>) {
  // expected-error@+1 {{graph.batch_norm: mean 3 must be 1-d of extent 4}}
  %y = graph.batch_norm %x, %p, %p, %q, %p : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  func.return
}

// -----

// batch_norm needs a channel dim.
func.func @f(%x: tensor<4xf32>, %p: tensor<4xf32>) {
  // expected-error@+1 {{graph.batch_norm: input 4 needs a channel dim}}
  %y = graph.batch_norm %x, %p, %p, %p, %p : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// A pooling window that leaves no output (a window may reach past the input,
// as in onnxruntime: extent trunc((2 - 4) / 1) + 1 = -1 here).
func.func @f(%x: tensor<1x4x2x2xf32>) {
  // expected-error@+1 {{graph.max_pool: window of extent 4 does not fit input extent 2 with padding 0+0}}
  %y = graph.max_pool %x {kernel_shape = array<i64: 4, 4>} : (tensor<1x4x2x2xf32>) -> tensor<1x4x1x1xf32>
  func.return
}

// -----

// The kernel rank fixes the input rank.
func.func @f(%x: tensor<1x4x8xf32>) {
  // expected-error@+1 {{graph.avg_pool: input 1x4x8 needs rank 4 for a 2-d kernel}}
  %y = graph.avg_pool %x {kernel_shape = array<i64: 3, 3>} : (tensor<1x4x8xf32>) -> tensor<1x4x6xf32>
  func.return
}

// -----

// Global pooling needs spatial dims.
func.func @f(%x: tensor<1x4xf32>) {
  // expected-error@+1 {{graph.global_avg_pool: input 1x4 needs spatial dims}}
  %y = graph.global_avg_pool %x : (tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return
}

// -----

// lrn needs rank >= 3.
func.func @f(%x: tensor<1x4xf32>) {
  // expected-error@+1 {{graph.lrn: input 1x4 needs rank >= 3}}
  %y = graph.lrn %x {size = 3 : i64} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return
}

// -----

// lrn needs a positive size.
func.func @f(%x: tensor<1x4x2x2xf32>) {
  // expected-error@+1 {{graph.lrn: size must be positive}}
  %y = graph.lrn %x {size = 0 : i64} : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  func.return
}

// -----

// matmul contraction dims must agree.
func.func @f(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error@+1 {{graph.matmul: contraction dims differ: 2x3 x 4x5 (3 vs 4)}}
  %y = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  func.return
}

// -----

// matmul of a scalar.
func.func @f(%a: tensor<f32>, %b: tensor<4x5xf32>) {
  // expected-error@+1 {{graph.matmul: matmul operands must have rank >= 1}}
  %y = graph.matmul %a, %b : (tensor<f32>, tensor<4x5xf32>) -> tensor<5xf32>
  func.return
}

// -----

// matmul batch dims must broadcast.
func.func @f(%a: tensor<2x2x3xf32>, %b: tensor<3x3x5xf32>) {
  // expected-error@+1 {{graph.matmul: batch dims of 2x2x3 x 3x3x5 do not broadcast}}
  %y = graph.matmul %a, %b : (tensor<2x2x3xf32>, tensor<3x3x5xf32>) -> tensor<2x2x5xf32>
  func.return
}

// -----

// The matmul bias must broadcast to the result.
func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>, %c: tensor<4xf32>) {
  // expected-error@+1 {{graph.matmul: bias 4 does not broadcast to 2x5}}
  %y = graph.matmul %a, %b, %c : (tensor<2x3xf32>, tensor<3x5xf32>, tensor<4xf32>) -> tensor<2x5xf32>
  func.return
}

// -----

// gemm operands are 2-d.
func.func @f(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error@+1 {{graph.gemm: gemm operands must be 2-d, got 2x3x4 and 4x5}}
  %y = graph.gemm %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  func.return
}

// -----

// gemm contraction dims (after trans_b) must agree.
func.func @f(%a: tensor<2x3xf32>, %b: tensor<5x4xf32>) {
  // expected-error@+1 {{graph.gemm: contraction dims differ: 3 vs 4}}
  %y = graph.gemm %a, %b {trans_b = 1 : i64} : (tensor<2x3xf32>, tensor<5x4xf32>) -> tensor<2x5xf32>
  func.return
}

// -----

// The gemm bias (C) must broadcast to the result.
func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>, %c: tensor<3x5xf32>) {
  // expected-error@+1 {{graph.gemm: bias 3x5 does not broadcast to 2x5}}
  %y = graph.gemm %a, %b, %c : (tensor<2x3xf32>, tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  func.return
}

// -----

// softmax axis out of range.
func.func @f(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.softmax: axis 2 is out of range for rank 2}}
  %y = graph.softmax %x {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// log_softmax axis out of range (negative).
func.func @f(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.log_softmax: axis -3 is out of range for rank 2}}
  %y = graph.log_softmax %x {axis = -3 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// layer_norm scale over more dims than are normalised.
func.func @f(%x: tensor<2x3x4xf32>, %s: tensor<3x4xf32>) {
  // expected-error@+1 {{graph.layer_norm: scale 3x4 has more dims than 4}}
  %y = graph.layer_norm %x, %s : tensor<2x3x4xf32>, tensor<3x4xf32> -> tensor<2x3x4xf32>
  func.return
}

// -----

// layer_norm bias that does not broadcast to the normalised dims.
func.func @f(%x: tensor<2x3x4xf32>, %s: tensor<4xf32>, %b: tensor<5xf32>) {
  // expected-error@+1 {{graph.layer_norm: bias 5 does not broadcast to 4}}
  %y = graph.layer_norm %x, %s bias(%b : tensor<5xf32>) : tensor<2x3x4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>
  func.return
}

// -----

// layer_norm residual that does not broadcast.
func.func @f(%x: tensor<2x3x4xf32>, %s: tensor<4xf32>, %r: tensor<2x2x4xf32>) {
  // expected-error@+1 {{graph.layer_norm: residual 2x2x4 does not broadcast to 2x3x4}}
  %y = graph.layer_norm %x, %s residual(%r : tensor<2x2x4xf32>) : tensor<2x3x4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>
  func.return
}

// -----

// layer_norm residual that would grow the result.
func.func @f(%x: tensor<2x3x4xf32>, %s: tensor<4xf32>, %r: tensor<5x2x3x4xf32>) {
  // expected-error@+1 {{graph.layer_norm: residual 5x2x3x4 does not broadcast to 2x3x4}}
  %y = graph.layer_norm %x, %s residual(%r : tensor<5x2x3x4xf32>) : tensor<2x3x4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>
  func.return
}

// -----

// gelu's approximate is "none" or "tanh".
func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{graph.gelu: approximate must be "none" or "tanh"}}
  %y = graph.gelu %x {approximate = "fast"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// Binary operands must broadcast.
func.func @f(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error@+1 {{graph.add: shapes 2x3, 4x3 do not broadcast}}
  %y = graph.add %a, %b : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

// Operands of different float types.
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error@+1 {{graph.mul: operands mix element types f32, f16}}
  %y = graph.mul %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  func.return
}

// -----

// The result shape is re-derived from the operands and must agree.
func.func @f(%a: tensor<4xf32>) {
  // expected-error@+1 {{graph.relu: result #0 has shape 5 but the operands give 4}}
  %y = graph.relu %a : (tensor<4xf32>) -> tensor<5xf32>
  func.return
}

// -----

// ... including the rank.
func.func @f(%a: tensor<4xf32>) {
  // expected-error@+1 {{graph.relu: result #0 has shape 4x1 but the operands give 4}}
  %y = graph.relu %a : (tensor<4xf32>) -> tensor<4x1xf32>
  func.return
}

// -----

// The result element type must agree too (only graph.cast changes it).
func.func @f(%a: tensor<4xf32>) {
  // expected-error@+1 {{graph.exp: result #0 has element type f16 but the operands give f32}}
  %y = graph.exp %a : (tensor<4xf32>) -> tensor<4xf16>
  func.return
}

// -----

// sum of nothing.
func.func @f() {
  // expected-error@+1 {{graph.sum: sum needs at least one operand}}
  %y = graph.sum : () -> tensor<4xf32>
  func.return
}

// -----

// sum operands must broadcast.
func.func @f(%a: tensor<4xf32>, %b: tensor<3xf32>) {
  // expected-error@+1 {{graph.sum: shapes 4, 4, 3 do not broadcast}}
  %y = graph.sum %a, %a, %b : (tensor<4xf32>, tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
  func.return
}

// -----

// Reduction axis out of range.
func.func @f(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.reduce_sum: axes 2 is out of range for rank 2}}
  %y = graph.reduce_sum %x {axes = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// Reduction axes that name the same axis twice.
func.func @f(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.reduce_mean: axes [1, -1] repeat an axis}}
  %y = graph.reduce_mean %x {axes = array<i64: 1, -1>} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  func.return
}

// -----

// concat operands of different rank.
func.func @f(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) {
  // expected-error@+1 {{graph.concat: concat operands must all have the same rank}}
  %y = graph.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

// concat operands differing off the concat axis.
func.func @f(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error@+1 {{graph.concat: concat operands differ in dim 1 (3 vs 4)}}
  %y = graph.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

// concat of nothing.
func.func @f() {
  // expected-error@+1 {{graph.concat: concat needs at least one operand}}
  %y = graph.concat {axis = 0 : i64} : () -> tensor<4x3xf32>
  func.return
}

// -----

// split sizes must add up to the split dim.
func.func @f(%x: tensor<2x6xf32>) {
  // expected-error@+1 {{graph.split: split sizes [2, 3] do not add up to dim 6}}
  %a, %b = graph.split %x {axis = 1 : i64, split = array<i64: 2, 3>} : (tensor<2x6xf32>) -> (tensor<2x2xf32>, tensor<2x3xf32>)
  func.return
}

// -----

// split needs one result per size.
func.func @f(%x: tensor<2x6xf32>) {
  // expected-error@+1 {{graph.split: split [2, 2, 2] makes 3 parts but the op has 2 results}}
  %a, %b = graph.split %x {axis = 1 : i64, split = array<i64: 2, 2, 2>} : (tensor<2x6xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>)
  func.return
}

// -----

// slice starts/ends/axes/steps of different lengths.
func.func @f(%x: tensor<2x6xf32>) {
  // expected-error@+1 {{graph.slice: starts, ends, axes and steps must have the same length}}
  %y = graph.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 1>} : (tensor<2x6xf32>) -> tensor<1x6xf32>
  func.return
}

// -----

// slice step 0.
func.func @f(%x: tensor<2x6xf32>) {
  // expected-error@+1 {{graph.slice: slice step must not be 0}}
  %y = graph.slice %x {starts = array<i64: 0>, ends = array<i64: 1>, steps = array<i64: 0>} : (tensor<2x6xf32>) -> tensor<1x6xf32>
  func.return
}

// -----

// reshape whose -1 cannot be inferred.
func.func @f(%x: tensor<2x6xf32>) {
  // expected-error@+1 {{graph.reshape: cannot reshape 2x6 into [5, -1]}}
  %y = graph.reshape %x {shape = array<i64: 5, -1>} : (tensor<2x6xf32>) -> tensor<5x2xf32>
  func.return
}

// -----

// reshape to another number of elements.
func.func @f(%x: tensor<2x6xf32>) {
  // expected-error@+1 {{graph.reshape: cannot reshape 2x6 (12 elements) into 3x5}}
  %y = graph.reshape %x {shape = array<i64: 3, 5>} : (tensor<2x6xf32>) -> tensor<3x5xf32>
  func.return
}

// -----

// reshape with two -1.
func.func @f(%x: tensor<2x6xf32>) {
  // expected-error@+1 {{graph.reshape: shape [-1, -1] has more than one -1}}
  %y = graph.reshape %x {shape = array<i64: -1, -1>} : (tensor<2x6xf32>) -> tensor<3x4xf32>
  func.return
}

// -----

// reshape with a negative dim other than -1.
func.func @f(%x: tensor<2x6xf32>) {
  // expected-error@+1 {{graph.reshape: shape [-2, -6] has a negative dim}}
  %y = graph.reshape %x {shape = array<i64: -2, -6>} : (tensor<2x6xf32>) -> tensor<2x6xf32>
  func.return
}

// -----

// reshape copying (0) a dim the input lacks.
func.func @f(%x: tensor<12xf32>) {
  // expected-error@+1 {{graph.reshape: shape [3, 0] copies dim 1 the input lacks}}
  %y = graph.reshape %x {shape = array<i64: 3, 0>} : (tensor<12xf32>) -> tensor<3x4xf32>
  func.return
}

// -----

// flatten axis is in [-rank, rank].
func.func @f(%x: tensor<2x6xf32>) {
  // expected-error@+1 {{graph.flatten: axis 3 is out of range for rank 2}}
  %y = graph.flatten %x {axis = 3 : i64} : (tensor<2x6xf32>) -> tensor<12x1xf32>
  func.return
}

// -----

// transpose perm that is not a permutation.
func.func @f(%x: tensor<2x6x4xf32>) {
  // expected-error@+1 {{graph.transpose: perm [0, 2, 2] is not a permutation of rank 3}}
  %y = graph.transpose %x {perm = array<i64: 0, 2, 2>} : (tensor<2x6x4xf32>) -> tensor<2x4x4xf32>
  func.return
}

// -----

// squeeze of a dim that is not 1.
func.func @f(%x: tensor<2x1x4xf32>) {
  // expected-error@+1 {{graph.squeeze: cannot squeeze axis 0 of extent 2}}
  %y = graph.squeeze %x {axes = array<i64: 0>} : (tensor<2x1x4xf32>) -> tensor<1x4xf32>
  func.return
}

// -----

// unsqueeze axes count in the result rank.
func.func @f(%x: tensor<2x4xf32>) {
  // expected-error@+1 {{graph.unsqueeze: axes 3 is out of range for rank 3}}
  %y = graph.unsqueeze %x {axes = array<i64: 3>} : (tensor<2x4xf32>) -> tensor<2x4x1xf32>
  func.return
}

// -----

// unsqueeze axes naming one result axis twice.
func.func @f(%x: tensor<2x4xf32>) {
  // expected-error@+1 {{graph.unsqueeze: axes [1, -3] repeat an axis}}
  %y = graph.unsqueeze %x {axes = array<i64: 1, -3>} : (tensor<2x4xf32>) -> tensor<2x1x1x4xf32>
  func.return
}

// -----

// gather indices are integers.
func.func @f(%x: tensor<10x4xf32>, %i: tensor<3xf32>) {
  // expected-error@+1 {{graph.gather: indices must be integers, got f32}}
  %y = graph.gather %x, %i : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  func.return
}

// -----

// gather axis out of range.
func.func @f(%x: tensor<10x4xf32>, %i: tensor<3xi64>) {
  // expected-error@+1 {{graph.gather: axis 2 is out of range for rank 2}}
  %y = graph.gather %x, %i {axis = 2 : i64} : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  func.return
}

// -----

// fill has a static shape: it is a weight.
func.func @f() {
  // expected-error@+1 {{graph.fill: fill needs a static shape}}
  %y = graph.fill 0.0 : tensor<?x4xf32>
  func.return
}

// -----

// fill value of another type than the elements (generic form).
func.func @f() {
  // expected-error@+1 {{graph.fill: value type i64 differs from element type f32}}
  %y = "graph.fill"() <{value = 1 : i64}> : () -> tensor<4xf32>
  func.return
}

// -----

// constant value of another type than the result (generic form).
func.func @f() {
  // expected-error@+1 {{graph.constant: value type tensor<2xf32> differs from result type tensor<3xf32>}}
  %y = "graph.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  func.return
}

// -----

// A fusion body must end with graph.yield.
func.func @f(%a: tensor<4xf32>) {
  %y = graph.fusion %a : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    // expected-error@+1 {{Operation graph.relu terminates block in single-block region but is not a terminator}}
    %r = graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  }
  func.return
}

// -----

// The yield types are the fusion's result types.
func.func @f(%a: tensor<4xf32>) {
  // expected-error@+1 {{graph.fusion: graph.yield types must match the result types}}
  %y = graph.fusion %a : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    %r = graph.cast %x : (tensor<4xf32>) -> tensor<4xf16>
    graph.yield %r : tensor<4xf16>
  }
  func.return
}

// -----

// The body arguments stand for the operands.
func.func @f(%a: tensor<4xf32>) {
  // expected-error@+1 {{graph.fusion: body arguments must match the operand types}}
  %y = graph.fusion %a : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf16>):
    graph.yield %x : tensor<4xf16>
  }
  func.return
}

// -----

// Only elementwise ops fuse into a loop fusion body.
func.func @f(%a: tensor<4x4xf32>) {
  // expected-error@+1 {{graph.fusion: graph.transpose cannot be fused into a loop fusion body}}
  %y = graph.fusion %a : (tensor<4x4xf32>) -> tensor<4x4xf32> {
  ^bb0(%x: tensor<4x4xf32>):
    %t = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    graph.yield %t : tensor<4x4xf32>
  }
  func.return
}

// -----

// graph.yield only terminates a fusion.
func.func @f(%a: tensor<4xf32>) {
  // expected-error@+1 {{'graph.yield' expects parent op 'graph.fusion'}}
  graph.yield %a : tensor<4xf32>
}

// -----

// Nothing may follow graph.yield.
func.func @f(%a: tensor<4xf32>) {
  %y = graph.fusion %a : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    // expected-error@+1 {{'graph.yield' must be the last operation in its parent block}}
    graph.yield %x : tensor<4xf32>
    %r = graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  }
  func.return
}

// -----

// An empty fusion body has no terminator.
func.func @f(%a: tensor<4xf32>) {
  // expected-error@+1 {{Operation graph.fusion contains empty block in single-block region that expects at least a terminator}}
  %y = graph.fusion %a : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
  }
  func.return
}

// -----

// Property types are checked (group is an integer).
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+1 {{'graph.conv' op 2.000000e+00 : f32 should be of base attribute integer}}
  %y = graph.conv %x, %w {group = 2.0 : f32} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
  func.return
}

// -----

// graph.fill's custom syntax needs a tensor type.
func.func @f() {
  // expected-error@+1 {{graph.fill expects a tensor type}}
  %c = graph.fill 1.0 : f32
  func.return
}

// -----

// flatten axis below -rank.
func.func @f(%x: tensor<2x6xf32>) {
  // expected-error@+1 {{graph.flatten: axis -3 is out of range for rank 2}}
  %y = graph.flatten %x {axis = -3 : i64} : (tensor<2x6xf32>) -> tensor<1x12xf32>
  func.return
}

// -----

// graph.constant's custom syntax needs a dense or dense_resource value.
func.func @f() {
  // expected-error@+1 {{graph.constant expects a dense or dense_resource value}}
  %c = graph.constant "w"
  func.return
}

// -----

// A reshaping softmax must keep its axis intact.
func.func @f(%x: tensor<1x16xf32>) {
  // expected-error@+1 {{graph.softmax: shape 1x4x4 does not keep axis 1 of 1x16 intact}}
  %s = graph.softmax %x {axis = 1 : i64, shape = array<i64: 1, 4, 4>} : (tensor<1x16xf32>) -> tensor<1x4x4xf32>
  func.return
}

// -----

// ... and static shapes.
func.func @f(%x: tensor<?x16xf32>) {
  // expected-error@+1 {{graph.softmax: a reshaping softmax needs static shapes}}
  %s = graph.softmax %x {axis = 1 : i64, shape = array<i64: 16>} : (tensor<?x16xf32>) -> tensor<16xf32>
  func.return
}

// -----

// graph.transdata: formats are from the known set...
func.func @f(%x: tensor<1x16x4x4xf32>) {
  // expected-error@+1 {{graph.transdata: unknown storage format 'NHWC0' (expected one of ND, NCHW, NC1HWC0, FLAT_NC1HWC0, FRACTAL_Z)}}
  %y = graph.transdata %x {src_format = "NCHW", dst_format = "NHWC0"} : (tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  func.return
}

// -----

// ... a 4-D format needs a 4-D tensor ...
func.func @f(%x: tensor<16x16xf32>) {
  // expected-error@+1 {{graph.transdata: format NC1HWC0 needs a 4-D tensor, got 16x16}}
  %y = graph.transdata %x {src_format = "ND", dst_format = "NC1HWC0"} : (tensor<16x16xf32>) -> tensor<16x16xf32>
  func.return
}

// -----

// ... and a transdata changes the byte order (ND and NCHW are the same one).
func.func @f(%x: tensor<1x16x4x4xf32>) {
  // expected-error@+1 {{graph.transdata: ND -> NCHW does not change the format}}
  %y = graph.transdata %x {src_format = "ND", dst_format = "NCHW"} : (tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  func.return
}

// -----

// ops-A: a comparison's operands have one element type ...
func.func @f(%a: tensor<2x3xf32>, %i: tensor<2x3xi64>) {
  // expected-error@+1 {{graph.less: operands mix element types f32, i64}}
  %y = graph.less %a, %i : (tensor<2x3xf32>, tensor<2x3xi64>) -> tensor<2x3xi1>
  func.return
}

// -----

// ... its result is bool ...
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.equal: result #0 has element type f32 but the operands give i1}}
  %y = graph.equal %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// ... and its operands broadcast.
func.func @f(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{graph.greater_equal: shapes 2x3, 4 do not broadcast}}
  %y = graph.greater_equal %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xi1>
  func.return
}

// -----

// Logic ops take bool operands.
func.func @f(%a: tensor<2x3xf32>, %p: tensor<2x3xi1>) {
  // expected-error@+1 {{graph.and: operands must be bool (i1), got f32, i1}}
  %y = graph.and %a, %p : (tensor<2x3xf32>, tensor<2x3xi1>) -> tensor<2x3xi1>
  func.return
}

// -----

func.func @f(%i: tensor<3xi64>) {
  // expected-error@+1 {{graph.not: operand must be bool (i1), got i64}}
  %y = graph.not %i : (tensor<3xi64>) -> tensor<3xi64>
  func.return
}

// -----

// graph.where: the condition is bool ...
func.func @f(%c: tensor<3xf32>, %x: tensor<3xf32>) {
  // expected-error@+1 {{graph.where: condition must be bool (i1), got f32}}
  %y = graph.where %c, %x, %x : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// -----

// ... x and y have one element type ...
func.func @f(%c: tensor<3xi1>, %x: tensor<3xf32>, %i: tensor<3xi64>) {
  // expected-error@+1 {{graph.where: x and y mix element types f32, i64}}
  %y = graph.where %c, %x, %i : (tensor<3xi1>, tensor<3xf32>, tensor<3xi64>) -> tensor<3xf32>
  func.return
}

// -----

// ... and all three broadcast.
func.func @f(%c: tensor<2xi1>, %x: tensor<3xf32>) {
  // expected-error@+1 {{graph.where: shapes 2, 3, 3 do not broadcast}}
  %y = graph.where %c, %x, %x : (tensor<2xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// -----

// graph.mod: fmod is 0 or 1 ...
func.func @f(%i: tensor<3xi64>) {
  // expected-error@+1 {{graph.mod: fmod must be 0 or 1, got 2}}
  %y = graph.mod %i, %i {fmod = 2 : i64} : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  func.return
}

// -----

// ... and the operands are numbers.
func.func @f(%p: tensor<3xi1>) {
  // expected-error@+1 {{graph.mod: operands must be numbers, got i1}}
  %y = graph.mod %p, %p : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  func.return
}

// -----

// Sin, cos, softplus, hard_sigmoid and hard_swish take float tensors.
func.func @f(%i: tensor<3xi64>) {
  // expected-error@+1 {{graph.sin: operand must be a float tensor, got i64}}
  %y = graph.sin %i : (tensor<3xi64>) -> tensor<3xi64>
  func.return
}

// -----

// graph.expand: the input and the shape broadcast ...
func.func @f(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.expand: input 2x3 does not broadcast to shape [4, 3]}}
  %y = graph.expand %x {shape = array<i64: 4, 3>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

// ... and the shape has no negative dim.
func.func @f(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.expand: shape [-1, 3] has a negative dim}}
  %y = graph.expand %x {shape = array<i64: -1, 3>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// graph.tile: one repeat count per dim ...
func.func @f(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.tile: repeats [2] must have one entry per dim of 2x3}}
  %y = graph.tile %x {repeats = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

// ... none negative.
func.func @f(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.tile: repeats [1, -2] must not be negative}}
  %y = graph.tile %x {repeats = array<i64: 1, -2>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// graph.trilu: a matrix (or a batch of them) ...
func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{graph.trilu: input 4 needs rank >= 2}}
  %y = graph.trilu %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// ... and upper is 0 or 1.
func.func @f(%x: tensor<4x4xf32>) {
  // expected-error@+1 {{graph.trilu: upper must be 0 or 1, got 2}}
  %y = graph.trilu %x {upper = 2 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return
}

// -----

// graph.cumsum: the axis is in range ...
func.func @f(%x: tensor<4x4xf32>) {
  // expected-error@+1 {{graph.cumsum: axis 2 is out of range for rank 2}}
  %y = graph.cumsum %x {axis = 2 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return
}

// -----

// ... exclusive and reverse are 0 or 1 ...
func.func @f(%x: tensor<4x4xf32>) {
  // expected-error@+1 {{graph.cumsum: reverse must be 0 or 1, got -1}}
  %y = graph.cumsum %x {axis = 0 : i64, reverse = -1 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return
}

// -----

// ... and the operand holds numbers.
func.func @f(%p: tensor<4xi1>) {
  // expected-error@+1 {{graph.cumsum: elements must be numbers, got i1}}
  %y = graph.cumsum %p {axis = 0 : i64} : (tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// -----

// graph.range: three scalars ...
func.func @f(%s: tensor<1xi64>, %l: tensor<i64>) {
  // expected-error@+1 {{graph.range: start must be a scalar, got shape 1}}
  %y = graph.range %s, %l, %l : (tensor<1xi64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  func.return
}

// -----

// ... of one numeric element type.
func.func @f(%s: tensor<i64>, %d: tensor<f32>) {
  // expected-error@+1 {{graph.range: operands mix element types i64, i64, f32}}
  %y = graph.range %s, %s, %d : (tensor<i64>, tensor<i64>, tensor<f32>) -> tensor<?xi64>
  func.return
}

// -----

func.func @f(%p: tensor<i1>) {
  // expected-error@+1 {{graph.range: operands must be numbers, got i1}}
  %y = graph.range %p, %p, %p : (tensor<i1>, tensor<i1>, tensor<i1>) -> tensor<?xi1>
  func.return
}

// -----

// ops-B: graph.pad knows four modes...
func.func @f(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.pad: unknown mode 'symmetric' (expected one of constant, reflect, edge, wrap)}}
  %y = graph.pad %x {pads = array<i64: 0, 1, 0, 1>, mode = "symmetric"} : (tensor<2x3xf32>) -> tensor<2x5xf32>
  func.return
}

// -----

// ... only mode constant has a fill value ...
func.func @f(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.pad: a fill value needs mode constant, not edge}}
  %y = graph.pad %x {pads = array<i64: 0, 1, 0, 1>, mode = "edge", value = 1.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x5xf32>
  func.return
}

// -----

// ... of the element type ...
func.func @f(%x: tensor<2x3xi64>) {
  // expected-error@+1 {{graph.pad: value type f32 differs from element type i64}}
  %y = graph.pad %x {pads = array<i64: 0, 1, 0, 1>, value = 1.000000e+00 : f32} : (tensor<2x3xi64>) -> tensor<2x5xi64>
  func.return
}

// -----

// ... pads has a begin and an end per dim ...
func.func @f(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.pad: pads [0, 1] must have 4 entries for rank 2}}
  %y = graph.pad %x {pads = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

// ... negative pads crop, but not more than the extent ...
func.func @f(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.pad: pads -2, -2 crop more than extent 3 of dim 1}}
  %y = graph.pad %x {pads = array<i64: 0, -2, 0, -2>} : (tensor<2x3xf32>) -> tensor<2x0xf32>
  func.return
}

// -----

// ... reflect adds at most extent - 1 cells per side (of the cropped extent) ...
func.func @f(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.pad: reflect pads 2, -1 of dim 1 exceed its extent 2 minus 1}}
  %y = graph.pad %x {pads = array<i64: 0, 2, 0, -1>, mode = "reflect"} : (tensor<2x3xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

// ... and edge/wrap need something to repeat.
func.func @f(%x: tensor<2x0xf32>) {
  // expected-error@+1 {{graph.pad: wrap pads of dim 1 need a non-empty extent}}
  %y = graph.pad %x {pads = array<i64: 0, 1, 0, 0>, mode = "wrap"} : (tensor<2x0xf32>) -> tensor<2x1xf32>
  func.return
}

// -----

// instance_norm/group_norm: (N, C, spatial...) inputs ...
func.func @f(%x: tensor<2x4xf32>, %p: tensor<4xf32>) {
  // expected-error@+1 {{graph.instance_norm: input 2x4 needs rank >= 3 (N, C, spatial...)}}
  %y = graph.instance_norm %x, %p, %p : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

// ... per-channel scale and bias ...
func.func @f(%x: tensor<2x4x5xf32>, %s: tensor<4xf32>, %b: tensor<2xf32>) {
  // expected-error@+1 {{graph.group_norm: bias 2 must be 1-d of extent 4 (the channels)}}
  %y = graph.group_norm %x, %s, %b {num_groups = 2 : i64} : (tensor<2x4x5xf32>, tensor<4xf32>, tensor<2xf32>) -> tensor<2x4x5xf32>
  func.return
}

// -----

// ... of float tensors ...
func.func @f(%x: tensor<2x4x5xi32>, %p: tensor<4xi32>) {
  // expected-error@+1 {{graph.instance_norm: operands must be float tensors, got i32}}
  %y = graph.instance_norm %x, %p, %p : (tensor<2x4x5xi32>, tensor<4xi32>, tensor<4xi32>) -> tensor<2x4x5xi32>
  func.return
}

// -----

// ... and groups that divide the channels.
func.func @f(%x: tensor<2x6x5xf32>, %p: tensor<6xf32>) {
  // expected-error@+1 {{graph.group_norm: channels 6 are not divisible by num_groups 4}}
  %y = graph.group_norm %x, %p, %p {num_groups = 4 : i64} : (tensor<2x6x5xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<2x6x5xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x6x5xf32>, %p: tensor<6xf32>) {
  // expected-error@+1 {{graph.group_norm: num_groups must be positive, got 0}}
  %y = graph.group_norm %x, %p, %p {num_groups = 0 : i64} : (tensor<2x6x5xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<2x6x5xf32>
  func.return
}

// -----

// graph.resize: nearest, linear and cubic only (others are refused at import too) ...
func.func @f(%x: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{graph.resize: unsupported mode 'lanczos' (expected one of nearest, linear, cubic)}}
  %y = graph.resize %x {scales = array<f64: 1.0, 1.0, 2.0, 2.0>, mode = "lanczos"} : (tensor<1x1x4x4xf32>) -> tensor<1x1x8x8xf32>
  func.return
}

// -----

// ... five coordinate transformations (no roi: no tf_crop_and_resize) ...
func.func @f(%x: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{graph.resize: unsupported coordinate_transformation_mode 'tf_crop_and_resize' (expected one of half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric)}}
  %y = graph.resize %x {scales = array<f64: 1.0, 1.0, 2.0, 2.0>, coordinate_transformation_mode = "tf_crop_and_resize"} : (tensor<1x1x4x4xf32>) -> tensor<1x1x8x8xf32>
  func.return
}

// -----

// ... a nearest_mode only for nearest resizing ...
func.func @f(%x: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{graph.resize: nearest_mode needs mode nearest, not linear}}
  %y = graph.resize %x {scales = array<f64: 1.0, 1.0, 2.0, 2.0>, mode = "linear", nearest_mode = "floor"} : (tensor<1x1x4x4xf32>) -> tensor<1x1x8x8xf32>
  func.return
}

// -----

// ... one of four ...
func.func @f(%x: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{graph.resize: unknown nearest_mode 'round' (expected one of round_prefer_floor, round_prefer_ceil, floor, ceil)}}
  %y = graph.resize %x {scales = array<f64: 1.0, 1.0, 2.0, 2.0>, nearest_mode = "round"} : (tensor<1x1x4x4xf32>) -> tensor<1x1x8x8xf32>
  func.return
}

// -----

// ... a scale per dim ...
func.func @f(%x: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{graph.resize: scales [2.0, 2.0] must have 4 entries for rank 4}}
  %y = graph.resize %x {scales = array<f64: 2.0, 2.0>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x8x8xf32>
  func.return
}

// -----

// ... positive ...
func.func @f(%x: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{graph.resize: scales [1.0, 1.0, 0.0, 2.0] must be positive}}
  %y = graph.resize %x {scales = array<f64: 1.0, 1.0, 0.0, 2.0>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x0x8xf32>
  func.return
}

// -----

// ... and not so small that the result is empty ...
func.func @f(%x: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{graph.resize: scales [1.0, 1.0, 0.2, 1.0] make 1x1x4x4 empty (1x1x0x4)}}
  %y = graph.resize %x {scales = array<f64: 1.0, 1.0, 0.2, 1.0>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x0x4xf32>
  func.return
}

// -----

// ... sizes, when given, have a positive extent per dim ...
func.func @f(%x: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{graph.resize: sizes [1, 1, 8] must have 4 entries for rank 4}}
  %y = graph.resize %x {scales = array<f64: 1.0, 1.0, 2.0, 2.0>, sizes = array<i64: 1, 1, 8>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x8x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{graph.resize: sizes [1, 1, 0, 8] must be positive}}
  %y = graph.resize %x {scales = array<f64: 1.0, 1.0, 2.0, 2.0>, sizes = array<i64: 1, 1, 0, 8>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x0x8xf32>
  func.return
}

// -----

// ... and linear interpolation is for floats.
func.func @f(%x: tensor<1x1x4x4xi64>) {
  // expected-error@+1 {{graph.resize: linear resizing needs a float tensor, got i64}}
  %y = graph.resize %x {scales = array<f64: 1.0, 1.0, 2.0, 2.0>, mode = "linear"} : (tensor<1x1x4x4xi64>) -> tensor<1x1x8x8xi64>
  func.return
}

// -----

// graph.einsum: a term per operand ...
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.einsum: equation 'ij,jk->ik' has 2 operand terms, the op has 1 operands}}
  %y = graph.einsum %a {equation = "ij,jk->ik"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// ... one or two operands ...
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.einsum: equation 'ij,jk,kl' has 3 operands; only 1 or 2 are supported}}
  %y = graph.einsum %a, %a, %a {equation = "ij,jk,kl"} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// ... no diagonals or traces (a letter twice in one operand) ...
func.func @f(%a: tensor<3x3xf32>) {
  // expected-error@+1 {{graph.einsum: letter 'i' repeats in operand #0 ('ii'): diagonals and traces are not supported}}
  %y = graph.einsum %a {equation = "ii->i"} : (tensor<3x3xf32>) -> tensor<3xf32>
  func.return
}

// -----

// ... dots only as an ellipsis ...
func.func @f(%a: tensor<3x3xf32>) {
  // expected-error@+1 {{graph.einsum: operand term 'i.j' has a '.' outside an ellipsis '...'}}
  %y = graph.einsum %a {equation = "i.j->ij"} : (tensor<3x3xf32>) -> tensor<3x3xf32>
  func.return
}

// -----

// ... letters ...
func.func @f(%a: tensor<3x3xf32>) {
  // expected-error@+1 {{graph.einsum: operand term 'i1' has a character that is no letter}}
  %y = graph.einsum %a {equation = "i1->i"} : (tensor<3x3xf32>) -> tensor<3xf32>
  func.return
}

// -----

// ... as many as the operand has dims (or fewer, with an ellipsis) ...
func.func @f(%a: tensor<2x3x4xf32>) {
  // expected-error@+1 {{graph.einsum: operand term 'ij' does not match operand #0 of rank 3}}
  %y = graph.einsum %a {equation = "ij->ji"} : (tensor<2x3x4xf32>) -> tensor<3x2xf32>
  func.return
}

// -----

// ... one extent per letter ...
func.func @f(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error@+1 {{graph.einsum: letter 'j' stands for extents 3 and 4}}
  %y = graph.einsum %a, %b {equation = "ij,jk->ik"} : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  func.return
}

// -----

// ... ellipsis dims that broadcast ...
func.func @f(%a: tensor<2x3x4xf32>, %b: tensor<5x4x6xf32>) {
  // expected-error@+1 {{graph.einsum: the '...' dims 2, 5 do not broadcast}}
  %y = graph.einsum %a, %b {equation = "...ij,...jk->...ik"} : (tensor<2x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x3x6xf32>
  func.return
}

// -----

// ... an output of letters ...
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.einsum: output term 'i_' has a character that is no letter}}
  %y = graph.einsum %a {equation = "ij->i_"} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return
}

// -----

// ... each once ...
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.einsum: letter 'i' repeats in the output term 'ii'}}
  %y = graph.einsum %a {equation = "ij->ii"} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  func.return
}

// -----

// ... taken from the operands ...
func.func @f(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.einsum: output letter 'k' is in no operand term}}
  %y = graph.einsum %a {equation = "ij->ik"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// ... keeping the broadcast dims of an ellipsis ...
func.func @f(%a: tensor<5x2x3xf32>) {
  // expected-error@+1 {{graph.einsum: output term 'ji' needs '...' for the 1 broadcast dims}}
  %y = graph.einsum %a {equation = "...ij->ji"} : (tensor<5x2x3xf32>) -> tensor<3x2xf32>
  func.return
}

// -----

// ... of numbers.
func.func @f(%a: tensor<2x3xi1>) {
  // expected-error@+1 {{graph.einsum: operands must be numbers, got i1}}
  %y = graph.einsum %a {equation = "ij->ji"} : (tensor<2x3xi1>) -> tensor<3x2xi1>
  func.return
}

// -----

// graph.argmax/argmin: an axis of the input ...
func.func @f(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.argmax: axis 2 is out of range for rank 2}}
  %y = graph.argmax %x {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x1xi64>
  func.return
}

// -----

// ... that is not empty ...
func.func @f(%x: tensor<2x0xf32>) {
  // expected-error@+1 {{graph.argmin: axis 1 of 2x0 is empty}}
  %y = graph.argmin %x {axis = 1 : i64} : (tensor<2x0xf32>) -> tensor<2x1xi64>
  func.return
}

// -----

// ... and an i64 result.
func.func @f(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.argmax: result #0 has element type i32 but the operands give i64}}
  %y = graph.argmax %x {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x1xi32>
  func.return
}

// -----

// graph.topk: k from 0 to the extent of the axis ...
func.func @f(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.topk: k 4 exceeds extent 3 of axis 1}}
  %v, %i = graph.topk %x {k = 4 : i64} : (tensor<2x3xf32>) -> (tensor<2x4xf32>, tensor<2x4xi64>)
  func.return
}

// -----

func.func @f(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.topk: k must not be negative, got -1}}
  %v, %i = graph.topk %x {k = -1 : i64, axis = 0 : i64} : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>)
  func.return
}

// -----

// ... and i64 indices.
func.func @f(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.topk: result #1 has element type i32 but the operands give i64}}
  %v, %i = graph.topk %x {k = 2 : i64} : (tensor<2x3xf32>) -> (tensor<2x2xf32>, tensor<2x2xi32>)
  func.return
}

// -----

// graph.gather_elements: indices of the input's rank ...
func.func @f(%x: tensor<2x3xf32>, %i: tensor<2xi64>) {
  // expected-error@+1 {{graph.gather_elements: indices 2 must have the rank of the input 2x3}}
  %y = graph.gather_elements %x, %i : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2xf32>
  func.return
}

// -----

// ... within the input off the axis ...
func.func @f(%x: tensor<2x3xf32>, %i: tensor<5x4xi64>) {
  // expected-error@+1 {{graph.gather_elements: indices 5x4 exceed the input 2x3 in dim 1}}
  %y = graph.gather_elements %x, %i {axis = 0 : i64} : (tensor<2x3xf32>, tensor<5x4xi64>) -> tensor<5x4xf32>
  func.return
}

// -----

// ... and integers.
func.func @f(%x: tensor<2x3xf32>, %i: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.gather_elements: indices must be integers, got f32}}
  %y = graph.gather_elements %x, %i : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// graph.reduce_l2/reduce_prod follow the reduce rules: axes of the input.
func.func @f(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.reduce_prod: axes 3 is out of range for rank 2}}
  %y = graph.reduce_prod %x {axes = array<i64: 3>} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  func.return
}

// -----

// A 0-d index drops the gathered axis: the result cannot keep it.
func.func @f(%h: tensor<1x4x64xf32>) {
  %k = graph.constant dense<0> : tensor<i64>
  // expected-error@+1 {{graph.gather: result #0 has shape 1x1x64 but the operands give 1x64}}
  %y = graph.gather %h, %k {axis = 1 : i64} : (tensor<1x4x64xf32>, tensor<i64>) -> tensor<1x1x64xf32>
  func.return
}

// -----

// A pool window may reach past the input with ceil_mode (onnxruntime's rule),
// but the extent follows from it: ceil((7 - 8) / 8) + 1 = 1.
func.func @f(%x: tensor<1x8x7x7xf32>) {
  // expected-error@+1 {{graph.avg_pool: result #0 has shape 1x8x2x2 but the operands give 1x8x1x1}}
  %y = graph.avg_pool %x {kernel_shape = array<i64: 8, 8>, strides = array<i64: 8, 8>, ceil_mode = 1 : i64} : (tensor<1x8x7x7xf32>) -> tensor<1x8x2x2xf32>
  func.return
}

// -----

// graph.gather_nd: batch_dims below the ranks of both operands ...
func.func @f(%x: tensor<2x3xf32>, %i: tensor<2x1xi64>) {
  // expected-error@+1 {{graph.gather_nd: batch_dims 2 must be in [0, 1] for input 2x3 and indices 2x1}}
  %y = graph.gather_nd %x, %i {batch_dims = 2 : i64} : (tensor<2x3xf32>, tensor<2x1xi64>) -> tensor<2xf32>
  func.return
}

// -----

// ... index tuples no longer than the input's rank minus batch_dims ...
func.func @f(%x: tensor<2x3x4xf32>, %i: tensor<2x3xi64>) {
  // expected-error@+1 {{graph.gather_nd: the last dim 3 of indices 2x3 must be in [1, 2] (input rank 3 minus batch_dims 1)}}
  %y = graph.gather_nd %x, %i {batch_dims = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<2xf32>
  func.return
}

// -----

// ... and of static length ...
func.func @f(%x: tensor<2x3xf32>, %i: tensor<4x?xi64>) {
  // expected-error@+1 {{graph.gather_nd: the last dim of indices 4x? must be static}}
  %y = graph.gather_nd %x, %i : (tensor<2x3xf32>, tensor<4x?xi64>) -> tensor<4xf32>
  func.return
}

// -----

// ... the batch dims shared ...
func.func @f(%x: tensor<2x3xf32>, %i: tensor<5x1xi64>) {
  // expected-error@+1 {{graph.gather_nd: batch dim 0 of the input 2x3 and the indices 5x1 differ}}
  %y = graph.gather_nd %x, %i {batch_dims = 1 : i64} : (tensor<2x3xf32>, tensor<5x1xi64>) -> tensor<5xf32>
  func.return
}

// -----

// ... indices of rank 1 or more ...
func.func @f(%x: tensor<2x3xf32>, %i: tensor<i64>) {
  // expected-error@+1 {{graph.gather_nd: indices must have rank at least 1, got a scalar}}
  %y = graph.gather_nd %x, %i : (tensor<2x3xf32>, tensor<i64>) -> tensor<3xf32>
  func.return
}

// -----

// ... and i64 (ONNX GatherND has no other index type).
func.func @f(%x: tensor<2x3xf32>, %i: tensor<4x2xi32>) {
  // expected-error@+1 {{graph.gather_nd: indices must be i64, got i32}}
  %y = graph.gather_nd %x, %i : (tensor<2x3xf32>, tensor<4x2xi32>) -> tensor<4xf32>
  func.return
}

// -----

// The result is indices.shape[:-1] + input.shape[batch_dims + m:].
func.func @f(%x: tensor<2x3x4xf32>, %i: tensor<2x5x1xi64>) {
  // expected-error@+1 {{graph.gather_nd: result #0 has shape 2x5x3x4 but the operands give 2x5x4}}
  %y = graph.gather_nd %x, %i {batch_dims = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x5x1xi64>) -> tensor<2x5x3x4xf32>
  func.return
}
