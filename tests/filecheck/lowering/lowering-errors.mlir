// Errors of the lowering: one diagnostic each, never a traceback.
// RUN: ge-opt %s --split-input-file -p ge-lower --verify-diagnostics
// RUN: not ge-opt %s --split-input-file -p convert-graph-to-tile 2>&1 | filecheck %s --check-prefix=NOLOWER
// RUN: not ge-opt %s --split-input-file -p 'ge-lower{precision_mode=fp8}' 2>&1 | filecheck %s --check-prefix=PRECISION
// RUN: not ge-opt %s --split-input-file -p 'convert-graph-to-tile{precision_mode=fp8}' 2>&1 | filecheck %s --check-prefix=PRECISION
// RUN: not ge-opt %s --split-input-file -p 'ge-lower{aicpu_fallback=false}' 2>&1 | filecheck %s --check-prefix=NOFALLBACK

// NOLOWER: error: graph.sin at loc("t"): no lowering to the tile dialect for graph.sin
// NOFALLBACK: error: 1 op(s) have no AI-core kernel and AI-CPU fallback is off (--no-aicpu-fallback): graph.sin at loc("t"): no AI-core kernel for graph.sin
// PRECISION:   error: unknown precision mode 'fp8' (expected force_fp16, must_keep_origin_dtype)

// An op without an AI-core kernel: ge-lower places it on the AI CPU
// (graph-partition); convert-graph-to-tile alone, or ge-lower without the
// fallback, names it.
func.func @unsupported(%x: tensor<1x16x16x16xf32> {ge.name = "x"}) -> (tensor<1x16x16x16xf32> {ge.name = "y"}) {
  // expected-remark@+1 {{'graph.sin' op missed graph-partition at loc("t"): AI_CPU fallback (no AI-core kernel for graph.sin)}}
  %y = graph.sin %x : (tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32> loc("t")
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

// -----

// A map that has been in row-major order inside the graph (here a softmax's
// result) needs an NCHW -> NC1HWC0 transdata. It used to be an error in
// force_fp16 (and the AI-core softmax read the fp32 input as fp16), then an
// AI-CPU softmax writing fp32 for the fp32 transdata; now the softmax is a
// vector kernel (reading the fp32 input as it is) and the transdata reads
// its fp16 result.
func.func @transdata_of_internal(%x: tensor<1x16x1x1xf32> {ge.name = "x"}) -> (tensor<1x16x1x1xf32> {ge.name = "y"}) {
  %w = graph.fill 0.5 : tensor<16x16x1x1xf32>
  %s = graph.softmax %x {axis = 1 : i64} : (tensor<1x16x1x1xf32>) -> tensor<1x16x1x1xf32> loc("softmax")
  // expected-remark@+2 {{'graph.conv' op assign-layouts: operand #0 NCHW -> NC1HWC0 (graph.transdata)}}
  // expected-remark@+1 {{'graph.conv' op assign-layouts: output transdata folded (byte-identical to NCHW)}}
  %y = graph.conv %s, %w : tensor<1x16x1x1xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x1x1xf32> loc("conv")
  func.return %y : tensor<1x16x1x1xf32>
}

// -----

// graph-plan-memory's offloads (graph sizes, not the device's) are refused
// with the way to limit the device's memory instead.
func.func @graph_offload(%x: tensor<1x16x16x16xf32> {ge.name = "x"}) -> (tensor<1x16x16x16xf32> {ge.name = "y"}) {
  %a = graph.relu %x : (tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  // expected-error@+1 {{graph.offload: graph-level offloads are not compiled (graph-plan-memory plans fp32 NCHW sizes, not what the device stores); limit the device's memory with ge-compile --device-memory-limit (tile-fit-device-memory) instead of graph-plan-memory{device-memory-limit}}}
  %h = graph.offload %a : (tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  %b = graph.reload %h : (tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  func.return %b : tensor<1x16x16x16xf32>
}
