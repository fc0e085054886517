// graph-partition places every op on the AI core or the AI CPU, by the
// legality table (lowering/legality/): AI-CPU ops get ge.engine and
// ge.reason, a remark each; AI-core ops are left unannotated. With
// aicpu-fallback off, one error lists every op that would fall back.
// RUN: ge-opt %s -p graph-partition | filecheck %s
// RUN: ge-opt %s -p graph-partition --log=info --verify-diagnostics
// RUN: not ge-opt %s -p 'graph-partition{aicpu_fallback=false}' 2>&1 | filecheck %s --check-prefix=OFF
// RUN: ge-opt %s -p 'graph-partition{precision_mode=must_keep_origin_dtype}' | filecheck %s --check-prefix=FP32
// RUN: ge-opt %s -p graph-partition,assign-layouts | filecheck %s --check-prefix=LAYOUT
// RUN: ge-opt %s -p 'ge-lower{precision_mode=must_keep_origin_dtype}' | filecheck %s --check-prefix=NPU

// CHECK-LABEL: func.func @mixed
// CHECK:       = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32> -> tensor<1x16x8x8xf32>{{$}}
// CHECK:       graph.sin %{{.*}} {ge.engine = "AI_CPU", ge.reason = "no AI-core kernel for graph.sin"}
// CHECK:       graph.conv %{{.*}}, %{{.*}} {ge.engine = "AI_CPU", ge.reason = "anisotropic stride (1, 2) / dilation (1, 1) not lowered", strides = array<i64: 1, 2>, pads = array<i64: 1, 1, 1, 1>}
// CHECK:       graph.matmul %{{.*}}, %{{.*}} {ge.engine = "AI_CPU", ge.reason = "force_fp16: reads a non-4-D fp32 graph input (no cast kernel for it on the AI core); on the cube: a 1-D matmul operand is not lowered on the cube"}
// CHECK:       graph.gather_nd %{{.*}}, %{{.*}} {ge.engine = "AI_CPU", ge.reason = "no AI-core kernel for graph.gather_nd"
// A batch-2 relu is no feature map of the CNN patterns; the vector kernels take it.
// CHECK:       graph.relu %{{.*}} {ge.kernel = "vector"}

// In fp32 the graph input needs no cast kernel: the matrix-vector product is
// refused for its operand that is no weight, and by the cube for its 1-D one.
// FP32: graph.matmul %{{.*}}, %{{.*}} {ge.engine = "AI_CPU", ge.reason = "the right operand must be constant (a weight); on the cube: a 1-D matmul operand is not lowered on the cube"}

// OFF: error: 4 op(s) have no AI-core kernel and AI-CPU fallback is off (--no-aicpu-fallback): graph.sin at loc("t"): no AI-core kernel for graph.sin; graph.conv at loc("c2"): anisotropic stride (1, 2) / dilation (1, 1) not lowered; graph.matmul at loc("mm"): force_fp16: reads a non-4-D fp32 graph input (no cast kernel for it on the AI core); on the cube: a 1-D matmul operand is not lowered on the cube; graph.gather_nd at loc("g"): no AI-core kernel for graph.gather_nd

// The AI CPU reads and writes the logical order: a transdata back to NCHW
// before the AI-CPU sin, and one into NC1HWC0 before the AI-core conv
// that reads its result.
// LAYOUT-LABEL: func.func @mixed
// LAYOUT:       %[[C1:.*]] = graph.conv {{.*}}ge.format = "NC1HWC0"
// LAYOUT:       %[[T1:.*]] = graph.transdata %[[C1]] {{.*}}src_format = "NC1HWC0", dst_format = "NCHW"
// LAYOUT:       graph.sin %[[T1]] {{.*}}ge.format = "NCHW"

// The lowered program: AI-core kernels are launched, AI-CPU ops become
// npu.aicpu tasks holding the graph op, reading and writing GM.
// NPU:      npu.kernel @k0_transdata
// NPU:      npu.launch @k0_transdata
// NPU:      npu.aicpu @k3_aicpu_sin
// NPU:        graph.sin
// NPU:        npu.aicpu_return
func.func @mixed(%x: tensor<1x16x8x8xf32> {ge.name = "x"}, %b: tensor<8xf32> {ge.name = "b"},
                 %ids: tensor<1x4x1xi64> {ge.name = "ids"}, %z: tensor<2x16x8x8xf32> {ge.name = "z"})
    -> (tensor<1x16x8x4xf32> {ge.name = "y"}, tensor<8xf32> {ge.name = "m"}, tensor<1x4x4xf32> {ge.name = "e"},
        tensor<2x16x8x8xf32> {ge.name = "rz"}) {
  %w = graph.fill 0.1 : tensor<16x16x3x3xf32>
  %c1 = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32> -> tensor<1x16x8x8xf32> loc("c1")
  // expected-remark@+1 {{'graph.sin' op missed graph-partition at loc("t"): AI_CPU fallback (no AI-core kernel for graph.sin)}}
  %t = graph.sin %c1 : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> loc("t")
  // expected-remark@+1 {{'graph.conv' op missed graph-partition at loc("c2"): AI_CPU fallback (anisotropic stride (1, 2) / dilation (1, 1) not lowered)}}
  %c2 = graph.conv %t, %w {strides = array<i64: 1, 2>, pads = array<i64: 1, 1, 1, 1>} : tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32> -> tensor<1x16x8x4xf32> loc("c2")
  %a = graph.fill 0.5 : tensor<8x8xf32>
  // expected-remark@+1 {{'graph.matmul' op missed graph-partition at loc("mm"): AI_CPU fallback (force_fp16: reads a non-4-D fp32 graph input (no cast kernel for it on the AI core); on the cube: a 1-D matmul operand is not lowered on the cube)}}
  %m = graph.matmul %a, %b : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8xf32> loc("mm")
  %table = graph.fill 0.25 : tensor<10x4xf32>
  // expected-remark@+1 {{'graph.gather_nd' op missed graph-partition at loc("g"): AI_CPU fallback (no AI-core kernel for graph.gather_nd)}}
  %e = graph.gather_nd %table, %ids : (tensor<10x4xf32>, tensor<1x4x1xi64>) -> tensor<1x4x4xf32> loc("g")
  %rz = graph.relu %z : (tensor<2x16x8x8xf32>) -> tensor<2x16x8x8xf32> loc("r")
  func.return %c2, %m, %e, %rz : tensor<1x16x8x4xf32>, tensor<8xf32>, tensor<1x4x4xf32>, tensor<2x16x8x8xf32>
}
