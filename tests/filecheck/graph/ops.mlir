// Round trip of every op of the graph dialect: the custom form parses, prints
// back the same, and so does the generic form. Dynamic dims (`?`) appear
// wherever an op's shape rule allows them.
// RUN: ge-opt %s | ge-opt | filecheck %s
// RUN: ge-opt %s --print-op-generic | ge-opt | filecheck %s
// RUN: ge-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: ge-opt %s --mlir-print-debuginfo | filecheck %s --check-prefix=LOC

func.func @constants() -> (tensor<2xf32>, tensor<3xf32>, tensor<2x3xi64>, tensor<4x4xf32>, tensor<2xi64>, tensor<3xf16>) {
  %d = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %r = graph.constant dense_resource<weights> : tensor<3xf32> loc("w")
  %i = graph.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %f = graph.fill 0.5 : tensor<4x4xf32>
  %fi = graph.fill -3 : tensor<2xi64>
  %fh = graph.fill 0.1 : tensor<3xf16>
  func.return %d, %r, %i, %f, %fi, %fh : tensor<2xf32>, tensor<3xf32>, tensor<2x3xi64>, tensor<4x4xf32>, tensor<2xi64>, tensor<3xf16>
}
{-#
  dialect_resources: {
    builtin: {
      weights: "0x040000000000803F0000004000004040"
    }
  }
#-}

// A weight's bytes live in the resources section (4-byte alignment, then the
// little-endian data); a splat is a graph.fill of any size, printed with the
// shortest text that reads back as the same element value.

// CHECK-LABEL: func.func @constants
// CHECK-SAME:    () -> (tensor<2xf32>, tensor<3xf32>, tensor<2x3xi64>, tensor<4x4xf32>, tensor<2xi64>, tensor<3xf16>)
// CHECK-NEXT:  %[[D:.*]] = graph.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:  %[[R:.*]] = graph.constant dense_resource<[[KEY:weights[_0-9]*]]> : tensor<3xf32>
// CHECK-NEXT:  %[[I:.*]] = graph.constant dense<{{\[\[}}1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
// CHECK-NEXT:  %[[F:.*]] = graph.fill 0.5 : tensor<4x4xf32>
// CHECK-NEXT:  %[[FI:.*]] = graph.fill -3 : tensor<2xi64>
// CHECK-NEXT:  %[[FH:.*]] = graph.fill 0.1 : tensor<3xf16>
// CHECK-NEXT:  func.return %[[D]], %[[R]], %[[I]], %[[F]], %[[FI]], %[[FH]] : tensor<2xf32>, tensor<3xf32>, tensor<2x3xi64>, tensor<4x4xf32>, tensor<2xi64>, tensor<3xf16>
// CHECK-NEXT:  }

func.func @conv(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>, %res: tensor<1x4x8x8xf32>, %xd: tensor<?x4x?x?xf32>, %wg: tensor<4x2x1x1xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x8x8xf32>, tensor<1x4x4x4xf32>, tensor<?x4x?x?xf32>) {
  %plain = graph.conv %x, %w : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
  %full = graph.conv %x, %w bias(%b : tensor<4xf32>) residual(%res : tensor<1x4x8x8xf32>) {pads = array<i64: 1, 1, 1, 1>, activation = "relu"} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x8x8xf32>
  %strided = graph.conv %x, %w bias(%b : tensor<4xf32>) {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, activation = "leaky_relu", activation_params = array<f64: 0.1>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x4x4xf32>
  %resonly = graph.conv %x, %w residual(%plain : tensor<1x4x6x6xf32>) {activation = "sigmoid"} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
  %grouped = graph.conv %xd, %wg {group = 2 : i64} : tensor<?x4x?x?xf32>, tensor<4x2x1x1xf32> -> tensor<?x4x?x?xf32>
  func.return %resonly, %full, %strided, %grouped : tensor<1x4x6x6xf32>, tensor<1x4x8x8xf32>, tensor<1x4x4x4xf32>, tensor<?x4x?x?xf32>
}

// CHECK-LABEL: func.func @conv
// CHECK-SAME:    (%[[X:.*]]: tensor<1x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>, %[[B:.*]]: tensor<4xf32>, %[[RES:.*]]: tensor<1x4x8x8xf32>, %[[XD:.*]]: tensor<?x4x?x?xf32>, %[[WG:.*]]: tensor<4x2x1x1xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x8x8xf32>, tensor<1x4x4x4xf32>, tensor<?x4x?x?xf32>)
// CHECK-NEXT:  %[[PLAIN:.*]] = graph.conv %[[X]], %[[W]] : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
// CHECK-NEXT:  %[[FULL:.*]] = graph.conv %[[X]], %[[W]] bias(%[[B]] : tensor<4xf32>) residual(%[[RES]] : tensor<1x4x8x8xf32>) {pads = array<i64: 1, 1, 1, 1>, activation = "relu"} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x8x8xf32>
// CHECK-NEXT:  %[[STRIDED:.*]] = graph.conv %[[X]], %[[W]] bias(%[[B]] : tensor<4xf32>) {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, activation = "leaky_relu", activation_params = array<f64: 1.000000e-01>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x4x4xf32>
// CHECK-NEXT:  %[[RESONLY:.*]] = graph.conv %[[X]], %[[W]] residual(%[[PLAIN]] : tensor<1x4x6x6xf32>) {activation = "sigmoid"} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
// CHECK-NEXT:  %[[GROUPED:.*]] = graph.conv %[[XD]], %[[WG]] {group = 2 : i64} : tensor<?x4x?x?xf32>, tensor<4x2x1x1xf32> -> tensor<?x4x?x?xf32>
// CHECK-NEXT:  func.return %[[RESONLY]], %[[FULL]], %[[STRIDED]], %[[GROUPED]] : tensor<1x4x6x6xf32>, tensor<1x4x8x8xf32>, tensor<1x4x4x4xf32>, tensor<?x4x?x?xf32>
// CHECK-NEXT:  }

func.func @conv_transpose(%x: tensor<1x4x4x4xf32>, %w: tensor<4x2x3x3xf32>, %b: tensor<2xf32>) -> (tensor<1x2x6x6xf32>, tensor<1x2x8x8xf32>) {
  %a = graph.conv_transpose %x, %w : (tensor<1x4x4x4xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  %s = graph.conv_transpose %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 1>} : (tensor<1x4x4x4xf32>, tensor<4x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x8x8xf32>
  func.return %a, %s : tensor<1x2x6x6xf32>, tensor<1x2x8x8xf32>
}

// CHECK-LABEL: func.func @conv_transpose
// CHECK-SAME:    (%[[X:.*]]: tensor<1x4x4x4xf32>, %[[W:.*]]: tensor<4x2x3x3xf32>, %[[B:.*]]: tensor<2xf32>) -> (tensor<1x2x6x6xf32>, tensor<1x2x8x8xf32>)
// CHECK-NEXT:  %[[A:.*]] = graph.conv_transpose %[[X]], %[[W]] : (tensor<1x4x4x4xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x6x6xf32>
// CHECK-NEXT:  %[[S:.*]] = graph.conv_transpose %[[X]], %[[W]], %[[B]] {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 1>} : (tensor<1x4x4x4xf32>, tensor<4x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x8x8xf32>
// CHECK-NEXT:  func.return %[[A]], %[[S]] : tensor<1x2x6x6xf32>, tensor<1x2x8x8xf32>
// CHECK-NEXT:  }

func.func @norms(%x: tensor<?x4x8x8xf32>, %p: tensor<4xf32>) -> (tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>) {
  %bn = graph.batch_norm %x, %p, %p, %p, %p {epsilon = 1.000000e-05 : f32} : (tensor<?x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x8x8xf32>
  %lrn = graph.lrn %bn {size = 3 : i64, alpha = 1.000000e-04 : f32, beta = 7.500000e-01 : f32, bias = 1.000000e+00 : f32} : (tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  func.return %bn, %lrn : tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>
}

// CHECK-LABEL: func.func @norms
// CHECK-SAME:    (%[[X:.*]]: tensor<?x4x8x8xf32>, %[[P:.*]]: tensor<4xf32>) -> (tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>)
// CHECK-NEXT:  %[[BN:.*]] = graph.batch_norm %[[X]], %[[P]], %[[P]], %[[P]], %[[P]] {epsilon = 1.000000e-05 : f32} : (tensor<?x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x8x8xf32>
// CHECK-NEXT:  %[[LRN:.*]] = graph.lrn %[[BN]] {size = 3 : i64, alpha = 1.000000e-04 : f32, beta = 7.500000e-01 : f32, bias = 1.000000e+00 : f32} : (tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
// CHECK-NEXT:  func.return %[[BN]], %[[LRN]] : tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>
// CHECK-NEXT:  }

func.func @pools(%x: tensor<1x4x8x8xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x4x1x1xf32>, tensor<1x4x1x1xf32>) {
  %mp = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  %ap = graph.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64, count_include_pad = 1 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  %gap = graph.global_avg_pool %x : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
  %gmp = graph.global_max_pool %x : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
  func.return %mp, %ap, %gap, %gmp : tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x4x1x1xf32>, tensor<1x4x1x1xf32>
}

// CHECK-LABEL: func.func @pools
// CHECK-SAME:    (%[[X:.*]]: tensor<1x4x8x8xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x4x1x1xf32>, tensor<1x4x1x1xf32>)
// CHECK-NEXT:  %[[MP:.*]] = graph.max_pool %[[X]] {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT:  %[[AP:.*]] = graph.avg_pool %[[X]] {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64, count_include_pad = 1 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT:  %[[GAP:.*]] = graph.global_avg_pool %[[X]] : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
// CHECK-NEXT:  %[[GMP:.*]] = graph.global_max_pool %[[X]] : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
// CHECK-NEXT:  func.return %[[MP]], %[[AP]], %[[GAP]], %[[GMP]] : tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x4x1x1xf32>, tensor<1x4x1x1xf32>
// CHECK-NEXT:  }

func.func @matmuls(%a: tensor<?x8x16xf32>, %b: tensor<16x32xf32>, %bias: tensor<32xf32>, %g: tensor<16x8xf32>, %c: tensor<1x32xf32>) -> (tensor<?x8x32xf32>, tensor<?x8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>) {
  %m = graph.matmul %a, %b : (tensor<?x8x16xf32>, tensor<16x32xf32>) -> tensor<?x8x32xf32>
  %mb = graph.matmul %a, %b, %bias {activation = "gelu"} : (tensor<?x8x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> tensor<?x8x32xf32>
  %gt = graph.gemm %g, %b, %c {trans_a = 1 : i64, alpha = 5.000000e-01 : f32, beta = 2.000000e+00 : f32, activation = "clip", activation_params = array<f64: 0.0, 6.0>} : (tensor<16x8xf32>, tensor<16x32xf32>, tensor<1x32xf32>) -> tensor<8x32xf32>
  %bt = graph.transpose %b {perm = array<i64: 1, 0>} : (tensor<16x32xf32>) -> tensor<32x16xf32>
  %gm = graph.gemm %bt, %g : (tensor<32x16xf32>, tensor<16x8xf32>) -> tensor<32x8xf32>
  %gtb = graph.gemm %g, %bt {trans_a = 1 : i64, trans_b = 1 : i64} : (tensor<16x8xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  func.return %m, %mb, %gt, %gtb : tensor<?x8x32xf32>, tensor<?x8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>
}

// CHECK-LABEL: func.func @matmuls
// CHECK-SAME:    (%[[A:.*]]: tensor<?x8x16xf32>, %[[B:.*]]: tensor<16x32xf32>, %[[BIAS:.*]]: tensor<32xf32>, %[[G:.*]]: tensor<16x8xf32>, %[[C:.*]]: tensor<1x32xf32>) -> (tensor<?x8x32xf32>, tensor<?x8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>)
// CHECK-NEXT:  %[[M:.*]] = graph.matmul %[[A]], %[[B]] : (tensor<?x8x16xf32>, tensor<16x32xf32>) -> tensor<?x8x32xf32>
// CHECK-NEXT:  %[[MB:.*]] = graph.matmul %[[A]], %[[B]], %[[BIAS]] {activation = "gelu"} : (tensor<?x8x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> tensor<?x8x32xf32>
// CHECK-NEXT:  %[[GT:.*]] = graph.gemm %[[G]], %[[B]], %[[C]] {trans_a = 1 : i64, alpha = 5.000000e-01 : f32, beta = 2.000000e+00 : f32, activation = "clip", activation_params = array<f64: 0.000000e+00, 6.000000e+00>} : (tensor<16x8xf32>, tensor<16x32xf32>, tensor<1x32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT:  %[[BT:.*]] = graph.transpose %[[B]] {perm = array<i64: 1, 0>} : (tensor<16x32xf32>) -> tensor<32x16xf32>
// CHECK-NEXT:  %[[GM:.*]] = graph.gemm %[[BT]], %[[G]] : (tensor<32x16xf32>, tensor<16x8xf32>) -> tensor<32x8xf32>
// CHECK-NEXT:  %[[GTB:.*]] = graph.gemm %[[G]], %[[BT]] {trans_a = 1 : i64, trans_b = 1 : i64} : (tensor<16x8xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
// CHECK-NEXT:  func.return %[[M]], %[[MB]], %[[GT]], %[[GTB]] : tensor<?x8x32xf32>, tensor<?x8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>
// CHECK-NEXT:  }

func.func @normalizations(%x: tensor<?x16x32xf32>, %s: tensor<32xf32>, %r: tensor<?x16x32xf32>) -> (tensor<?x16x32xf32>, tensor<?x16x32xf32>, tensor<?x16x32xf32>, tensor<?x16x32xf32>, tensor<?x16x32xf32>) {
  %sm = graph.softmax %x {axis = -1 : i64} : (tensor<?x16x32xf32>) -> tensor<?x16x32xf32>
  %ls = graph.log_softmax %x {axis = 1 : i64} : (tensor<?x16x32xf32>) -> tensor<?x16x32xf32>
  %ln = graph.layer_norm %x, %s : tensor<?x16x32xf32>, tensor<32xf32> -> tensor<?x16x32xf32>
  %lnb = graph.layer_norm %x, %s bias(%s : tensor<32xf32>) {axis = -1 : i64, epsilon = 9.99999974e-06 : f32} : tensor<?x16x32xf32>, tensor<32xf32> -> tensor<?x16x32xf32>
  %lnr = graph.layer_norm %x, %s bias(%s : tensor<32xf32>) residual(%r : tensor<?x16x32xf32>) : tensor<?x16x32xf32>, tensor<32xf32> -> tensor<?x16x32xf32>
  func.return %sm, %ls, %ln, %lnb, %lnr : tensor<?x16x32xf32>, tensor<?x16x32xf32>, tensor<?x16x32xf32>, tensor<?x16x32xf32>, tensor<?x16x32xf32>
}

// CHECK-LABEL: func.func @normalizations
// CHECK-SAME:    (%[[X:.*]]: tensor<?x16x32xf32>, %[[S:.*]]: tensor<32xf32>, %[[R:.*]]: tensor<?x16x32xf32>) -> (tensor<?x16x32xf32>, tensor<?x16x32xf32>, tensor<?x16x32xf32>, tensor<?x16x32xf32>, tensor<?x16x32xf32>)
// CHECK-NEXT:  %[[SM:.*]] = graph.softmax %[[X]] {axis = -1 : i64} : (tensor<?x16x32xf32>) -> tensor<?x16x32xf32>
// CHECK-NEXT:  %[[LS:.*]] = graph.log_softmax %[[X]] {axis = 1 : i64} : (tensor<?x16x32xf32>) -> tensor<?x16x32xf32>
// CHECK-NEXT:  %[[LN:.*]] = graph.layer_norm %[[X]], %[[S]] : tensor<?x16x32xf32>, tensor<32xf32> -> tensor<?x16x32xf32>
// CHECK-NEXT:  %[[LNB:.*]] = graph.layer_norm %[[X]], %[[S]] bias(%[[S]] : tensor<32xf32>) {axis = -1 : i64, epsilon = 1.000000e-05 : f32} : tensor<?x16x32xf32>, tensor<32xf32> -> tensor<?x16x32xf32>
// CHECK-NEXT:  %[[LNR:.*]] = graph.layer_norm %[[X]], %[[S]] bias(%[[S]] : tensor<32xf32>) residual(%[[R]] : tensor<?x16x32xf32>) : tensor<?x16x32xf32>, tensor<32xf32> -> tensor<?x16x32xf32>
// CHECK-NEXT:  func.return %[[SM]], %[[LS]], %[[LN]], %[[LNB]], %[[LNR]] : tensor<?x16x32xf32>, tensor<?x16x32xf32>, tensor<?x16x32xf32>, tensor<?x16x32xf32>, tensor<?x16x32xf32>
// CHECK-NEXT:  }

// A softmax may carry the Reshape that follows it, if the axis stays intact.
func.func @softmax_reshape(%x: tensor<1x16xf32>) -> tensor<1x4x4xf32> {
  %s = graph.softmax %x {axis = 0 : i64, shape = array<i64: 1, 4, 4>} : (tensor<1x16xf32>) -> tensor<1x4x4xf32>
  func.return %s : tensor<1x4x4xf32>
}

// CHECK-LABEL: func.func @softmax_reshape
// CHECK-SAME:    (%[[X:.*]]: tensor<1x16xf32>) -> tensor<1x4x4xf32>
// CHECK-NEXT:  %[[S:.*]] = graph.softmax %[[X]] {axis = 0 : i64, shape = array<i64: 1, 4, 4>} : (tensor<1x16xf32>) -> tensor<1x4x4xf32>
// CHECK-NEXT:  func.return %[[S]] : tensor<1x4x4xf32>
// CHECK-NEXT:  }

// Copies to host memory and back (inserted by the memory planner).
func.func @memory(%x: tensor<1x64x8x8xf32>) -> tensor<1x64x8x8xf32> {
  %h = graph.offload %x : (tensor<1x64x8x8xf32>) -> tensor<1x64x8x8xf32>
  %r = graph.reload %h : (tensor<1x64x8x8xf32>) -> tensor<1x64x8x8xf32>
  func.return %r : tensor<1x64x8x8xf32>
}

// CHECK-LABEL: func.func @memory
// CHECK-SAME:    (%[[X:.*]]: tensor<1x64x8x8xf32>) -> tensor<1x64x8x8xf32>
// CHECK-NEXT:  %[[H:.*]] = graph.offload %[[X]] : (tensor<1x64x8x8xf32>) -> tensor<1x64x8x8xf32>
// CHECK-NEXT:  %[[R:.*]] = graph.reload %[[H]] : (tensor<1x64x8x8xf32>) -> tensor<1x64x8x8xf32>
// CHECK-NEXT:  func.return %[[R]] : tensor<1x64x8x8xf32>
// CHECK-NEXT:  }

func.func @unary(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = graph.relu %x : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %1 = graph.leaky_relu %0 {alpha = 0.00999999977 : f32} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %2 = graph.clip %1 {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %3 = graph.clip %2 {max = 6.000000e+00 : f32} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %4 = graph.sigmoid %3 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %5 = graph.tanh %4 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %6 = graph.erf %5 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %7 = graph.gelu %6 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %8 = graph.gelu %7 {approximate = "tanh"} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %9 = graph.sqrt %8 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %10 = graph.exp %9 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %11 = graph.log %10 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %12 = graph.neg %11 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %13 = graph.abs %12 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %14 = graph.reciprocal %13 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %15 = graph.identity %14 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  func.return %15 : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @unary
// CHECK-SAME:    (%[[X:.*]]: tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:  %[[V0:.*]] = graph.relu %[[X]] : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:  %[[V1:.*]] = graph.leaky_relu %[[V0]] {alpha = 1.000000e-02 : f32} : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:  %[[V2:.*]] = graph.clip %[[V1]] {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32} : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:  %[[V3:.*]] = graph.clip %[[V2]] {max = 6.000000e+00 : f32} : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:  %[[V4:.*]] = graph.sigmoid %[[V3]] : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:  %[[V5:.*]] = graph.tanh %[[V4]] : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:  %[[V6:.*]] = graph.erf %[[V5]] : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:  %[[V7:.*]] = graph.gelu %[[V6]] : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:  %[[V8:.*]] = graph.gelu %[[V7]] {approximate = "tanh"} : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:  %[[V9:.*]] = graph.sqrt %[[V8]] : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:  %[[V10:.*]] = graph.exp %[[V9]] : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:  %[[V11:.*]] = graph.log %[[V10]] : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:  %[[V12:.*]] = graph.neg %[[V11]] : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:  %[[V13:.*]] = graph.abs %[[V12]] : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:  %[[V14:.*]] = graph.reciprocal %[[V13]] : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:  %[[V15:.*]] = graph.identity %[[V14]] : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:  func.return %[[V15]] : tensor<?x8xf32>
// CHECK-NEXT:  }

func.func @cast(%x: tensor<2x3xf32>, %i: tensor<4xi64>) -> (tensor<2x3xf16>, tensor<4xf32>, tensor<4xi32>) {
  %h = graph.cast %x : (tensor<2x3xf32>) -> tensor<2x3xf16>
  %f = graph.cast %i : (tensor<4xi64>) -> tensor<4xf32>
  %n = graph.cast %i : (tensor<4xi64>) -> tensor<4xi32>
  func.return %h, %f, %n : tensor<2x3xf16>, tensor<4xf32>, tensor<4xi32>
}

// CHECK-LABEL: func.func @cast
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>, %[[I:.*]]: tensor<4xi64>) -> (tensor<2x3xf16>, tensor<4xf32>, tensor<4xi32>)
// CHECK-NEXT:  %[[H:.*]] = graph.cast %[[X]] : (tensor<2x3xf32>) -> tensor<2x3xf16>
// CHECK-NEXT:  %[[F:.*]] = graph.cast %[[I]] : (tensor<4xi64>) -> tensor<4xf32>
// CHECK-NEXT:  %[[N:.*]] = graph.cast %[[I]] : (tensor<4xi64>) -> tensor<4xi32>
// CHECK-NEXT:  func.return %[[H]], %[[F]], %[[N]] : tensor<2x3xf16>, tensor<4xf32>, tensor<4xi32>
// CHECK-NEXT:  }

func.func @binary(%a: tensor<?x1x8xf32>, %b: tensor<4x1xf32>, %e: tensor<f32>) -> tensor<?x4x8xf32> {
  %0 = graph.add %a, %b : (tensor<?x1x8xf32>, tensor<4x1xf32>) -> tensor<?x4x8xf32>
  %1 = graph.sub %0, %b : (tensor<?x4x8xf32>, tensor<4x1xf32>) -> tensor<?x4x8xf32>
  %2 = graph.mul %1, %a : (tensor<?x4x8xf32>, tensor<?x1x8xf32>) -> tensor<?x4x8xf32>
  %3 = graph.div %2, %e : (tensor<?x4x8xf32>, tensor<f32>) -> tensor<?x4x8xf32>
  %4 = graph.pow %3, %e : (tensor<?x4x8xf32>, tensor<f32>) -> tensor<?x4x8xf32>
  %5 = graph.max %4, %b : (tensor<?x4x8xf32>, tensor<4x1xf32>) -> tensor<?x4x8xf32>
  %6 = graph.min %5, %e : (tensor<?x4x8xf32>, tensor<f32>) -> tensor<?x4x8xf32>
  %7 = graph.sum %6, %a, %b : (tensor<?x4x8xf32>, tensor<?x1x8xf32>, tensor<4x1xf32>) -> tensor<?x4x8xf32>
  func.return %7 : tensor<?x4x8xf32>
}

// CHECK-LABEL: func.func @binary
// CHECK-SAME:    (%[[A:.*]]: tensor<?x1x8xf32>, %[[B:.*]]: tensor<4x1xf32>, %[[E:.*]]: tensor<f32>) -> tensor<?x4x8xf32>
// CHECK-NEXT:  %[[V0:.*]] = graph.add %[[A]], %[[B]] : (tensor<?x1x8xf32>, tensor<4x1xf32>) -> tensor<?x4x8xf32>
// CHECK-NEXT:  %[[V1:.*]] = graph.sub %[[V0]], %[[B]] : (tensor<?x4x8xf32>, tensor<4x1xf32>) -> tensor<?x4x8xf32>
// CHECK-NEXT:  %[[V2:.*]] = graph.mul %[[V1]], %[[A]] : (tensor<?x4x8xf32>, tensor<?x1x8xf32>) -> tensor<?x4x8xf32>
// CHECK-NEXT:  %[[V3:.*]] = graph.div %[[V2]], %[[E]] : (tensor<?x4x8xf32>, tensor<f32>) -> tensor<?x4x8xf32>
// CHECK-NEXT:  %[[V4:.*]] = graph.pow %[[V3]], %[[E]] : (tensor<?x4x8xf32>, tensor<f32>) -> tensor<?x4x8xf32>
// CHECK-NEXT:  %[[V5:.*]] = graph.max %[[V4]], %[[B]] : (tensor<?x4x8xf32>, tensor<4x1xf32>) -> tensor<?x4x8xf32>
// CHECK-NEXT:  %[[V6:.*]] = graph.min %[[V5]], %[[E]] : (tensor<?x4x8xf32>, tensor<f32>) -> tensor<?x4x8xf32>
// CHECK-NEXT:  %[[V7:.*]] = graph.sum %[[V6]], %[[A]], %[[B]] : (tensor<?x4x8xf32>, tensor<?x1x8xf32>, tensor<4x1xf32>) -> tensor<?x4x8xf32>
// CHECK-NEXT:  func.return %[[V7]] : tensor<?x4x8xf32>
// CHECK-NEXT:  }

func.func @pow_mixed(%x: tensor<4xf32>, %n: tensor<i64>) -> tensor<4xf32> {
  %p = graph.pow %x, %n : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  func.return %p : tensor<4xf32>
}

// CHECK-LABEL: func.func @pow_mixed
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[N:.*]]: tensor<i64>) -> tensor<4xf32>
// CHECK-NEXT:  %[[P:.*]] = graph.pow %[[X]], %[[N]] : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
// CHECK-NEXT:  func.return %[[P]] : tensor<4xf32>
// CHECK-NEXT:  }

func.func @reductions(%x: tensor<2x?x6xf32>) -> (tensor<2x1x1xf32>, tensor<2xf32>, tensor<1x1x1xf32>, tensor<?xf32>) {
  %mean = graph.reduce_mean %x {axes = array<i64: 1, -1>, keepdims = 1 : i64} : (tensor<2x?x6xf32>) -> tensor<2x1x1xf32>
  %sum = graph.reduce_sum %x {axes = array<i64: 1, 2>, keepdims = 0 : i64} : (tensor<2x?x6xf32>) -> tensor<2xf32>
  %max = graph.reduce_max %x : (tensor<2x?x6xf32>) -> tensor<1x1x1xf32>
  %min = graph.reduce_min %x {axes = array<i64: 0, 2>, keepdims = 0 : i64} : (tensor<2x?x6xf32>) -> tensor<?xf32>
  func.return %mean, %sum, %max, %min : tensor<2x1x1xf32>, tensor<2xf32>, tensor<1x1x1xf32>, tensor<?xf32>
}

// CHECK-LABEL: func.func @reductions
// CHECK-SAME:    (%[[X:.*]]: tensor<2x?x6xf32>) -> (tensor<2x1x1xf32>, tensor<2xf32>, tensor<1x1x1xf32>, tensor<?xf32>)
// CHECK-NEXT:  %[[MEAN:.*]] = graph.reduce_mean %[[X]] {axes = array<i64: 1, -1>, keepdims = 1 : i64} : (tensor<2x?x6xf32>) -> tensor<2x1x1xf32>
// CHECK-NEXT:  %[[SUM:.*]] = graph.reduce_sum %[[X]] {axes = array<i64: 1, 2>, keepdims = 0 : i64} : (tensor<2x?x6xf32>) -> tensor<2xf32>
// CHECK-NEXT:  %[[MAX:.*]] = graph.reduce_max %[[X]] : (tensor<2x?x6xf32>) -> tensor<1x1x1xf32>
// CHECK-NEXT:  %[[MIN:.*]] = graph.reduce_min %[[X]] {axes = array<i64: 0, 2>, keepdims = 0 : i64} : (tensor<2x?x6xf32>) -> tensor<?xf32>
// CHECK-NEXT:  func.return %[[MEAN]], %[[SUM]], %[[MAX]], %[[MIN]] : tensor<2x1x1xf32>, tensor<2xf32>, tensor<1x1x1xf32>, tensor<?xf32>
// CHECK-NEXT:  }

func.func @data_movement(%x: tensor<2x3x4xf32>, %y: tensor<2x5x4xf32>, %d: tensor<?x3x4xf32>) -> (tensor<2x8x4xf32>, tensor<?x3x4xf32>, tensor<2x1x4xf32>, tensor<2x2x4xf32>, tensor<1x3x2xf32>, tensor<?x3x4xf32>) {
  %cat = graph.concat %x, %y {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x8x4xf32>
  %catd = graph.concat %d, %x {axis = 0 : i64} : (tensor<?x3x4xf32>, tensor<2x3x4xf32>) -> tensor<?x3x4xf32>
  %s:2 = graph.split %x {axis = 1 : i64, split = array<i64: 1, 2>} : (tensor<2x3x4xf32>) -> (tensor<2x1x4xf32>, tensor<2x2x4xf32>)
  %sl = graph.slice %x {starts = array<i64: 1, 0, 0>, ends = array<i64: 2, 4611686018427387904, 4>, axes = array<i64: 0, 1, 2>, steps = array<i64: 1, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<1x3x2xf32>
  %sld = graph.slice %d {starts = array<i64: 0>, ends = array<i64: -1>, axes = array<i64: 0>} : (tensor<?x3x4xf32>) -> tensor<?x3x4xf32>
  func.return %cat, %catd, %s#0, %s#1, %sl, %sld : tensor<2x8x4xf32>, tensor<?x3x4xf32>, tensor<2x1x4xf32>, tensor<2x2x4xf32>, tensor<1x3x2xf32>, tensor<?x3x4xf32>
}

// CHECK-LABEL: func.func @data_movement
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>, %[[Y:.*]]: tensor<2x5x4xf32>, %[[D:.*]]: tensor<?x3x4xf32>) -> (tensor<2x8x4xf32>, tensor<?x3x4xf32>, tensor<2x1x4xf32>, tensor<2x2x4xf32>, tensor<1x3x2xf32>, tensor<?x3x4xf32>)
// CHECK-NEXT:  %[[CAT:.*]] = graph.concat %[[X]], %[[Y]] {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x8x4xf32>
// CHECK-NEXT:  %[[CATD:.*]] = graph.concat %[[D]], %[[X]] {axis = 0 : i64} : (tensor<?x3x4xf32>, tensor<2x3x4xf32>) -> tensor<?x3x4xf32>
// CHECK-NEXT:  %[[S:.*]], %[[S_1:.*]] = graph.split %[[X]] {axis = 1 : i64, split = array<i64: 1, 2>} : (tensor<2x3x4xf32>) -> (tensor<2x1x4xf32>, tensor<2x2x4xf32>)
// CHECK-NEXT:  %[[SL:.*]] = graph.slice %[[X]] {starts = array<i64: 1, 0, 0>, ends = array<i64: 2, 4611686018427387904, 4>, axes = array<i64: 0, 1, 2>, steps = array<i64: 1, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<1x3x2xf32>
// CHECK-NEXT:  %[[SLD:.*]] = graph.slice %[[D]] {starts = array<i64: 0>, ends = array<i64: -1>, axes = array<i64: 0>} : (tensor<?x3x4xf32>) -> tensor<?x3x4xf32>
// CHECK-NEXT:  func.return %[[CAT]], %[[CATD]], %[[S]], %[[S_1]], %[[SL]], %[[SLD]] : tensor<2x8x4xf32>, tensor<?x3x4xf32>, tensor<2x1x4xf32>, tensor<2x2x4xf32>, tensor<1x3x2xf32>, tensor<?x3x4xf32>
// CHECK-NEXT:  }

func.func @views(%x: tensor<2x3x4xf32>, %d: tensor<?x3x4xf32>) -> (tensor<6x4xf32>, tensor<?x12xf32>, tensor<2x12xf32>, tensor<?x12xf32>, tensor<4x2x3xf32>, tensor<2x3x4x1xf32>, tensor<1x2x3x4xf32>) {
  %r = graph.reshape %x {shape = array<i64: -1, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %rd = graph.reshape %d {shape = array<i64: 0, -1>} : (tensor<?x3x4xf32>) -> tensor<?x12xf32>
  %fl = graph.flatten %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %fld = graph.flatten %d : (tensor<?x3x4xf32>) -> tensor<?x12xf32>
  %t = graph.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %u = graph.unsqueeze %x {axes = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x4x1xf32>
  %u0 = graph.unsqueeze %x {axes = array<i64: 0>} : (tensor<2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %sq = graph.squeeze %u0 {axes = array<i64: 0>} : (tensor<1x2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %r, %rd, %fl, %fld, %t, %u, %u0 : tensor<6x4xf32>, tensor<?x12xf32>, tensor<2x12xf32>, tensor<?x12xf32>, tensor<4x2x3xf32>, tensor<2x3x4x1xf32>, tensor<1x2x3x4xf32>
}

// CHECK-LABEL: func.func @views
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>, %[[D:.*]]: tensor<?x3x4xf32>) -> (tensor<6x4xf32>, tensor<?x12xf32>, tensor<2x12xf32>, tensor<?x12xf32>, tensor<4x2x3xf32>, tensor<2x3x4x1xf32>, tensor<1x2x3x4xf32>)
// CHECK-NEXT:  %[[R:.*]] = graph.reshape %[[X]] {shape = array<i64: -1, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT:  %[[RD:.*]] = graph.reshape %[[D]] {shape = array<i64: 0, -1>} : (tensor<?x3x4xf32>) -> tensor<?x12xf32>
// CHECK-NEXT:  %[[FL:.*]] = graph.flatten %[[X]] {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
// CHECK-NEXT:  %[[FLD:.*]] = graph.flatten %[[D]] : (tensor<?x3x4xf32>) -> tensor<?x12xf32>
// CHECK-NEXT:  %[[T:.*]] = graph.transpose %[[X]] {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:  %[[U:.*]] = graph.unsqueeze %[[X]] {axes = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x4x1xf32>
// CHECK-NEXT:  %[[U0:.*]] = graph.unsqueeze %[[X]] {axes = array<i64: 0>} : (tensor<2x3x4xf32>) -> tensor<1x2x3x4xf32>
// CHECK-NEXT:  %[[SQ:.*]] = graph.squeeze %[[U0]] {axes = array<i64: 0>} : (tensor<1x2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:  func.return %[[R]], %[[RD]], %[[FL]], %[[FLD]], %[[T]], %[[U]], %[[U0]] : tensor<6x4xf32>, tensor<?x12xf32>, tensor<2x12xf32>, tensor<?x12xf32>, tensor<4x2x3xf32>, tensor<2x3x4x1xf32>, tensor<1x2x3x4xf32>
// CHECK-NEXT:  }

func.func @gather_shape(%emb: tensor<100x16xf32>, %ids: tensor<?x8xi64>, %i32: tensor<3xi32>) -> (tensor<?x8x16xf32>, tensor<100x3xf32>, tensor<2xi64>) {
  %g = graph.gather %emb, %ids : (tensor<100x16xf32>, tensor<?x8xi64>) -> tensor<?x8x16xf32>
  %g1 = graph.gather %emb, %i32 {axis = 1 : i64} : (tensor<100x16xf32>, tensor<3xi32>) -> tensor<100x3xf32>
  %s = graph.shape %ids : (tensor<?x8xi64>) -> tensor<2xi64>
  func.return %g, %g1, %s : tensor<?x8x16xf32>, tensor<100x3xf32>, tensor<2xi64>
}

// CHECK-LABEL: func.func @gather_shape
// CHECK-SAME:    (%[[EMB:.*]]: tensor<100x16xf32>, %[[IDS:.*]]: tensor<?x8xi64>, %[[I32:.*]]: tensor<3xi32>) -> (tensor<?x8x16xf32>, tensor<100x3xf32>, tensor<2xi64>)
// CHECK-NEXT:  %[[G:.*]] = graph.gather %[[EMB]], %[[IDS]] : (tensor<100x16xf32>, tensor<?x8xi64>) -> tensor<?x8x16xf32>
// CHECK-NEXT:  %[[G1:.*]] = graph.gather %[[EMB]], %[[I32]] {axis = 1 : i64} : (tensor<100x16xf32>, tensor<3xi32>) -> tensor<100x3xf32>
// CHECK-NEXT:  %[[S:.*]] = graph.shape %[[IDS]] : (tensor<?x8xi64>) -> tensor<2xi64>
// CHECK-NEXT:  func.return %[[G]], %[[G1]], %[[S]] : tensor<?x8x16xf32>, tensor<100x3xf32>, tensor<2xi64>
// CHECK-NEXT:  }

func.func @fusion(%a: tensor<?x8xf32>, %b: tensor<8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %r:2 = graph.fusion %a, %b : (tensor<?x8xf32>, tensor<8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  ^bb0(%x: tensor<?x8xf32>, %y: tensor<8xf32>):
    %half = graph.fill 0.5 : tensor<8xf32>
    %c = graph.constant dense<2.0> : tensor<f32>
    %s = graph.add %x, %y : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
    %m = graph.mul %s, %half : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
    %p = graph.pow %m, %c : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
    %t = graph.sum %s, %m, %p : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
    %g = graph.relu %t : (tensor<?x8xf32>) -> tensor<?x8xf32>
    graph.yield %s, %g : tensor<?x8xf32>, tensor<?x8xf32>
  }
  func.return %r#0, %r#1 : tensor<?x8xf32>, tensor<?x8xf32>
}

// CHECK-LABEL: func.func @fusion
// CHECK-SAME:    (%[[A:.*]]: tensor<?x8xf32>, %[[B:.*]]: tensor<8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>)
// CHECK-NEXT:  %[[R:.*]], %[[R_1:.*]] = graph.fusion %[[A]], %[[B]] : (tensor<?x8xf32>, tensor<8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
// CHECK-NEXT:  ^bb0(%[[X:.*]]: tensor<?x8xf32>, %[[Y:.*]]: tensor<8xf32>):
// CHECK-NEXT:    %[[HALF:.*]] = graph.fill 0.5 : tensor<8xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[S:.*]] = graph.add %[[X]], %[[Y]] : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:    %[[M:.*]] = graph.mul %[[S]], %[[HALF]] : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:    %[[P:.*]] = graph.pow %[[M]], %[[C]] : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
// CHECK-NEXT:    %[[T:.*]] = graph.sum %[[S]], %[[M]], %[[P]] : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:    %[[G:.*]] = graph.relu %[[T]] : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:    graph.yield %[[S]], %[[G]] : tensor<?x8xf32>, tensor<?x8xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return %[[R]], %[[R_1]] : tensor<?x8xf32>, tensor<?x8xf32>
// CHECK-NEXT:  }

func.func @empty_fusion() {
  graph.fusion : () -> () {
    graph.yield
  }
  func.return
}

// CHECK-LABEL: func.func @empty_fusion
// CHECK-SAME:    ()
// CHECK-NEXT:  graph.fusion : () -> () {
// CHECK-NEXT:    graph.yield
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }

// ops-A: comparisons and logic ops broadcast and give bool (i1) results;
// where selects between broadcast values; expand/tile/trilu/cumsum take their
// ONNX tensor inputs as properties; range has a `?` length.
func.func @ops_a_compare_logic(%a: tensor<?x1x8xf32>, %b: tensor<4x1xf32>, %i: tensor<3xi64>, %p: tensor<2x3xi1>, %q: tensor<3xi1>) -> (tensor<?x4x8xi1>, tensor<?x4x8xi1>, tensor<?x4x8xi1>, tensor<?x4x8xi1>, tensor<3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>) {
  %eq = graph.equal %a, %b : (tensor<?x1x8xf32>, tensor<4x1xf32>) -> tensor<?x4x8xi1>
  %lt = graph.less %a, %b : (tensor<?x1x8xf32>, tensor<4x1xf32>) -> tensor<?x4x8xi1>
  %le = graph.less_equal %a, %b : (tensor<?x1x8xf32>, tensor<4x1xf32>) -> tensor<?x4x8xi1>
  %gt = graph.greater %a, %b : (tensor<?x1x8xf32>, tensor<4x1xf32>) -> tensor<?x4x8xi1>
  %ge = graph.greater_equal %i, %i : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
  %and = graph.and %p, %q : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %or = graph.or %and, %q : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %xor = graph.xor %or, %p : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %not = graph.not %xor : (tensor<2x3xi1>) -> tensor<2x3xi1>
  func.return %eq, %lt, %le, %gt, %ge, %and, %or, %xor, %not : tensor<?x4x8xi1>, tensor<?x4x8xi1>, tensor<?x4x8xi1>, tensor<?x4x8xi1>, tensor<3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>
}

// CHECK-LABEL: func.func @ops_a_compare_logic
// CHECK-SAME:    (%[[A:.*]]: tensor<?x1x8xf32>, %[[B:.*]]: tensor<4x1xf32>, %[[I:.*]]: tensor<3xi64>, %[[P:.*]]: tensor<2x3xi1>, %[[Q:.*]]: tensor<3xi1>) -> (tensor<?x4x8xi1>, tensor<?x4x8xi1>, tensor<?x4x8xi1>, tensor<?x4x8xi1>, tensor<3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>)
// CHECK-NEXT:  %[[EQ:.*]] = graph.equal %[[A]], %[[B]] : (tensor<?x1x8xf32>, tensor<4x1xf32>) -> tensor<?x4x8xi1>
// CHECK-NEXT:  %[[LT:.*]] = graph.less %[[A]], %[[B]] : (tensor<?x1x8xf32>, tensor<4x1xf32>) -> tensor<?x4x8xi1>
// CHECK-NEXT:  %[[LE:.*]] = graph.less_equal %[[A]], %[[B]] : (tensor<?x1x8xf32>, tensor<4x1xf32>) -> tensor<?x4x8xi1>
// CHECK-NEXT:  %[[GT:.*]] = graph.greater %[[A]], %[[B]] : (tensor<?x1x8xf32>, tensor<4x1xf32>) -> tensor<?x4x8xi1>
// CHECK-NEXT:  %[[GE:.*]] = graph.greater_equal %[[I]], %[[I]] : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
// CHECK-NEXT:  %[[AND:.*]] = graph.and %[[P]], %[[Q]] : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:  %[[OR:.*]] = graph.or %[[AND]], %[[Q]] : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:  %[[XOR:.*]] = graph.xor %[[OR]], %[[P]] : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:  %[[NOT:.*]] = graph.not %[[XOR]] : (tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:  func.return %[[EQ]], %[[LT]], %[[LE]], %[[GT]], %[[GE]], %[[AND]], %[[OR]], %[[XOR]], %[[NOT]] : tensor<?x4x8xi1>, tensor<?x4x8xi1>, tensor<?x4x8xi1>, tensor<?x4x8xi1>, tensor<3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>
// CHECK-NEXT:  }

func.func @ops_a_select(%c: tensor<?x1xi1>, %x: tensor<1x4xf32>, %y: tensor<f32>, %i: tensor<2x3xi64>, %s: tensor<i64>, %d: tensor<f16>) -> (tensor<?x4xf32>, tensor<2x2x3xi64>, tensor<2x1x4xf32>, tensor<4x3xi64>, tensor<2x0xi64>, tensor<2x3xi64>, tensor<2x3xi64>, tensor<?xi64>, tensor<?xf16>) {
  %w = graph.where %c, %x, %y : (tensor<?x1xi1>, tensor<1x4xf32>, tensor<f32>) -> tensor<?x4xf32>
  %e = graph.expand %i {shape = array<i64: 2, 1, 3>} : (tensor<2x3xi64>) -> tensor<2x2x3xi64>
  %e1 = graph.expand %x {shape = array<i64: 2, 1, 1>} : (tensor<1x4xf32>) -> tensor<2x1x4xf32>
  %t = graph.tile %i {repeats = array<i64: 2, 1>} : (tensor<2x3xi64>) -> tensor<4x3xi64>
  %t0 = graph.tile %i {repeats = array<i64: 1, 0>} : (tensor<2x3xi64>) -> tensor<2x0xi64>
  %u = graph.trilu %i : (tensor<2x3xi64>) -> tensor<2x3xi64>
  %l = graph.trilu %i {upper = 0 : i64, k = -1 : i64} : (tensor<2x3xi64>) -> tensor<2x3xi64>
  %r = graph.range %s, %s, %s : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %rh = graph.range %d, %d, %d : (tensor<f16>, tensor<f16>, tensor<f16>) -> tensor<?xf16>
  func.return %w, %e, %e1, %t, %t0, %u, %l, %r, %rh : tensor<?x4xf32>, tensor<2x2x3xi64>, tensor<2x1x4xf32>, tensor<4x3xi64>, tensor<2x0xi64>, tensor<2x3xi64>, tensor<2x3xi64>, tensor<?xi64>, tensor<?xf16>
}

// CHECK-LABEL: func.func @ops_a_select
// CHECK-SAME:    (%[[C:.*]]: tensor<?x1xi1>, %[[X:.*]]: tensor<1x4xf32>, %[[Y:.*]]: tensor<f32>, %[[I:.*]]: tensor<2x3xi64>, %[[S:.*]]: tensor<i64>, %[[D:.*]]: tensor<f16>) -> (tensor<?x4xf32>, tensor<2x2x3xi64>, tensor<2x1x4xf32>, tensor<4x3xi64>, tensor<2x0xi64>, tensor<2x3xi64>, tensor<2x3xi64>, tensor<?xi64>, tensor<?xf16>)
// CHECK-NEXT:  %[[W:.*]] = graph.where %[[C]], %[[X]], %[[Y]] : (tensor<?x1xi1>, tensor<1x4xf32>, tensor<f32>) -> tensor<?x4xf32>
// CHECK-NEXT:  %[[E:.*]] = graph.expand %[[I]] {shape = array<i64: 2, 1, 3>} : (tensor<2x3xi64>) -> tensor<2x2x3xi64>
// CHECK-NEXT:  %[[E1:.*]] = graph.expand %[[X]] {shape = array<i64: 2, 1, 1>} : (tensor<1x4xf32>) -> tensor<2x1x4xf32>
// CHECK-NEXT:  %[[T:.*]] = graph.tile %[[I]] {repeats = array<i64: 2, 1>} : (tensor<2x3xi64>) -> tensor<4x3xi64>
// CHECK-NEXT:  %[[T0:.*]] = graph.tile %[[I]] {repeats = array<i64: 1, 0>} : (tensor<2x3xi64>) -> tensor<2x0xi64>
// CHECK-NEXT:  %[[U:.*]] = graph.trilu %[[I]] : (tensor<2x3xi64>) -> tensor<2x3xi64>
// CHECK-NEXT:  %[[L:.*]] = graph.trilu %[[I]] {upper = 0 : i64, k = -1 : i64} : (tensor<2x3xi64>) -> tensor<2x3xi64>
// CHECK-NEXT:  %[[R:.*]] = graph.range %[[S]], %[[S]], %[[S]] : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
// CHECK-NEXT:  %[[RH:.*]] = graph.range %[[D]], %[[D]], %[[D]] : (tensor<f16>, tensor<f16>, tensor<f16>) -> tensor<?xf16>
// CHECK-NEXT:  func.return %[[W]], %[[E]], %[[E1]], %[[T]], %[[T0]], %[[U]], %[[L]], %[[R]], %[[RH]] : tensor<?x4xf32>, tensor<2x2x3xi64>, tensor<2x1x4xf32>, tensor<4x3xi64>, tensor<2x0xi64>, tensor<2x3xi64>, tensor<2x3xi64>, tensor<?xi64>, tensor<?xf16>
// CHECK-NEXT:  }

func.func @ops_a_arith(%x: tensor<?x8xf32>, %m: tensor<8xf32>, %i: tensor<4x?xi64>) -> (tensor<?x8xf32>, tensor<4x?xi64>, tensor<4x?xi64>, tensor<4x?xi64>) {
  %0 = graph.mod %x, %m {fmod = 1 : i64} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %1 = graph.sin %0 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %2 = graph.cos %1 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %3 = graph.softplus %2 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %4 = graph.hard_sigmoid %3 {alpha = 2.000000e-01 : f32, beta = 5.000000e-01 : f32} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %5 = graph.hard_swish %4 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %6 = graph.cumsum %5 {axis = 1 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %im = graph.mod %i, %i : (tensor<4x?xi64>, tensor<4x?xi64>) -> tensor<4x?xi64>
  %c = graph.cumsum %im {axis = -1 : i64, exclusive = 1 : i64, reverse = 1 : i64} : (tensor<4x?xi64>) -> tensor<4x?xi64>
  %tile = graph.tile %c {repeats = array<i64: 1, 3>} : (tensor<4x?xi64>) -> tensor<4x?xi64>
  func.return %6, %im, %c, %tile : tensor<?x8xf32>, tensor<4x?xi64>, tensor<4x?xi64>, tensor<4x?xi64>
}

// CHECK-LABEL: func.func @ops_a_arith
// CHECK-SAME:    (%[[X:.*]]: tensor<?x8xf32>, %[[M:.*]]: tensor<8xf32>, %[[I:.*]]: tensor<4x?xi64>) -> (tensor<?x8xf32>, tensor<4x?xi64>, tensor<4x?xi64>, tensor<4x?xi64>)
// CHECK-NEXT:  %[[V0:.*]] = graph.mod %[[X]], %[[M]] {fmod = 1 : i64} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:  %[[V1:.*]] = graph.sin %[[V0]] : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:  %[[V2:.*]] = graph.cos %[[V1]] : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:  %[[V3:.*]] = graph.softplus %[[V2]] : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:  %[[V4:.*]] = graph.hard_sigmoid %[[V3]] {alpha = 2.000000e-01 : f32, beta = 5.000000e-01 : f32} : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:  %[[V5:.*]] = graph.hard_swish %[[V4]] : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:  %[[V6:.*]] = graph.cumsum %[[V5]] {axis = 1 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:  %[[IM:.*]] = graph.mod %[[I]], %[[I]] : (tensor<4x?xi64>, tensor<4x?xi64>) -> tensor<4x?xi64>
// CHECK-NEXT:  %[[C:.*]] = graph.cumsum %[[IM]] {axis = -1 : i64, exclusive = 1 : i64, reverse = 1 : i64} : (tensor<4x?xi64>) -> tensor<4x?xi64>
// CHECK-NEXT:  %[[TILE:.*]] = graph.tile %[[C]] {repeats = array<i64: 1, 3>} : (tensor<4x?xi64>) -> tensor<4x?xi64>
// CHECK-NEXT:  func.return %[[V6]], %[[IM]], %[[C]], %[[TILE]] : tensor<?x8xf32>, tensor<4x?xi64>, tensor<4x?xi64>, tensor<4x?xi64>
// CHECK-NEXT:  }

// A bool splat prints as 0 or 1.
func.func @ops_a_bool_fill() -> (tensor<2x3xi1>, tensor<4xi1>) {
  %t = graph.fill 1 : tensor<2x3xi1>
  %f = graph.fill 0 : tensor<4xi1>
  func.return %t, %f : tensor<2x3xi1>, tensor<4xi1>
}

// CHECK-LABEL: func.func @ops_a_bool_fill
// CHECK-NEXT:  %[[T:.*]] = graph.fill 1 : tensor<2x3xi1>
// CHECK-NEXT:  %[[F:.*]] = graph.fill 0 : tensor<4xi1>
// CHECK-NEXT:  func.return %[[T]], %[[F]] : tensor<2x3xi1>, tensor<4xi1>
// CHECK-NEXT:  }

// ops-B: padding, normalisation, resampling and selection ops. A 0-d
// constant stays a tensor<i64> (a scalar index drops the gathered axis), and
// a pool window may reach past its input (onnxruntime's output extents).

func.func @ops_b_pad_norm(%x: tensor<?x4x8x8xf32>, %c: tensor<4xf32>, %i: tensor<3x5xi64>) -> (tensor<?x4x11x7xf32>, tensor<?x4x10x10xf32>, tensor<?x4x9x8xf32>, tensor<?x4x8x12xf32>, tensor<5x4xi64>, tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>) {
  %pc = graph.pad %x {pads = array<i64: 0, 0, 1, -1, 0, 0, 2, 0>, value = 1.500000e+00 : f32} : (tensor<?x4x8x8xf32>) -> tensor<?x4x11x7xf32>
  %pr = graph.pad %x {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, mode = "reflect"} : (tensor<?x4x8x8xf32>) -> tensor<?x4x10x10xf32>
  %pe = graph.pad %x {pads = array<i64: 0, 0, 1, 0, 0, 0, 0, 0>, mode = "edge"} : (tensor<?x4x8x8xf32>) -> tensor<?x4x9x8xf32>
  %pw = graph.pad %x {pads = array<i64: 0, 0, 0, 2, 0, 0, 0, 2>, mode = "wrap"} : (tensor<?x4x8x8xf32>) -> tensor<?x4x8x12xf32>
  %pi = graph.pad %i {pads = array<i64: 1, -1, 1, 0>, value = -7 : i64} : (tensor<3x5xi64>) -> tensor<5x4xi64>
  %in = graph.instance_norm %x, %c, %c {epsilon = 1.000000e-05 : f32} : (tensor<?x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x8x8xf32>
  %gn = graph.group_norm %x, %c, %c {num_groups = 2 : i64, epsilon = 1.000000e-05 : f32} : (tensor<?x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x8x8xf32>
  func.return %pc, %pr, %pe, %pw, %pi, %in, %gn : tensor<?x4x11x7xf32>, tensor<?x4x10x10xf32>, tensor<?x4x9x8xf32>, tensor<?x4x8x12xf32>, tensor<5x4xi64>, tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>
}

// CHECK-LABEL: func.func @ops_b_pad_norm
// CHECK-SAME:    (%[[X:.*]]: tensor<?x4x8x8xf32>, %[[C:.*]]: tensor<4xf32>, %[[I:.*]]: tensor<3x5xi64>) -> (tensor<?x4x11x7xf32>, tensor<?x4x10x10xf32>, tensor<?x4x9x8xf32>, tensor<?x4x8x12xf32>, tensor<5x4xi64>, tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>)
// CHECK-NEXT:  %[[PC:.*]] = graph.pad %[[X]] {pads = array<i64: 0, 0, 1, -1, 0, 0, 2, 0>, value = 1.500000e+00 : f32} : (tensor<?x4x8x8xf32>) -> tensor<?x4x11x7xf32>
// CHECK-NEXT:  %[[PR:.*]] = graph.pad %[[X]] {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, mode = "reflect"} : (tensor<?x4x8x8xf32>) -> tensor<?x4x10x10xf32>
// CHECK-NEXT:  %[[PE:.*]] = graph.pad %[[X]] {pads = array<i64: 0, 0, 1, 0, 0, 0, 0, 0>, mode = "edge"} : (tensor<?x4x8x8xf32>) -> tensor<?x4x9x8xf32>
// CHECK-NEXT:  %[[PW:.*]] = graph.pad %[[X]] {pads = array<i64: 0, 0, 0, 2, 0, 0, 0, 2>, mode = "wrap"} : (tensor<?x4x8x8xf32>) -> tensor<?x4x8x12xf32>
// CHECK-NEXT:  %[[PI:.*]] = graph.pad %[[I]] {pads = array<i64: 1, -1, 1, 0>, value = -7 : i64} : (tensor<3x5xi64>) -> tensor<5x4xi64>
// CHECK-NEXT:  %[[IN:.*]] = graph.instance_norm %[[X]], %[[C]], %[[C]] {epsilon = 1.000000e-05 : f32} : (tensor<?x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x8x8xf32>
// CHECK-NEXT:  %[[GN:.*]] = graph.group_norm %[[X]], %[[C]], %[[C]] {num_groups = 2 : i64, epsilon = 1.000000e-05 : f32} : (tensor<?x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x8x8xf32>
// CHECK-NEXT:  func.return %[[PC]], %[[PR]], %[[PE]], %[[PW]], %[[PI]], %[[IN]], %[[GN]] : tensor<?x4x11x7xf32>, tensor<?x4x10x10xf32>, tensor<?x4x9x8xf32>, tensor<?x4x8x12xf32>, tensor<5x4xi64>, tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>
// CHECK-NEXT:  }

func.func @ops_b_resize(%x: tensor<?x3x4x5xf32>, %s: tensor<1x3x4x5xf32>) -> (tensor<?x3x8x15xf32>, tensor<?x3x2x3xf32>, tensor<1x3x7x3xf32>) {
  %n = graph.resize %x {scales = array<f64: 1.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00>, mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"} : (tensor<?x3x4x5xf32>) -> tensor<?x3x8x15xf32>
  %l = graph.resize %x {scales = array<f64: 1.000000e+00, 1.000000e+00, 5.000000e-01, 6.000000e-01>, mode = "linear", coordinate_transformation_mode = "half_pixel"} : (tensor<?x3x4x5xf32>) -> tensor<?x3x2x3xf32>
  %z = graph.resize %s {scales = array<f64: 1.000000e+00, 1.000000e+00, 1.750000e+00, 6.000000e-01>, sizes = array<i64: 1, 3, 7, 3>, mode = "linear", coordinate_transformation_mode = "align_corners"} : (tensor<1x3x4x5xf32>) -> tensor<1x3x7x3xf32>
  func.return %n, %l, %z : tensor<?x3x8x15xf32>, tensor<?x3x2x3xf32>, tensor<1x3x7x3xf32>
}

// CHECK-LABEL: func.func @ops_b_resize
// CHECK-SAME:    (%[[X:.*]]: tensor<?x3x4x5xf32>, %[[S:.*]]: tensor<1x3x4x5xf32>) -> (tensor<?x3x8x15xf32>, tensor<?x3x2x3xf32>, tensor<1x3x7x3xf32>)
// CHECK-NEXT:  %[[N:.*]] = graph.resize %[[X]] {scales = array<f64: 1.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00>, mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"} : (tensor<?x3x4x5xf32>) -> tensor<?x3x8x15xf32>
// CHECK-NEXT:  %[[L:.*]] = graph.resize %[[X]] {scales = array<f64: 1.000000e+00, 1.000000e+00, 5.000000e-01, 6.000000e-01>, mode = "linear", coordinate_transformation_mode = "half_pixel"} : (tensor<?x3x4x5xf32>) -> tensor<?x3x2x3xf32>
// CHECK-NEXT:  %[[Z:.*]] = graph.resize %[[S]] {scales = array<f64: 1.000000e+00, 1.000000e+00, 1.750000e+00, 6.000000e-01>, sizes = array<i64: 1, 3, 7, 3>, mode = "linear", coordinate_transformation_mode = "align_corners"} : (tensor<1x3x4x5xf32>) -> tensor<1x3x7x3xf32>
// CHECK-NEXT:  func.return %[[N]], %[[L]], %[[Z]] : tensor<?x3x8x15xf32>, tensor<?x3x2x3xf32>, tensor<1x3x7x3xf32>
// CHECK-NEXT:  }

func.func @ops_b_einsum(%a: tensor<?x3x4xf32>, %b: tensor<?x4x5xf32>, %v: tensor<7xf32>, %m: tensor<2x1x3x4xf32>, %n: tensor<1x6x4x5xf32>) -> (tensor<?x3x5xf32>, tensor<f32>, tensor<2x6x3x5xf32>, tensor<4x3xf32>) {
  %bm = graph.einsum %a, %b {equation = "bij,bjk->bik"} : (tensor<?x3x4xf32>, tensor<?x4x5xf32>) -> tensor<?x3x5xf32>
  %dot = graph.einsum %v, %v {equation = "i,i"} : (tensor<7xf32>, tensor<7xf32>) -> tensor<f32>
  %el = graph.einsum %m, %n {equation = "...ij,...jk->...ik"} : (tensor<2x1x3x4xf32>, tensor<1x6x4x5xf32>) -> tensor<2x6x3x5xf32>
  %t = graph.einsum %m {equation = "abij->ji"} : (tensor<2x1x3x4xf32>) -> tensor<4x3xf32>
  func.return %bm, %dot, %el, %t : tensor<?x3x5xf32>, tensor<f32>, tensor<2x6x3x5xf32>, tensor<4x3xf32>
}

// CHECK-LABEL: func.func @ops_b_einsum
// CHECK-SAME:    (%[[A:.*]]: tensor<?x3x4xf32>, %[[B:.*]]: tensor<?x4x5xf32>, %[[V:.*]]: tensor<7xf32>, %[[M:.*]]: tensor<2x1x3x4xf32>, %[[N:.*]]: tensor<1x6x4x5xf32>) -> (tensor<?x3x5xf32>, tensor<f32>, tensor<2x6x3x5xf32>, tensor<4x3xf32>)
// CHECK-NEXT:  %[[BM:.*]] = graph.einsum %[[A]], %[[B]] {equation = "bij,bjk->bik"} : (tensor<?x3x4xf32>, tensor<?x4x5xf32>) -> tensor<?x3x5xf32>
// CHECK-NEXT:  %[[DOT:.*]] = graph.einsum %[[V]], %[[V]] {equation = "i,i"} : (tensor<7xf32>, tensor<7xf32>) -> tensor<f32>
// CHECK-NEXT:  %[[EL:.*]] = graph.einsum %[[M]], %[[N]] {equation = "...ij,...jk->...ik"} : (tensor<2x1x3x4xf32>, tensor<1x6x4x5xf32>) -> tensor<2x6x3x5xf32>
// CHECK-NEXT:  %[[T:.*]] = graph.einsum %[[M]] {equation = "abij->ji"} : (tensor<2x1x3x4xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:  func.return %[[BM]], %[[DOT]], %[[EL]], %[[T]] : tensor<?x3x5xf32>, tensor<f32>, tensor<2x6x3x5xf32>, tensor<4x3xf32>
// CHECK-NEXT:  }

func.func @ops_b_select(%x: tensor<?x6x5xf32>, %i: tensor<?x2x5xi64>, %h: tensor<1x4x64xf32>) -> (tensor<?x1x5xi64>, tensor<?x5xi64>, tensor<?x6x3xf32>, tensor<?x6x3xi64>, tensor<?x2x5xf32>, tensor<?x6x1xf32>, tensor<6xf32>, tensor<1x64xf32>) {
  %am = graph.argmax %x {axis = 1 : i64, keepdims = 1 : i64} : (tensor<?x6x5xf32>) -> tensor<?x1x5xi64>
  %an = graph.argmin %x {axis = -2 : i64, keepdims = 0 : i64, select_last_index = 1 : i64} : (tensor<?x6x5xf32>) -> tensor<?x5xi64>
  %v, %vi = graph.topk %x {k = 3 : i64, axis = -1 : i64, largest = 0 : i64} : (tensor<?x6x5xf32>) -> (tensor<?x6x3xf32>, tensor<?x6x3xi64>)
  %ge = graph.gather_elements %x, %i {axis = 1 : i64} : (tensor<?x6x5xf32>, tensor<?x2x5xi64>) -> tensor<?x2x5xf32>
  %l2 = graph.reduce_l2 %x {axes = array<i64: 2>, keepdims = 1 : i64} : (tensor<?x6x5xf32>) -> tensor<?x6x1xf32>
  %rp = graph.reduce_prod %x {axes = array<i64: 0, 2>, keepdims = 0 : i64} : (tensor<?x6x5xf32>) -> tensor<6xf32>
  // A 0-d index (the `hidden[:, 0]` pooler) drops the gathered axis.
  %k = graph.constant dense<0> : tensor<i64>
  %cls = graph.gather %h, %k {axis = 1 : i64} : (tensor<1x4x64xf32>, tensor<i64>) -> tensor<1x64xf32>
  func.return %am, %an, %v, %vi, %ge, %l2, %rp, %cls : tensor<?x1x5xi64>, tensor<?x5xi64>, tensor<?x6x3xf32>, tensor<?x6x3xi64>, tensor<?x2x5xf32>, tensor<?x6x1xf32>, tensor<6xf32>, tensor<1x64xf32>
}

// CHECK-LABEL: func.func @ops_b_select
// CHECK-SAME:    (%[[X:.*]]: tensor<?x6x5xf32>, %[[I:.*]]: tensor<?x2x5xi64>, %[[H:.*]]: tensor<1x4x64xf32>) -> (tensor<?x1x5xi64>, tensor<?x5xi64>, tensor<?x6x3xf32>, tensor<?x6x3xi64>, tensor<?x2x5xf32>, tensor<?x6x1xf32>, tensor<6xf32>, tensor<1x64xf32>)
// CHECK-NEXT:  %[[AM:.*]] = graph.argmax %[[X]] {axis = 1 : i64, keepdims = 1 : i64} : (tensor<?x6x5xf32>) -> tensor<?x1x5xi64>
// CHECK-NEXT:  %[[AN:.*]] = graph.argmin %[[X]] {axis = -2 : i64, keepdims = 0 : i64, select_last_index = 1 : i64} : (tensor<?x6x5xf32>) -> tensor<?x5xi64>
// CHECK-NEXT:  %[[V:.*]], %[[VI:.*]] = graph.topk %[[X]] {k = 3 : i64, axis = -1 : i64, largest = 0 : i64} : (tensor<?x6x5xf32>) -> (tensor<?x6x3xf32>, tensor<?x6x3xi64>)
// CHECK-NEXT:  %[[GE:.*]] = graph.gather_elements %[[X]], %[[I]] {axis = 1 : i64} : (tensor<?x6x5xf32>, tensor<?x2x5xi64>) -> tensor<?x2x5xf32>
// CHECK-NEXT:  %[[L2:.*]] = graph.reduce_l2 %[[X]] {axes = array<i64: 2>, keepdims = 1 : i64} : (tensor<?x6x5xf32>) -> tensor<?x6x1xf32>
// CHECK-NEXT:  %[[RP:.*]] = graph.reduce_prod %[[X]] {axes = array<i64: 0, 2>, keepdims = 0 : i64} : (tensor<?x6x5xf32>) -> tensor<6xf32>
// CHECK-NEXT:  %[[K:.*]] = graph.constant dense<0> : tensor<i64>
// CHECK-NEXT:  %[[CLS:.*]] = graph.gather %[[H]], %[[K]] {axis = 1 : i64} : (tensor<1x4x64xf32>, tensor<i64>) -> tensor<1x64xf32>
// CHECK-NEXT:  func.return %[[AM]], %[[AN]], %[[V]], %[[VI]], %[[GE]], %[[L2]], %[[RP]], %[[CLS]] : tensor<?x1x5xi64>, tensor<?x5xi64>, tensor<?x6x3xf32>, tensor<?x6x3xi64>, tensor<?x2x5xf32>, tensor<?x6x1xf32>, tensor<6xf32>, tensor<1x64xf32>
// CHECK-NEXT:  }

func.func @ops_b_pool_past_input(%x: tensor<1x8x7x7xf32>) -> (tensor<1x8x1x1xf32>, tensor<1x8x1x1xf32>) {
  %a = graph.avg_pool %x {kernel_shape = array<i64: 8, 8>, strides = array<i64: 8, 8>, ceil_mode = 1 : i64} : (tensor<1x8x7x7xf32>) -> tensor<1x8x1x1xf32>
  %m = graph.max_pool %x {kernel_shape = array<i64: 9, 9>, strides = array<i64: 3, 3>} : (tensor<1x8x7x7xf32>) -> tensor<1x8x1x1xf32>
  func.return %a, %m : tensor<1x8x1x1xf32>, tensor<1x8x1x1xf32>
}

// CHECK-LABEL: func.func @ops_b_pool_past_input
// CHECK-SAME:    (%[[X:.*]]: tensor<1x8x7x7xf32>) -> (tensor<1x8x1x1xf32>, tensor<1x8x1x1xf32>)
// CHECK-NEXT:  %[[A:.*]] = graph.avg_pool %[[X]] {kernel_shape = array<i64: 8, 8>, strides = array<i64: 8, 8>, ceil_mode = 1 : i64} : (tensor<1x8x7x7xf32>) -> tensor<1x8x1x1xf32>
// CHECK-NEXT:  %[[M:.*]] = graph.max_pool %[[X]] {kernel_shape = array<i64: 9, 9>, strides = array<i64: 3, 3>} : (tensor<1x8x7x7xf32>) -> tensor<1x8x1x1xf32>
// CHECK-NEXT:  func.return %[[A]], %[[M]] : tensor<1x8x1x1xf32>, tensor<1x8x1x1xf32>
// CHECK-NEXT:  }

func.func @ops_c_gather_nd(%d: tensor<4x6x5xf32>, %i: tensor<?x3x2xi64>, %x: tensor<?x6x5xf32>, %j: tensor<2x3x1xi64>, %m: tensor<1x16xi1>, %k: tensor<1x1x1x16x2xi64>) -> (tensor<?x3x5xf32>, tensor<2x3x5xf32>, tensor<1x1x1x16xi1>, tensor<2xf32>, tensor<?x3x5xf32>) {
  %a = graph.gather_nd %d, %i {batch_dims = 0 : i64} : (tensor<4x6x5xf32>, tensor<?x3x2xi64>) -> tensor<?x3x5xf32>
  // batch_dims = 1: the shared first dim takes its extent from the indices.
  %b = graph.gather_nd %x, %j {batch_dims = 1 : i64} : (tensor<?x6x5xf32>, tensor<2x3x1xi64>) -> tensor<2x3x5xf32>
  // The dynamo exporter's `mask[arange, idx]` on a bool mask.
  %c = graph.gather_nd %m, %k {batch_dims = 0 : i64} : (tensor<1x16xi1>, tensor<1x1x1x16x2xi64>) -> tensor<1x1x1x16xi1>
  // Index tuples as long as the input's rank pick elements; negative ones count from the end.
  %n = graph.constant dense<[[0, 1, 2], [3, -1, -5]]> : tensor<2x3xi64>
  %e = graph.gather_nd %d, %n {batch_dims = 0 : i64} : (tensor<4x6x5xf32>, tensor<2x3xi64>) -> tensor<2xf32>
  // batch_dims defaults to 0.
  %f = graph.gather_nd %d, %i : (tensor<4x6x5xf32>, tensor<?x3x2xi64>) -> tensor<?x3x5xf32>
  func.return %a, %b, %c, %e, %f : tensor<?x3x5xf32>, tensor<2x3x5xf32>, tensor<1x1x1x16xi1>, tensor<2xf32>, tensor<?x3x5xf32>
}

// CHECK-LABEL: func.func @ops_c_gather_nd
// CHECK-SAME:    (%[[D:.*]]: tensor<4x6x5xf32>, %[[I:.*]]: tensor<?x3x2xi64>, %[[X:.*]]: tensor<?x6x5xf32>, %[[J:.*]]: tensor<2x3x1xi64>, %[[M:.*]]: tensor<1x16xi1>, %[[K:.*]]: tensor<1x1x1x16x2xi64>)
// CHECK-NEXT:  %[[A:.*]] = graph.gather_nd %[[D]], %[[I]] {batch_dims = 0 : i64} : (tensor<4x6x5xf32>, tensor<?x3x2xi64>) -> tensor<?x3x5xf32>
// CHECK-NEXT:  %[[B:.*]] = graph.gather_nd %[[X]], %[[J]] {batch_dims = 1 : i64} : (tensor<?x6x5xf32>, tensor<2x3x1xi64>) -> tensor<2x3x5xf32>
// CHECK-NEXT:  %[[C:.*]] = graph.gather_nd %[[M]], %[[K]] {batch_dims = 0 : i64} : (tensor<1x16xi1>, tensor<1x1x1x16x2xi64>) -> tensor<1x1x1x16xi1>
// CHECK-NEXT:  %[[N:.*]] = graph.constant dense<{{\[\[}}0, 1, 2], [3, -1, -5]]> : tensor<2x3xi64>
// CHECK-NEXT:  %[[E:.*]] = graph.gather_nd %[[D]], %[[N]] {batch_dims = 0 : i64} : (tensor<4x6x5xf32>, tensor<2x3xi64>) -> tensor<2xf32>
// CHECK-NEXT:  %[[F:.*]] = graph.gather_nd %[[D]], %[[I]] : (tensor<4x6x5xf32>, tensor<?x3x2xi64>) -> tensor<?x3x5xf32>
// CHECK-NEXT:  func.return %[[A]], %[[B]], %[[C]], %[[E]], %[[F]] : tensor<?x3x5xf32>, tensor<2x3x5xf32>, tensor<1x1x1x16xi1>, tensor<2xf32>, tensor<?x3x5xf32>
// CHECK-NEXT:  }

// The blob of the dense_resource follows the module.
// CHECK:       {-#
// CHECK-NEXT:    dialect_resources: {
// CHECK-NEXT:      builtin: {
// CHECK-NEXT:        [[KEY]]: "0x040000000000803F0000004000004040"

// The generic form: operator attributes are properties, conv's optional
// operands are counted by operandSegmentSizes, and regions are explicit.
// GENERIC-LABEL: sym_name = "constants"
// GENERIC:         "graph.constant"() <{value = dense_resource<weights> : tensor<3xf32>}> : () -> tensor<3xf32>
// GENERIC:         "graph.fill"() <{value = 5.000000e-01 : f32}> : () -> tensor<4x4xf32>
// GENERIC:         "graph.fill"() <{value = -3 : i64}> : () -> tensor<2xi64>
// GENERIC-LABEL: sym_name = "conv"
// GENERIC:         "graph.conv"(%{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 1, 1, 0, 0>}>
// GENERIC:         "graph.conv"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{pads = array<i64: 1, 1, 1, 1>, activation = "relu", operandSegmentSizes = array<i32: 1, 1, 1, 1>}>
// GENERIC:         "graph.conv"(%{{.*}}, %{{.*}}, %{{.*}}) <{activation = "sigmoid", operandSegmentSizes = array<i32: 1, 1, 0, 1>}>
// GENERIC-LABEL: sym_name = "data_movement"
// GENERIC:         = "graph.split"(%{{.*}}) <{axis = 1 : i64, split = array<i64: 1, 2>}> : (tensor<2x3x4xf32>) -> (tensor<2x1x4xf32>, tensor<2x2x4xf32>)
// GENERIC-LABEL: sym_name = "fusion"
// GENERIC:         = "graph.fusion"(%{{.*}}, %{{.*}}) ({
// GENERIC-NEXT:    ^bb0(%{{.*}}: tensor<?x8xf32>, %{{.*}}: tensor<8xf32>):
// GENERIC:           "graph.yield"(%{{.*}}, %{{.*}}) : (tensor<?x8xf32>, tensor<?x8xf32>) -> ()
// GENERIC-NEXT:    }) : (tensor<?x8xf32>, tensor<8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>)
// GENERIC-LABEL: sym_name = "ops_a_select"
// GENERIC:         = "graph.where"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<?x1xi1>, tensor<1x4xf32>, tensor<f32>) -> tensor<?x4xf32>
// GENERIC:         = "graph.expand"(%{{.*}}) <{shape = array<i64: 2, 1, 3>}> : (tensor<2x3xi64>) -> tensor<2x2x3xi64>
// GENERIC:         = "graph.trilu"(%{{.*}}) <{upper = 0 : i64, k = -1 : i64}> : (tensor<2x3xi64>) -> tensor<2x3xi64>
// GENERIC-LABEL: sym_name = "ops_a_arith"
// GENERIC:         = "graph.mod"(%{{.*}}, %{{.*}}) <{fmod = 1 : i64}> : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
// GENERIC:         = "graph.cumsum"(%{{.*}}) <{axis = -1 : i64, exclusive = 1 : i64, reverse = 1 : i64}> : (tensor<4x?xi64>) -> tensor<4x?xi64>

// GENERIC-LABEL: sym_name = "ops_b_pad_norm"
// GENERIC:         = "graph.pad"(%{{.*}}) <{pads = array<i64: 0, 0, 1, -1, 0, 0, 2, 0>, value = 1.500000e+00 : f32}> : (tensor<?x4x8x8xf32>) -> tensor<?x4x11x7xf32>
// GENERIC:         = "graph.group_norm"(%{{.*}}, %{{.*}}, %{{.*}}) <{num_groups = 2 : i64, epsilon = 1.000000e-05 : f32}>
// GENERIC-LABEL: sym_name = "ops_b_resize"
// GENERIC:         = "graph.resize"(%{{.*}}) <{scales = array<f64: 1.000000e+00, 1.000000e+00, 1.750000e+00, 6.000000e-01>, sizes = array<i64: 1, 3, 7, 3>, mode = "linear", coordinate_transformation_mode = "align_corners"}> : (tensor<1x3x4x5xf32>) -> tensor<1x3x7x3xf32>
// GENERIC-LABEL: sym_name = "ops_b_einsum"
// GENERIC:         = "graph.einsum"(%{{.*}}) <{equation = "abij->ji"}> : (tensor<2x1x3x4xf32>) -> tensor<4x3xf32>
// GENERIC-LABEL: sym_name = "ops_b_select"
// GENERIC:         = "graph.topk"(%{{.*}}) <{k = 3 : i64, axis = -1 : i64, largest = 0 : i64}> : (tensor<?x6x5xf32>) -> (tensor<?x6x3xf32>, tensor<?x6x3xi64>)
// GENERIC:         = "graph.constant"() <{value = dense<0> : tensor<i64>}> : () -> tensor<i64>
// GENERIC:         = "graph.gather"(%{{.*}}, %{{.*}}) <{axis = 1 : i64}> : (tensor<1x4x64xf32>, tensor<i64>) -> tensor<1x64xf32>
// GENERIC-LABEL: sym_name = "ops_c_gather_nd"
// GENERIC:         = "graph.gather_nd"(%{{.*}}, %{{.*}}) <{batch_dims = 1 : i64}> : (tensor<?x6x5xf32>, tensor<2x3x1xi64>) -> tensor<2x3x5xf32>
// GENERIC:         = "graph.gather_nd"(%{{.*}}, %{{.*}}) : (tensor<4x6x5xf32>, tensor<?x3x2xi64>) -> tensor<?x3x5xf32>

// A name location survives printing (ops without one print loc(unknown)).
// LOC-LABEL: func.func @constants
// LOC:         graph.constant dense_resource<weights> : tensor<3xf32> loc("w")
