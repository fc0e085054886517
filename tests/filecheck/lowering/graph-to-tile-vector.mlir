// The vector kernel family of convert-graph-to-tile (lowering/graph_to_tile/vector.py):
// row-major ops become structured tile kernels -- tile.load of every operand
// (dims collapsed), tile.map bodies of scalar arith/math, tile.reduction along
// the last dim, tile.store -- one behaviour per chunk. In force_fp16 (prefix
// FP16) a kernel reads fp16 (extf), computes in fp32 times the stored scale
// and stores fp16 (truncf).
// RUN: ge-opt %s --split-input-file -p 'graph-partition{precision_mode=must_keep_origin_dtype},assign-layouts,convert-graph-to-tile{precision_mode=must_keep_origin_dtype}' | filecheck %s
// RUN: ge-opt %s --split-input-file -p 'graph-partition{precision_mode=force_fp16},assign-layouts,convert-graph-to-tile{precision_mode=force_fp16}' | filecheck %s --check-prefix=FP16

// An attention mask [B, 1, 1, S] over scores [B, H, S, S]: H and the first S
// merge, so the iteration is [B, H*S, S] with a [B, 1, S] operand.

// CHECK-LABEL: tile.program "attention_mask"
// CHECK:       tile.kernel "k0_vector" attributes {kind = "vector", source = "graph.add at loc(\22mask\22)"
// CHECK-NEXT:    %[[S:[0-9a-z_]+]] = tile.load "s" : tensor<2x64x16xf32>
// CHECK-NEXT:    %[[M:[0-9a-z_]+]] = tile.load "m" : tensor<2x1x16xf32>
// CHECK-NEXT:    %[[Y:[0-9a-z_]+]] = tile.map ins(%[[S]], %[[M]] : tensor<2x64x16xf32>, tensor<2x1x16xf32>) -> tensor<2x64x16xf32> {
// CHECK-NEXT:    ^bb0(%[[A:[0-9a-z_]+]]: f32, %[[B:[0-9a-z_]+]]: f32):
// CHECK-NEXT:      %[[SUM:[0-9a-z_]+]] = arith.addf %[[A]], %[[B]] : f32
// CHECK-NEXT:      tile.yield %[[SUM]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    tile.store %[[Y]], "y" : tensor<2x64x16xf32>
// CHECK-NEXT:  }
func.func @attention_mask(%s: tensor<2x4x16x16xf32> {ge.name = "s"}, %m: tensor<2x1x1x16xf32> {ge.name = "m"}) -> (tensor<2x4x16x16xf32> {ge.name = "y"}) {
  %y = graph.add %s, %m : (tensor<2x4x16x16xf32>, tensor<2x1x1x16xf32>) -> tensor<2x4x16x16xf32> loc("mask")
  func.return %y : tensor<2x4x16x16xf32>
}

// -----

// A per-head factor [1, H, 1, 1]: the trailing S*S merge into rows, the
// factor is a column [1, H, 1].

// CHECK-LABEL: tile.program "per_head"
// CHECK:         %[[S:[0-9a-z_]+]] = tile.load "s" : tensor<2x16x128xf32>
// CHECK-NEXT:    %[[H:[0-9a-z_]+]] = tile.load "h" : tensor<1x16x1xf32>
// CHECK-NEXT:    tile.map ins(%[[S]], %[[H]] : tensor<2x16x128xf32>, tensor<1x16x1xf32>) -> tensor<2x16x128xf32>
// CHECK:           arith.mulf
// CHECK:         tile.store %{{.*}}, "y" : tensor<2x16x128xf32>
func.func @per_head(%s: tensor<2x16x8x16xf32> {ge.name = "s"}, %h: tensor<1x16x1x1xf32> {ge.name = "h"}) -> (tensor<2x16x8x16xf32> {ge.name = "y"}) {
  %y = graph.mul %s, %h : (tensor<2x16x8x16xf32>, tensor<1x16x1x1xf32>) -> tensor<2x16x8x16xf32> loc("scale")
  func.return %y : tensor<2x16x8x16xf32>
}

// -----

// A one-number constant first (3 - x) is an arith.constant of the body, not a
// load; same-shape operands collapse to one dim.

// CHECK-LABEL: tile.program "constant_first"
// CHECK-NOT:     kind = "constant"
// CHECK:         %[[X:[0-9a-z_]+]] = tile.load "x" : tensor<128xf32>
// CHECK-NEXT:    tile.map ins(%[[X]] : tensor<128xf32>) -> tensor<128xf32> {
// CHECK-NEXT:    ^bb0(%[[A:[0-9a-z_]+]]: f32):
// CHECK-NEXT:      %[[C:[0-9a-z_]+]] = arith.constant 3.000000e+00 : f32
// CHECK-NEXT:      %[[D:[0-9a-z_]+]] = arith.subf %[[C]], %[[A]] : f32
// CHECK-NEXT:      tile.yield %[[D]] : f32
func.func @constant_first(%x: tensor<4x32xf32> {ge.name = "x"}) -> (tensor<4x32xf32> {ge.name = "y"}) {
  %c = graph.fill 3.0 : tensor<f32>
  %y = graph.sub %c, %x : (tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32> loc("rsub")
  func.return %y : tensor<4x32xf32>
}

// -----

// A constant that is not one number gets a GM copy and is loaded.

// CHECK-LABEL: tile.program "tensor_constant"
// CHECK:         tile.tensor {name = "[[K:const[0-9_]*]]", kind = "constant", {{.*}}type = tensor<8x1xf32>
// CHECK:         %[[X:[0-9a-z_]+]] = tile.load "x" : tensor<8x32xf32>
// CHECK-NEXT:    %[[C:[0-9a-z_]+]] = tile.load "[[K]]" : tensor<8x1xf32>
// CHECK-NEXT:    tile.map ins(%[[X]], %[[C]] : tensor<8x32xf32>, tensor<8x1xf32>)
// CHECK:           arith.divf
func.func @tensor_constant(%x: tensor<8x32xf32> {ge.name = "x"}) -> (tensor<8x32xf32> {ge.name = "y"}) {
  %c = graph.constant dense<[[1.0], [2.0], [3.0], [4.0], [5.0], [6.0], [7.0], [8.0]]> : tensor<8x1xf32>
  %y = graph.div %x, %c : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32> loc("div")
  func.return %y : tensor<8x32xf32>
}

// -----

// x * x loads x once.

// CHECK-LABEL: tile.program "square"
// CHECK:         %[[X:[0-9a-z_]+]] = tile.load "x" : tensor<128xf32>
// CHECK-NOT:     tile.load
// CHECK:         ^bb0(%[[A:[0-9a-z_]+]]: f32):
// CHECK-NEXT:      arith.mulf %[[A]], %[[A]] : f32
func.func @square(%x: tensor<4x32xf32> {ge.name = "x"}) -> (tensor<4x32xf32> {ge.name = "y"}) {
  %y = graph.mul %x, %x : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32> loc("sq")
  func.return %y : tensor<4x32xf32>
}

// -----

// A graph.fusion is one map: its body op by op (the sigmoid as 1 / (exp(-s) + 1));
// its one-number fill becomes a body constant, its tensor constant a load.

// CHECK-LABEL: tile.program "fusion"
// CHECK:         tile.tensor {name = "[[K:const[0-9_]*]]", kind = "constant", {{.*}}type = tensor<8x1xf32>
// CHECK:       tile.kernel "k0_vector" attributes {kind = "vector", source = "graph.fusion at loc(\22gate\22)"
// CHECK-NEXT:    %[[X:[0-9a-z_]+]] = tile.load "x" : tensor<2x8x32xf32>
// CHECK-NEXT:    %[[W:[0-9a-z_]+]] = tile.load "w" : tensor<1x1x32xf32>
// CHECK-NEXT:    %[[C:[0-9a-z_]+]] = tile.load "[[K]]" : tensor<1x8x1xf32>
// CHECK-NEXT:    %[[Y:[0-9a-z_]+]] = tile.map ins(%[[X]], %[[W]], %[[C]] : {{.*}}) -> tensor<2x8x32xf32> {
// CHECK-NEXT:    ^bb0(%[[A:[0-9a-z_]+]]: f32, %[[B:[0-9a-z_]+]]: f32, %[[D:[0-9a-z_]+]]: f32):
// CHECK-NEXT:      %[[MUL:[0-9a-z_]+]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT:      %[[ADD:[0-9a-z_]+]] = arith.addf %[[MUL]], %[[D]] : f32
// CHECK-NEXT:      %[[ONE:[0-9a-z_]+]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      %[[NEG:[0-9a-z_]+]] = arith.negf %[[ADD]] : f32
// CHECK-NEXT:      %[[EXP:[0-9a-z_]+]] = math.exp %[[NEG]] : f32
// CHECK-NEXT:      %[[ONE2:[0-9a-z_]+]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      %[[DEN:[0-9a-z_]+]] = arith.addf %[[EXP]], %[[ONE2]] : f32
// CHECK-NEXT:      %[[SIG:[0-9a-z_]+]] = arith.divf %[[ONE]], %[[DEN]] : f32
// CHECK-NEXT:      %[[HALF:[0-9a-z_]+]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:      %[[OUT:[0-9a-z_]+]] = arith.mulf %[[SIG]], %[[HALF]] : f32
// CHECK-NEXT:      tile.yield %[[OUT]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    tile.store %[[Y]], "y" : tensor<2x8x32xf32>
func.func @fusion(%x: tensor<2x8x32xf32> {ge.name = "x"}, %w: tensor<32xf32> {ge.name = "w"}) -> (tensor<2x8x32xf32> {ge.name = "y"}) {
  %y = graph.fusion %x, %w : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32> {
  ^bb0(%a: tensor<2x8x32xf32>, %b: tensor<32xf32>):
    %m = graph.mul %a, %b : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
    %k = graph.constant dense<[[1.0], [2.0], [3.0], [4.0], [5.0], [6.0], [7.0], [8.0]]> : tensor<8x1xf32>
    %s = graph.add %m, %k : (tensor<2x8x32xf32>, tensor<8x1xf32>) -> tensor<2x8x32xf32>
    %g = graph.sigmoid %s : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
    %h = graph.fill 0.5 : tensor<f32>
    %r = graph.mul %g, %h : (tensor<2x8x32xf32>, tensor<f32>) -> tensor<2x8x32xf32>
    graph.yield %r : tensor<2x8x32xf32>
  } loc("gate")
  func.return %y : tensor<2x8x32xf32>
}

// -----

// tanh and powf stay math ops (tile-legalize-math expands them), one kernel each.

// CHECK-LABEL: tile.program "tanh_pow"
// CHECK:       tile.kernel "k0_vector" attributes {kind = "vector", source = "graph.tanh at loc(\22tanh\22)"
// CHECK:           math.tanh %{{.*}} : f32
// CHECK:       tile.kernel "k1_vector" attributes {kind = "vector", source = "graph.pow at loc(\22pow\22)"
// CHECK:           %[[E:[0-9a-z_]+]] = arith.constant 3.000000e+00 : f32
// CHECK-NEXT:      math.powf %{{.*}}, %[[E]] : f32
func.func @tanh_pow(%x: tensor<4x32xf32> {ge.name = "x"}) -> (tensor<4x32xf32> {ge.name = "y"}) {
  %e = graph.fill 3.0 : tensor<f32>
  %t = graph.tanh %x : (tensor<4x32xf32>) -> tensor<4x32xf32> loc("tanh")
  %y = graph.pow %t, %e : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32> loc("pow")
  func.return %y : tensor<4x32xf32>
}

// -----

// Softmax over the last axis of [1, H, S, S]: rows [H*S, S]; max, exp(x - max),
// sum, divide.

// CHECK-LABEL: tile.program "softmax"
// CHECK:       tile.kernel "k0_softmax" attributes {kind = "softmax", source = "graph.softmax at loc(\22sm\22)"
// CHECK-NEXT:    %[[L:[0-9a-z_]+]] = tile.load "x" : tensor<64x16xf32>
// CHECK-NEXT:    %[[MAX:[0-9a-z_]+]] = tile.reduction "max" %[[L]] : tensor<64x16xf32> -> tensor<64x1xf32>
// CHECK-NEXT:    %[[E:[0-9a-z_]+]] = tile.map ins(%[[L]], %[[MAX]] : tensor<64x16xf32>, tensor<64x1xf32>) -> tensor<64x16xf32> {
// CHECK-NEXT:    ^bb0(%[[A:[0-9a-z_]+]]: f32, %[[B:[0-9a-z_]+]]: f32):
// CHECK-NEXT:      %[[D:[0-9a-z_]+]] = arith.subf %[[A]], %[[B]] : f32
// CHECK-NEXT:      %[[EXP:[0-9a-z_]+]] = math.exp %[[D]] : f32
// CHECK-NEXT:      tile.yield %[[EXP]] : f32
// CHECK:         %[[SUM:[0-9a-z_]+]] = tile.reduction "sum" %[[E]] : tensor<64x16xf32> -> tensor<64x1xf32>
// CHECK-NEXT:    %[[Y:[0-9a-z_]+]] = tile.map ins(%[[E]], %[[SUM]] : tensor<64x16xf32>, tensor<64x1xf32>) -> tensor<64x16xf32>
// CHECK:           arith.divf
// CHECK:         tile.store %[[Y]], "y" : tensor<64x16xf32>
func.func @softmax(%x: tensor<1x4x16x16xf32> {ge.name = "x"}) -> (tensor<1x4x16x16xf32> {ge.name = "y"}) {
  %y = graph.softmax %x {axis = -1 : i64} : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32> loc("sm")
  func.return %y : tensor<1x4x16x16xf32>
}

// -----

// Log-softmax along the last non-unit axis (trailing 1s dropped): x - max - log(sum).

// CHECK-LABEL: tile.program "log_softmax"
// CHECK:         %[[L:[0-9a-z_]+]] = tile.load "x" : tensor<2x48xf32>
// CHECK:         %[[MAX:[0-9a-z_]+]] = tile.reduction "max" %[[X:[0-9a-z_]+]] : tensor<2x48xf32> -> tensor<2x1xf32>
// CHECK:         %[[SUM:[0-9a-z_]+]] = tile.reduction "sum" %{{.*}} : tensor<2x48xf32> -> tensor<2x1xf32>
// CHECK-NEXT:    %[[Y:[0-9a-z_]+]] = tile.map ins(%[[X]], %[[MAX]], %[[SUM]] : {{.*}}) -> tensor<2x48xf32> {
// CHECK-NEXT:    ^bb0(%[[A:[0-9a-z_]+]]: f32, %[[B:[0-9a-z_]+]]: f32, %[[C:[0-9a-z_]+]]: f32):
// CHECK-NEXT:      %[[D:[0-9a-z_]+]] = arith.subf %[[A]], %[[B]] : f32
// CHECK-NEXT:      %[[LOG:[0-9a-z_]+]] = math.log %[[C]] : f32
// CHECK-NEXT:      %[[R:[0-9a-z_]+]] = arith.subf %[[D]], %[[LOG]] : f32
// CHECK-NEXT:      tile.yield %[[R]] : f32
// CHECK:         tile.store %[[Y]], "y" : tensor<2x48xf32>
func.func @log_softmax(%x: tensor<1x2x48x1xf32> {ge.name = "x"}) -> (tensor<1x2x48x1xf32> {ge.name = "y"}) {
  %y = graph.log_softmax %x {axis = 2 : i64} : (tensor<1x2x48x1xf32>) -> tensor<1x2x48x1xf32> loc("lsm")
  func.return %y : tensor<1x2x48x1xf32>
}

// -----

// layer_norm with a residual and a bias: x + h, mean (sum x 1/64), centred,
// variance, rsqrt(var + eps); gamma and beta loaded as [1, 64] rows.

// CHECK-LABEL: tile.program "layer_norm"
// CHECK:       tile.kernel "k0_layer_norm" attributes {kind = "layer_norm", source = "graph.layer_norm at loc(\22ln\22)"
// CHECK-NEXT:    %[[X:[0-9a-z_]+]] = tile.load "x" : tensor<16x64xf32>
// CHECK-NEXT:    %[[H:[0-9a-z_]+]] = tile.load "h" : tensor<16x64xf32>
// CHECK-NEXT:    %[[R:[0-9a-z_]+]] = tile.map ins(%[[X]], %[[H]] : tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
// CHECK:           arith.addf
// CHECK:         %[[S1:[0-9a-z_]+]] = tile.reduction "sum" %[[R]] : tensor<16x64xf32> -> tensor<16x1xf32>
// CHECK-NEXT:    %[[MEAN:[0-9a-z_]+]] = tile.map ins(%[[S1]] : tensor<16x1xf32>) -> tensor<16x1xf32>
// CHECK:           arith.constant 1.562500e-02 : f32
// CHECK:         %[[D:[0-9a-z_]+]] = tile.map ins(%[[R]], %[[MEAN]] : tensor<16x64xf32>, tensor<16x1xf32>) -> tensor<16x64xf32>
// CHECK:           arith.subf
// CHECK:         %[[SQ:[0-9a-z_]+]] = tile.map ins(%[[D]] : tensor<16x64xf32>) -> tensor<16x64xf32>
// CHECK:         %[[S2:[0-9a-z_]+]] = tile.reduction "sum" %[[SQ]] : tensor<16x64xf32> -> tensor<16x1xf32>
// CHECK-NEXT:    %[[RSTD:[0-9a-z_]+]] = tile.map ins(%[[S2]] : tensor<16x1xf32>) -> tensor<16x1xf32>
// CHECK:           arith.constant 1.000000e-12 : f32
// CHECK:           math.rsqrt
// CHECK:         %[[G:[0-9a-z_]+]] = tile.load "{{const[0-9_]*}}" : tensor<1x64xf32>
// CHECK-NEXT:    %[[B:[0-9a-z_]+]] = tile.load "{{const[0-9_]*}}" : tensor<1x64xf32>
// CHECK-NEXT:    %[[Y:[0-9a-z_]+]] = tile.map ins(%[[D]], %[[RSTD]], %[[G]], %[[B]] : {{.*}}) -> tensor<16x64xf32>
// CHECK:         tile.store %[[Y]], "y" : tensor<16x64xf32>

// FP16-LABEL: tile.program "layer_norm"
// FP16:         %[[R:[0-9a-z_]+]] = tile.map ins({{.*}}) -> tensor<16x64xf32> {
// FP16-NEXT:    ^bb0(%[[A:[0-9a-z_]+]]: f32, %[[B:[0-9a-z_]+]]: f32):
// FP16-NEXT:      arith.addf %[[A]], %[[B]] : f32
// FP16:         %[[G:[0-9a-z_]+]] = tile.load "{{const[0-9_]*}}" : tensor<1x64xf16>
// FP16-NEXT:    %[[BETA:[0-9a-z_]+]] = tile.load "{{const[0-9_]*}}" : tensor<1x64xf16>
// (y is a graph output only the return reads: the kernel writes it in fp32,
// with no cast to fp16 and no cast kernel after it)
// FP16-NEXT:    %[[Y:[0-9a-z_]+]] = tile.map ins({{.*}}) -> tensor<16x64xf32> {
// FP16-NEXT:    ^bb0(%[[D:[0-9a-z_]+]]: f32, %[[RS:[0-9a-z_]+]]: f32, %[[GA:[0-9a-z_]+]]: f16, %[[BE:[0-9a-z_]+]]: f16):
// FP16-NEXT:      %[[N:[0-9a-z_]+]] = arith.mulf %[[D]], %[[RS]] : f32
// FP16-NEXT:      %[[GW:[0-9a-z_]+]] = arith.extf %[[GA]] : f16 to f32
// FP16-NEXT:      %[[NG:[0-9a-z_]+]] = arith.mulf %[[N]], %[[GW]] : f32
// FP16-NEXT:      %[[BW:[0-9a-z_]+]] = arith.extf %[[BE]] : f16 to f32
// FP16-NEXT:      %[[NB:[0-9a-z_]+]] = arith.addf %[[NG]], %[[BW]] : f32
// FP16-NEXT:      tile.yield %[[NB]] : f32
// FP16:         tile.store %[[Y]], "y" : tensor<16x64xf32>
// FP16-NEXT:  }
// FP16-NEXT:  }
func.func @layer_norm(%x: tensor<2x8x64xf32> {ge.name = "x"}, %h: tensor<2x8x64xf32> {ge.name = "h"}) -> (tensor<2x8x64xf32> {ge.name = "y"}) {
  %g = graph.fill 1.5 : tensor<64xf32>
  %b = graph.fill 0.25 : tensor<64xf32>
  %y = graph.layer_norm %x, %g bias(%b : tensor<64xf32>) residual(%h : tensor<2x8x64xf32>) {axis = -1 : i64, epsilon = 1.000000e-12 : f32} : tensor<2x8x64xf32>, tensor<64xf32> -> tensor<2x8x64xf32> loc("ln")
  func.return %y : tensor<2x8x64xf32>
}

// -----

// reduce_mean over the last two axes: rows [2*8, 4*16], a sum times 1/64,
// stored as a column (keepdims 0 is the same GM data).

// CHECK-LABEL: tile.program "reduce_mean"
// CHECK:       tile.kernel "k0_reduce" attributes {kind = "reduce", source = "graph.reduce_mean at loc(\22mean\22)"
// CHECK-NEXT:    %[[L:[0-9a-z_]+]] = tile.load "x" : tensor<16x64xf32>
// CHECK-NEXT:    %[[S:[0-9a-z_]+]] = tile.reduction "sum" %[[L]] : tensor<16x64xf32> -> tensor<16x1xf32>
// CHECK-NEXT:    %[[Y:[0-9a-z_]+]] = tile.map ins(%[[S]] : tensor<16x1xf32>) -> tensor<16x1xf32> {
// CHECK-NEXT:    ^bb0(%[[A:[0-9a-z_]+]]: f32):
// CHECK-NEXT:      %[[K:[0-9a-z_]+]] = arith.constant 1.562500e-02 : f32
// CHECK-NEXT:      %[[M:[0-9a-z_]+]] = arith.mulf %[[A]], %[[K]] : f32
// CHECK-NEXT:      tile.yield %[[M]] : f32
// CHECK:         tile.store %[[Y]], "y" : tensor<16x1xf32>
func.func @reduce_mean(%x: tensor<2x8x4x16xf32> {ge.name = "x"}) -> (tensor<2x8xf32> {ge.name = "y"}) {
  %y = graph.reduce_mean %x {keepdims = 0 : i64, axes = array<i64: 2, 3>} : (tensor<2x8x4x16xf32>) -> tensor<2x8xf32> loc("mean")
  func.return %y : tensor<2x8xf32>
}

// -----

// reduce_max over the last axis, keepdims 1: a max reduction of the loaded
// rows, stored as it is (no scaling: no map).

// CHECK-LABEL: tile.program "reduce_max"
// CHECK:         %[[L:[0-9a-z_]+]] = tile.load "x" : tensor<16x64xf32>
// CHECK-NEXT:    %[[R:[0-9a-z_]+]] = tile.reduction "max" %[[L]] : tensor<16x64xf32> -> tensor<16x1xf32>
// CHECK-NEXT:    tile.store %[[R]], "y" : tensor<16x1xf32>
func.func @reduce_max(%x: tensor<2x8x64xf32> {ge.name = "x"}) -> (tensor<2x8x1xf32> {ge.name = "y"}) {
  %y = graph.reduce_max %x {keepdims = 1 : i64, axes = array<i64: -1>} : (tensor<2x8x64xf32>) -> tensor<2x8x1xf32> loc("max")
  func.return %y : tensor<2x8x1xf32>
}

// -----

// force_fp16: a cube result stored divided by 2^3 (its calibrated range is
// beyond 2^8) is read as extf x 8, the bias added in fp32, the sum stored
// x 1/8 as fp16; the relu that writes the graph output reads it back x 8 and
// writes fp32 in its true range.

// FP16-LABEL: tile.program "scaled_bias"
// FP16:       tile.kernel "k1_matmul" attributes {{{.*}}scale_exp = 3 : i64
// FP16:       tile.kernel "k2_vector" attributes {kind = "vector", source = "graph.add at loc(\22bias\22)"{{.*}}scale_exp = 3 : i64
// FP16-NEXT:    %[[G:[0-9a-z_]+]] = tile.load "gemm" : tensor<1024xf16>
// FP16-NEXT:    %[[Y:[0-9a-z_]+]] = tile.map ins(%[[G]] : tensor<1024xf16>) -> tensor<1024xf16> {
// FP16-NEXT:    ^bb0(%[[A:[0-9a-z_]+]]: f16):
// FP16-NEXT:      %[[W:[0-9a-z_]+]] = arith.extf %[[A]] : f16 to f32
// FP16-NEXT:      %[[S:[0-9a-z_]+]] = arith.constant 8.000000e+00 : f32
// FP16-NEXT:      %[[V:[0-9a-z_]+]] = arith.mulf %[[W]], %[[S]] : f32
// FP16-NEXT:      %[[B:[0-9a-z_]+]] = arith.constant 2.000000e+00 : f32
// FP16-NEXT:      %[[SUM:[0-9a-z_]+]] = arith.addf %[[V]], %[[B]] : f32
// FP16-NEXT:      %[[INV:[0-9a-z_]+]] = arith.constant 1.250000e-01 : f32
// FP16-NEXT:      %[[STORED:[0-9a-z_]+]] = arith.mulf %[[SUM]], %[[INV]] : f32
// FP16-NEXT:      %[[T:[0-9a-z_]+]] = arith.truncf %[[STORED]] : f32 to f16
// FP16-NEXT:      tile.yield %[[T]] : f16
// FP16-NEXT:    }
// FP16-NEXT:    tile.store %[[Y]], "{{.*}}" : tensor<1024xf16>
// FP16:       tile.kernel "k3_vector" attributes {kind = "vector", source = "graph.relu at loc(\22out\22)"
// FP16:           arith.extf
// FP16-NEXT:      arith.constant 8.000000e+00 : f32
// FP16-NEXT:      arith.mulf
// FP16-NOT:       arith.truncf
// FP16:         tile.store %{{.*}}, "z" : tensor<1024xf32>
func.func @scaled_bias(%x: tensor<16x64xf32> {ge.name = "x"}) -> (tensor<16x64xf32> {ge.name = "z"}) {
  %w = graph.fill 40.0 : tensor<64x64xf32>
  %two = graph.fill 2.0 : tensor<f32>
  %r = graph.relu %x : (tensor<16x64xf32>) -> tensor<16x64xf32> loc("relu")
  %g = graph.gemm %r, %w : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32> loc("fc")
  %y = graph.add %g, %two : (tensor<16x64xf32>, tensor<f32>) -> tensor<16x64xf32> loc("bias")
  %z = graph.relu %y : (tensor<16x64xf32>) -> tensor<16x64xf32> loc("out")
  func.return %z : tensor<16x64xf32>
}

// -----

// Refused by the vector family: softmax along a middle axis goes to the AI
// CPU, saying why; a [4, 1] column (16 bytes) is a vector kernel (a padded
// DMA loads it).

// CHECK-LABEL: tile.program "refused"
// CHECK:       tile.aicpu "k0_aicpu_softmax" attributes {{{.*}}reason = "softmax along axis 1 of 2x16x32 is not along the last non-unit dim"
// CHECK:       tile.kernel "k1_vector"
func.func @refused(%x: tensor<2x16x32xf32> {ge.name = "x"}, %c: tensor<4x1xf32> {ge.name = "c"}, %z: tensor<4x32xf32> {ge.name = "z"}) -> (tensor<2x16x32xf32> {ge.name = "y"}, tensor<4x32xf32> {ge.name = "w"}) {
  %y = graph.softmax %x {axis = 1 : i64} : (tensor<2x16x32xf32>) -> tensor<2x16x32xf32> loc("middle")
  %w = graph.add %z, %c : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32> loc("short")
  func.return %y, %w : tensor<2x16x32xf32>, tensor<4x32xf32>
}

// -----

// Data movement (graph_to_tile/copy.py): a slice is a load of a box of its
// source; a concat one kernel per input, each storing into its box of the
// result (torch.roll's slice + concat).
// CHECK-LABEL: tile.program "roll"
// CHECK:       tile.kernel "k1_copy" attributes {kind = "copy", source = "graph.slice"
// CHECK-NEXT:    %[[S:.*]] = tile.load "add" {source = array<i64: 2, 16, 32>, offsets = array<i64: 0, 0, 16>} : tensor<2x16x16xf32>
// CHECK-NEXT:    tile.store %[[S]], "[[T:.*]]" : tensor<2x16x16xf32>
// CHECK:       tile.kernel "k2_copy" attributes {kind = "copy", source = "graph.concat"
// CHECK-NEXT:    %[[A:.*]] = tile.load "[[T]]" : tensor<2x16x16xf32>
// CHECK-NEXT:    tile.store %[[A]], "y" {dest = array<i64: 2, 16, 48>, offsets = array<i64: 0, 0, 0>} : tensor<2x16x16xf32>
// CHECK:       tile.kernel "k3_copy"
// CHECK-NEXT:    %[[B:.*]] = tile.load "add" : tensor<2x16x32xf32>
// CHECK-NEXT:    tile.store %[[B]], "y" {dest = array<i64: 2, 16, 48>, offsets = array<i64: 0, 0, 16>} : tensor<2x16x32xf32>
// In force_fp16 the copies move fp16 and need no map.
// FP16-LABEL: tile.program "roll"
// FP16:       tile.kernel "k1_copy"
// FP16-NEXT:    tile.load "add" {{.*}} : tensor<2x16x16xf16>
// FP16-NEXT:    tile.store
func.func @roll(%x: tensor<2x16x32xf32> {ge.name = "x"}) -> (tensor<2x16x48xf32> {ge.name = "y"}) {
  %c = graph.fill 0.5 : tensor<2x16x32xf32>
  %h = graph.add %x, %c : (tensor<2x16x32xf32>, tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  %t = graph.slice %h {starts = array<i64: 16>, ends = array<i64: 32>, axes = array<i64: 2>} : (tensor<2x16x32xf32>) -> tensor<2x16x16xf32>
  %y = graph.concat %t, %h {axis = 2 : i64} : (tensor<2x16x16xf32>, tensor<2x16x32xf32>) -> tensor<2x16x48xf32>
  func.return %y : tensor<2x16x48xf32>
}

// -----

// Swin's patch merging: x[:, 1::2, 0::2, :] of an NHWC map is a box load
// with steps (every second row and column; the channels, innermost, stay
// contiguous); a class token (a constant) concatenated before the tokens is
// a load of a GM constant of the kernel.
// CHECK-LABEL: tile.program "patch_merge"
// CHECK:       tile.kernel "k1_copy" attributes {kind = "copy", source = "graph.slice"
// CHECK-NEXT:    %[[S:.*]] = tile.load "add" {source = array<i64: 1, 8, 8, 16>, offsets = array<i64: 0, 1, 0, 0>, steps = array<i64: 1, 2, 2, 1>} : tensor<1x4x4x16xf32>
// CHECK:       tile.kernel "k2_copy" attributes {kind = "copy", source = "graph.concat"
// CHECK-NEXT:    %[[C:.*]] = tile.load "const{{.*}}" : tensor<1x1x16xf32>
// CHECK-NEXT:    tile.store %[[C]], "z" {dest = array<i64: 1, 65, 16>, offsets = array<i64: 0, 0, 0>} : tensor<1x1x16xf32>
func.func @patch_merge(%x: tensor<1x8x8x16xf32> {ge.name = "x"}) -> (tensor<1x4x4x16xf32> {ge.name = "y"}, tensor<1x65x16xf32> {ge.name = "z"}) {
  %c = graph.fill 0.5 : tensor<1x8x8x16xf32>
  %h = graph.add %x, %c : (tensor<1x8x8x16xf32>, tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  %y = graph.slice %h {starts = array<i64: 1, 0>, ends = array<i64: 9223372036854775807, 9223372036854775807>, axes = array<i64: 1, 2>, steps = array<i64: 2, 2>} : (tensor<1x8x8x16xf32>) -> tensor<1x4x4x16xf32>
  %t = graph.reshape %h {shape = array<i64: 1, 64, 16>} : (tensor<1x8x8x16xf32>) -> tensor<1x64x16xf32>
  %cls = graph.constant dense<[[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0]]]> : tensor<1x1x16xf32>
  %z = graph.concat %cls, %t {axis = 1 : i64} : (tensor<1x1x16xf32>, tensor<1x64x16xf32>) -> tensor<1x65x16xf32>
  func.return %y, %z : tensor<1x4x4x16xf32>, tensor<1x65x16xf32>
}

// -----

// Gathers (graph_to_tile/gather.py): an embedding lookup [V, D] by [1, N]
// indices is a tile.load of the indices as an [N, 1] column and a tile.gather
// of the table viewed as [A, V, B] = [1, 50, 64], stored as the result
// [A, N, B]. In force_fp16 the f32 input table is read as f32 and, the result
// being a graph output only the return reads, stored as it is: no map, no
// cast kernel.
// CHECK-LABEL: tile.program "embedding"
// CHECK:       tile.tensor {name = "i", kind = "input", {{.*}}type = tensor<1x16xi64>
// CHECK:       tile.kernel "k0_gather" attributes {kind = "gather", source = "graph.gather at loc(\22emb\22)"
// CHECK-NEXT:    %[[I:[0-9a-z_]+]] = tile.load "i" : tensor<16x1xi64>
// CHECK-NEXT:    %[[Y:[0-9a-z_]+]] = tile.gather "w"[%[[I]]] {table = array<i64: 1, 50, 64>} : tensor<16x1xi64> -> tensor<1x16x64xf32>
// CHECK-NEXT:    tile.store %[[Y]], "y" : tensor<1x16x64xf32>
// CHECK-NEXT:  }
// FP16-LABEL: tile.program "embedding"
// FP16:       tile.kernel "k0_gather"
// FP16-NEXT:    %[[I:[0-9a-z_]+]] = tile.load "i" : tensor<16x1xi64>
// FP16-NEXT:    %[[G:[0-9a-z_]+]] = tile.gather "w"[%[[I]]] {table = array<i64: 1, 50, 64>} : tensor<16x1xi64> -> tensor<1x16x64xf32>
// FP16-NEXT:    tile.store %[[G]], "y" : tensor<1x16x64xf32>
// FP16-NEXT:  }
// FP16-NEXT:  }
func.func @embedding(%w: tensor<50x64xf32> {ge.name = "w"}, %i: tensor<1x16xi64> {ge.name = "i"}) -> (tensor<1x16x64xf32> {ge.name = "y"}) {
  %y = graph.gather %w, %i {axis = 0 : i64} : (tensor<50x64xf32>, tensor<1x16xi64>) -> tensor<1x16x64xf32> loc("emb")
  func.return %y : tensor<1x16x64xf32>
}

// -----

// A gather along axis 1 of a computed [2, 10, 32] value with constant
// indices (not a run, so not a slice): the indices get a GM copy (i64) and
// the table is [2, 10, 32]; in force_fp16 the rows move as fp16, widened to
// the fp32 graph output on chip.
// CHECK-LABEL: tile.program "middle_axis"
// CHECK:       tile.tensor {name = "indices", kind = "constant", {{.*}}type = tensor<3xi64>
// CHECK:       tile.kernel "k1_gather" attributes {kind = "gather", source = "graph.gather at loc(\22g\22)"
// CHECK-NEXT:    %[[I:[0-9a-z_]+]] = tile.load "indices" : tensor<3x1xi64>
// CHECK-NEXT:    %[[Y:[0-9a-z_]+]] = tile.gather "relu"[%[[I]]] {table = array<i64: 2, 10, 32>} : tensor<3x1xi64> -> tensor<2x3x32xf32>
// CHECK-NEXT:    tile.store %[[Y]], "y" : tensor<2x3x32xf32>
// FP16-LABEL: tile.program "middle_axis"
// FP16:       tile.kernel "k1_gather"
// FP16-NEXT:    %[[I:[0-9a-z_]+]] = tile.load "indices" : tensor<3x1xi64>
// FP16-NEXT:    %[[Y:[0-9a-z_]+]] = tile.gather "relu"[%[[I]]] {table = array<i64: 2, 10, 32>} : tensor<3x1xi64> -> tensor<2x3x32xf16>
// FP16-NEXT:    %[[W:[0-9a-z_]+]] = tile.map ins(%[[Y]] : tensor<2x3x32xf16>) -> tensor<2x3x32xf32>
// FP16:           arith.extf
// FP16:         tile.store %[[W]], "y" : tensor<2x3x32xf32>
func.func @middle_axis(%x: tensor<2x10x32xf32> {ge.name = "x"}) -> (tensor<2x3x32xf32> {ge.name = "y"}) {
  %r = graph.relu %x : (tensor<2x10x32xf32>) -> tensor<2x10x32xf32> loc("relu")
  %i = graph.constant dense<[7, -1, 7]> : tensor<3xi64>
  %y = graph.gather %r, %i {axis = 1 : i64} : (tensor<2x10x32xf32>, tensor<3xi64>) -> tensor<2x3x32xf32> loc("g")
  func.return %y : tensor<2x3x32xf32>
}

// -----

// Rows of 4 floats (16 bytes) are not whole 32-byte blocks: the gather is
// an AI-core kernel all the same (each row a padded DMA).
// CHECK-LABEL: tile.program "narrow_rows"
// CHECK:       tile.kernel "k0_gather"
// CHECK:         tile.gather "w"[%{{.*}}] {table = array<i64: 1, 50, 4>} : tensor<16x1xi64> -> tensor<1x16x4xf32>
// CHECK-NOT:   tile.aicpu
func.func @narrow_rows(%w: tensor<50x4xf32> {ge.name = "w"}, %i: tensor<16xi64> {ge.name = "i"}) -> (tensor<16x4xf32> {ge.name = "y"}) {
  %y = graph.gather %w, %i {axis = 0 : i64} : (tensor<50x4xf32>, tensor<16xi64>) -> tensor<16x4xf32> loc("narrow")
  func.return %y : tensor<16x4xf32>
}

// -----

// expand (graph_to_tile/copy.py): a map that reads its operand along the
// broadcast dim with stride 0, [2, 1, 32] -> [2, 4, 32]; a pure broadcast
// (its map yields the element) is still a map: its result has another shape.
// In force_fp16 the result, also read by the neg, is stored fp16.
// CHECK-LABEL: tile.program "expand"
// CHECK:       tile.kernel "k1_expand" attributes {kind = "expand", source = "graph.expand at loc(\22bcast\22)"
// CHECK-NEXT:    %[[X:[0-9a-z_]+]] = tile.load "relu" : tensor<2x1x32xf32>
// CHECK-NEXT:    %[[Y:[0-9a-z_]+]] = tile.map ins(%[[X]] : tensor<2x1x32xf32>) -> tensor<2x4x32xf32> {
// CHECK-NEXT:    ^bb0(%[[A:[0-9a-z_]+]]: f32):
// CHECK-NEXT:      tile.yield %[[A]] : f32
// CHECK:         tile.store %[[Y]], "y" : tensor<2x4x32xf32>
// FP16-LABEL: tile.program "expand"
// FP16:       tile.kernel "k1_expand"
// FP16-NEXT:    %[[X:[0-9a-z_]+]] = tile.load "relu" : tensor<2x1x32xf16>
// FP16-NEXT:    %[[Y:[0-9a-z_]+]] = tile.map ins(%[[X]] : tensor<2x1x32xf16>) -> tensor<2x4x32xf16> {
// FP16:         tile.store %[[Y]], "[[E:expand]]" : tensor<2x4x32xf16>
// FP16:       tile.kernel "k2_vector"
// FP16-NEXT:    tile.load "[[E]]" : tensor<256xf16>
func.func @expand(%x: tensor<2x1x32xf32> {ge.name = "x"}) -> (tensor<2x4x32xf32> {ge.name = "y"}, tensor<2x4x32xf32> {ge.name = "z"}) {
  %r = graph.relu %x : (tensor<2x1x32xf32>) -> tensor<2x1x32xf32> loc("relu")
  %y = graph.expand %r {shape = array<i64: 2, 4, 32>} : (tensor<2x1x32xf32>) -> tensor<2x4x32xf32> loc("bcast")
  %z = graph.neg %y : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32> loc("neg")
  func.return %y, %z : tensor<2x4x32xf32>, tensor<2x4x32xf32>
}
