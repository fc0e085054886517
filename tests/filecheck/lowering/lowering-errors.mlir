// Errors of the lowering: one diagnostic each, never a traceback.
// RUN: ge-opt %s --split-input-file -p ge-lower --verify-diagnostics
// RUN: not ge-opt %s --split-input-file -p convert-graph-to-tile 2>&1 | filecheck %s --check-prefix=NOLOWER
// RUN: not ge-opt %s --split-input-file -p 'ge-lower{precision_mode=fp8}' 2>&1 | filecheck %s --check-prefix=PRECISION
// RUN: not ge-opt %s --split-input-file -p 'convert-graph-to-tile{precision_mode=fp8}' 2>&1 | filecheck %s --check-prefix=PRECISION

// NOLOWER: error: graph.tanh at loc("t"): no lowering to the tile dialect for graph.tanh
// PRECISION:   error: unknown precision mode 'fp8' (expected force_fp16, must_keep_origin_dtype)

// An op without a lowering: the diagnostic names it.
// expected-error@unknown {{graph.tanh at loc("t"): no lowering to the tile dialect for graph.tanh}}
func.func @unsupported(%x: tensor<1x16x16x16xf32> {ge.name = "x"}) -> (tensor<1x16x16x16xf32> {ge.name = "y"}) {
  %y = graph.tanh %x : (tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32> loc("t")
  func.return %y : tensor<1x16x16x16xf32>
}

// -----

// A dynamic input shape: the lowering compiles one static shape; the
// diagnostic names the input and suggests --input-shape.
// expected-error@+1 {{input 'x' has dynamic shape ?x16x16x16: the lowering compiles static shapes only; fix it with --input-shape (e.g. --input-shape 'x:1,16,16,16')}}
func.func @dynamic(%x: tensor<?x16x16x16xf32> {ge.name = "x"}) -> (tensor<?x16x16x16xf32> {ge.name = "y"}) {
  %y = graph.relu %x : (tensor<?x16x16x16xf32>) -> tensor<?x16x16x16xf32>
  func.return %y : tensor<?x16x16x16xf32>
}
