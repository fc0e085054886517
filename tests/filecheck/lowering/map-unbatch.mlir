// map-unbatch: the map kernels' ops of batch N > 1 become N ops of batch 1,
// one per image (lowering/unbatch.py); a region reads slices of its batched
// operands (each sliced once, right after its definition) and its results
// are rejoined by a concat along the batch only where something else reads
// them. The batch slices that map kernels read are their input transdata
// (the LAYOUT prefix: NC1HWC0, on the AI core, no ge.kernel).
// RUN: ge-opt %s --split-input-file -p map-unbatch | filecheck %s
// RUN: ge-opt %s --split-input-file -p 'map-unbatch,graph-partition,assign-layouts' | filecheck %s --check-prefix=LAYOUT

// conv -> relu -> residual add of the input -> global pool, then a
// classifier gemm of both images (M = 2): one region per image, the
// pooled maps rejoined for the flatten.

// CHECK-LABEL: func.func @region
// CHECK-NEXT:    %[[X0:.*]] = graph.slice %x {starts = array<i64: 0>, ends = array<i64: 1>, axes = array<i64: 0>} : (tensor<2x8x6x6xf32>) -> tensor<1x8x6x6xf32>
// CHECK-NEXT:    %[[X1:.*]] = graph.slice %x {starts = array<i64: 1>, ends = array<i64: 2>, axes = array<i64: 0>} : (tensor<2x8x6x6xf32>) -> tensor<1x8x6x6xf32>
// CHECK:         %[[C0:.*]] = graph.conv %[[X0]], %w {{.*}} -> tensor<1x8x6x6xf32>
// CHECK-NEXT:    %[[C1:.*]] = graph.conv %[[X1]], %w {{.*}} -> tensor<1x8x6x6xf32>
// CHECK-NEXT:    %[[R0:.*]] = graph.relu %[[C0]]
// CHECK-NEXT:    %[[R1:.*]] = graph.relu %[[C1]]
// CHECK-NEXT:    %[[A0:.*]] = graph.add %[[R0]], %[[X0]]
// CHECK-NEXT:    %[[A1:.*]] = graph.add %[[R1]], %[[X1]]
// CHECK-NEXT:    %[[P0:.*]] = graph.global_avg_pool %[[A0]]
// CHECK-NEXT:    %[[P1:.*]] = graph.global_avg_pool %[[A1]]
// CHECK-NEXT:    %p = graph.concat %[[P0]], %[[P1]] {axis = 0 : i64} : (tensor<1x8x1x1xf32>, tensor<1x8x1x1xf32>) -> tensor<2x8x1x1xf32>
// CHECK-NEXT:    %f = graph.flatten %p
// CHECK-NEXT:    %y = graph.gemm %f, %v
// CHECK-NOT:     graph.concat

// LAYOUT-LABEL: func.func @region
// LAYOUT-NEXT:    graph.slice %x {ge.format = "NC1HWC0", starts = array<i64: 0>
// LAYOUT-NEXT:    graph.slice %x {ge.format = "NC1HWC0", starts = array<i64: 1>
// LAYOUT-NOT:     graph.transdata {{.*}}dst_format = "NC1HWC0"
func.func @region(%x: tensor<2x8x6x6xf32> {ge.name = "x"}) -> (tensor<2x4xf32> {ge.name = "y"}) {
  %w = graph.fill 0.1 : tensor<8x8x3x3xf32>
  %v = graph.fill 0.2 : tensor<8x4xf32>
  %c = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<2x8x6x6xf32>, tensor<8x8x3x3xf32> -> tensor<2x8x6x6xf32> loc("conv")
  %r = graph.relu %c : (tensor<2x8x6x6xf32>) -> tensor<2x8x6x6xf32> loc("relu")
  %a = graph.add %r, %x : (tensor<2x8x6x6xf32>, tensor<2x8x6x6xf32>) -> tensor<2x8x6x6xf32> loc("add")
  %p = graph.global_avg_pool %a : (tensor<2x8x6x6xf32>) -> tensor<2x8x1x1xf32> loc("gap")
  %f = graph.flatten %p {axis = 1 : i64} : (tensor<2x8x1x1xf32>) -> tensor<2x8xf32> loc("flat")
  %y = graph.gemm %f, %v : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32> loc("fc")
  func.return %y : tensor<2x4xf32>
}

// -----

// Not rewritten: a batched elementwise op that reads no images (no map
// kernel before it), and a conv whose images the AI core could not run
// either (a computed weight): one AI-CPU task, not one per image.

// CHECK-LABEL: func.func @stays_batched
// CHECK-NOT:     graph.slice
// CHECK:         graph.add %x, %x : (tensor<2x4x5x5xf32>, tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
// CHECK:         graph.conv %s, %k : tensor<2x4x5x5xf32>, tensor<4x4x1x1xf32> -> tensor<2x4x5x5xf32>
// CHECK-NOT:     graph.concat
func.func @stays_batched(%x: tensor<2x4x5x5xf32> {ge.name = "x"}, %k: tensor<4x4x1x1xf32> {ge.name = "k"}) -> (tensor<2x4x5x5xf32> {ge.name = "y"}) {
  %s = graph.add %x, %x : (tensor<2x4x5x5xf32>, tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32> loc("add")
  %y = graph.conv %s, %k : tensor<2x4x5x5xf32>, tensor<4x4x1x1xf32> -> tensor<2x4x5x5xf32> loc("conv")
  func.return %y : tensor<2x4x5x5xf32>
}
