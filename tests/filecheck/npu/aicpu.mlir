// npu.aicpu: an AI-CPU task between AI-core launches. The custom form parses
// and prints back the same (a scale of 1.0 is not printed), and so does the
// generic form, which shows every property.
// RUN: ge-opt %s | ge-opt | filecheck %s
// RUN: ge-opt %s --print-op-generic | ge-opt | filecheck %s
// RUN: ge-opt %s --print-op-generic | ge-opt --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: npu.program @prog gm_size 4096 {
npu.program @prog gm_size 4096 {
  // CHECK-NEXT: npu.input "cond" at 0 : tensor<1x16xi1>
  // CHECK-NEXT: npu.input "x" at 64 : tensor<1x16xf16>
  // CHECK-NEXT: npu.input "idx" at 96 : tensor<3xi64>
  // CHECK-NEXT: npu.output "y" at 256 : tensor<1x16xf16>
  // CHECK-NEXT: npu.output "g" at 512 : tensor<3x16xf16>
  npu.input "cond" at 0 : tensor<1x16xi1>
  npu.input "x" at 64 : tensor<1x16xf16>
  npu.input "idx" at 96 : tensor<3xi64>
  npu.output "y" at 256 : tensor<1x16xf16>
  npu.output "g" at 512 : tensor<3x16xf16>

  // An AI-core kernel: y := -x (in place at 128).
  // CHECK: npu.kernel @k0_neg {
  npu.kernel @k0_neg {
    %g = npu.ptr gm 64
    %o = npu.ptr gm 128
    %u = npu.ptr ub 0
    npu.dma mte2 %u, %g len 32 : !npu.ptr<ub>, !npu.ptr<gm>
    npu.set_flag mte2 -> v event 0
    npu.wait_flag mte2 -> v event 0
    npu.vmuls f16 %u, %u scalar -1.0 repeat 1 mask 16 : !npu.ptr<ub>, !npu.ptr<ub>
    npu.set_flag v -> mte3 event 0
    npu.wait_flag v -> mte3 event 0
    npu.dma mte3 %o, %u len 32 : !npu.ptr<gm>, !npu.ptr<ub>
  }
  // CHECK: npu.launch @k0_neg block_dim 1 stream 0
  npu.launch @k0_neg block_dim 1 stream 0

  // CHECK-NEXT: npu.aicpu @k1_aicpu_where stream 0 ins [0 : tensor<1x16xi1>, 128 : tensor<1x16xf16> scale 0.25, 64 : tensor<1x16xf16>] outs [256 : tensor<1x16xf16> scale 0.5] attributes {ge.kind = "aicpu", ge.absorbed = ["Where_3"], ge.source = "graph.where", ge.reason = "no AI-core kernel for graph.where"} {
  // CHECK-NEXT: ^bb0(%[[C:.*]]: tensor<1x16xi1>, %[[A:.*]]: tensor<1x16xf32>, %[[B:.*]]: tensor<1x16xf32>):
  // CHECK-NEXT:   %[[R:.*]] = graph.where %[[C]], %[[A]], %[[B]] : (tensor<1x16xi1>, tensor<1x16xf32>, tensor<1x16xf32>) -> tensor<1x16xf32>
  // CHECK-NEXT:   npu.aicpu_return %[[R]] : tensor<1x16xf32>
  // CHECK-NEXT: }
  npu.aicpu @k1_aicpu_where stream 0 ins [0 : tensor<1x16xi1>, 128 : tensor<1x16xf16> scale 0.25, 64 : tensor<1x16xf16> scale 1.0] outs [256 : tensor<1x16xf16> scale 0.5] attributes {ge.kind = "aicpu", ge.absorbed = ["Where_3"], ge.source = "graph.where", ge.reason = "no AI-core kernel for graph.where"} {
  ^bb0(%c: tensor<1x16xi1>, %a: tensor<1x16xf32>, %b: tensor<1x16xf32>):
    %r = graph.where %c, %a, %b : (tensor<1x16xi1>, tensor<1x16xf32>, tensor<1x16xf32>) -> tensor<1x16xf32>
    npu.aicpu_return %r : tensor<1x16xf32>
  }

  // A task on another stream, after an event; two body ops, int64 indices.
  // CHECK-NEXT: npu.stream_record stream 0 event 0
  // CHECK-NEXT: npu.stream_wait stream 1 event 0
  // CHECK-NEXT: npu.aicpu @k2_aicpu_gather stream 1 ins [64 : tensor<1x16xf16>, 96 : tensor<3xi64>] outs [512 : tensor<3x16xf16>] {
  // CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<1x16xf16>, %[[I:.*]]: tensor<3xi64>):
  // CHECK-NEXT:   %[[T:.*]] = graph.transpose %[[X]] {perm = array<i64: 1, 0>} : (tensor<1x16xf16>) -> tensor<16x1xf16>
  // CHECK-NEXT:   %[[G:.*]] = graph.gather %[[T]], %[[I]] {axis = 1 : i64} : (tensor<16x1xf16>, tensor<3xi64>) -> tensor<16x3xf16>
  // CHECK-NEXT:   %[[U:.*]] = graph.transpose %[[G]] {perm = array<i64: 1, 0>} : (tensor<16x3xf16>) -> tensor<3x16xf16>
  // CHECK-NEXT:   npu.aicpu_return %[[U]] : tensor<3x16xf16>
  // CHECK-NEXT: }
  npu.stream_record stream 0 event 0
  npu.stream_wait stream 1 event 0
  npu.aicpu @k2_aicpu_gather stream 1 ins [64 : tensor<1x16xf16>, 96 : tensor<3xi64>] outs [512 : tensor<3x16xf16>] {
  ^bb0(%x: tensor<1x16xf16>, %i: tensor<3xi64>):
    %t = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<1x16xf16>) -> tensor<16x1xf16>
    %g = graph.gather %t, %i {axis = 1 : i64} : (tensor<16x1xf16>, tensor<3xi64>) -> tensor<16x3xf16>
    %u = graph.transpose %g {perm = array<i64: 1, 0>} : (tensor<16x3xf16>) -> tensor<3x16xf16>
    npu.aicpu_return %u : tensor<3x16xf16>
  }

  // No operands at all.
  // CHECK-NEXT: npu.aicpu @k3_nothing stream 2 ins [] outs [] {
  // CHECK-NEXT:   npu.aicpu_return
  // CHECK-NEXT: }
  npu.aicpu @k3_nothing stream 2 ins [] outs [] {
    npu.aicpu_return
  }
}

// GENERIC: "npu.aicpu"() <{sym_name = "k1_aicpu_where", stream = 0 : i64, in_offsets = array<i64: 0, 128, 64>, in_types = [tensor<1x16xi1>, tensor<1x16xf16>, tensor<1x16xf16>], in_scales = array<f64: 1.000000e+00, 2.500000e-01, 1.000000e+00>, out_offsets = array<i64: 256>, out_types = [tensor<1x16xf16>], out_scales = array<f64: 5.000000e-01>}> ({
// GENERIC:   "npu.aicpu_return"(%{{.*}}) : (tensor<1x16xf32>) -> ()
// GENERIC: }) {ge.kind = "aicpu", ge.absorbed = ["Where_3"], ge.source = "graph.where", ge.reason = "no AI-core kernel for graph.where"} : () -> ()
