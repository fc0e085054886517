// assign-layouts: a storage format (ge.format) for every value, anchored at
// the ops that need one, and a graph.transdata wherever two formats meet.
// Running it twice changes nothing (second RUN line, same checks).
// RUN: ge-opt %s --split-input-file -p assign-layouts | filecheck %s
// RUN: ge-opt %s --split-input-file -p assign-layouts,assign-layouts | filecheck %s
// RUN: ge-opt %s --split-input-file -p graph-partition,assign-layouts,convert-graph-to-tile | filecheck %s --check-prefix=TILE

// Feature maps are NC1HWC0 around conv, elementwise and pool: one transdata
// at the input, shared by both convs (placed before the first op), one per
// 4-D graph output, each right after its producer. Weights are FRACTAL_Z.

// CHECK-LABEL: func.func @conv_add_pool
// CHECK-NEXT:    %[[IN:.*]] = graph.transdata %x {ge.format = "NC1HWC0", src_format = "NCHW", dst_format = "NC1HWC0"}
// CHECK-NEXT:    %w = graph.fill 0.5 {ge.format = "FRACTAL_Z"}
// CHECK-NEXT:    %a = graph.conv %[[IN]], %w {ge.format = "NC1HWC0"
// CHECK-NEXT:    %b = graph.conv %[[IN]], %w {ge.format = "NC1HWC0"
// CHECK-NEXT:    %s = graph.add %a, %b {ge.format = "NC1HWC0"}
// CHECK-NEXT:    %[[Z:.*]] = graph.transdata %s {ge.format = "NCHW", src_format = "NC1HWC0", dst_format = "NCHW"}
// CHECK-NEXT:    %p = graph.max_pool %s {ge.format = "NC1HWC0"
// CHECK-NEXT:    %[[Y:.*]] = graph.transdata %p {ge.format = "NCHW", src_format = "NC1HWC0", dst_format = "NCHW"}
// CHECK-NEXT:    func.return %[[Y]], %[[Z]]

// TILE-LABEL: tile.program "conv_add_pool" attributes {{{.*}}ge.transdata = 3 : i64}
// TILE:         tile.kernel "k0_transdata" attributes {kind = "transdata", source = "graph.transdata at loc(\22x_transdata_nc1hwc0\22)"
// TILE:         tile.kernel "k1_conv"
// TILE:         tile.kernel "k2_conv"
// TILE:         tile.kernel "k3_elementwise"
// TILE:         tile.kernel "k4_transdata" attributes {kind = "transdata", source = "graph.transdata at loc(\22add_transdata_nchw\22)"
// TILE:           tile.gm {tensor = "z"} : !tile.ref<gm, f32>
// TILE:         tile.kernel "k5_max_pool"
// TILE:         tile.kernel "k6_transdata" attributes {kind = "transdata", source = "graph.transdata at loc(\22pool_transdata_nchw\22)"
// TILE:           tile.gm {tensor = "y"} : !tile.ref<gm, f32>
func.func @conv_add_pool(%x: tensor<1x16x16x16xf32> {ge.name = "x"}) -> (tensor<1x16x8x8xf32> {ge.name = "y"}, tensor<1x16x16x16xf32> {ge.name = "z"}) {
  %w = graph.fill 0.5 : tensor<16x16x3x3xf32>
  %a = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, activation = "relu"} : tensor<1x16x16x16xf32>, tensor<16x16x3x3xf32> -> tensor<1x16x16x16xf32> loc("conv1")
  %b = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<1x16x16x16xf32>, tensor<16x16x3x3xf32> -> tensor<1x16x16x16xf32> loc("conv2")
  %s = graph.add %a, %b : (tensor<1x16x16x16xf32>, tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32> loc("add")
  %p = graph.max_pool %s {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x16x16x16xf32>) -> tensor<1x16x8x8xf32> loc("pool")
  func.return %p, %s : tensor<1x16x8x8xf32>, tensor<1x16x16x16xf32>
}

// -----

// A [1,C,1,1] map in NC1HWC0 is its C values in a row: flattening it is a
// view (ND), and returning it needs no transdata (folded). Gemm and softmax
// work on ND. One transdata in all.

// CHECK-LABEL: func.func @gap_flatten_gemm
// CHECK-NEXT:    %[[IN:.*]] = graph.transdata %x {ge.format = "NC1HWC0", src_format = "NCHW", dst_format = "NC1HWC0"}
// CHECK-NEXT:    %w = graph.fill 0.25 {ge.format = "FRACTAL_Z"}
// CHECK-NEXT:    %g = graph.global_avg_pool %[[IN]] {ge.format = "NC1HWC0"}
// CHECK-NEXT:    %f = graph.flatten %g {ge.format = "ND"
// CHECK-NEXT:    %m = graph.gemm %f, %w {ge.format = "ND"}
// CHECK-NEXT:    %s = graph.softmax %m {ge.format = "ND"
// CHECK-NEXT:    func.return %s, %g

// TILE-LABEL: tile.program "gap_flatten_gemm" attributes {{{.*}}ge.transdata = 1 : i64}
// TILE-DAG:     tile.tensor {name = "pooled", kind = "output", {{.*}}type = tensor<1x16x1x1xf32>
// TILE-DAG:     tile.tensor {name = "prob", kind = "output", {{.*}}type = tensor<1x10xf32>
// TILE:         tile.kernel "k0_transdata"
// TILE-NOT:     tile.kernel "{{.*}}transdata"
// TILE:         tile.kernel "k3_softmax"
func.func @gap_flatten_gemm(%x: tensor<1x16x2x16xf32> {ge.name = "x"}) -> (tensor<1x10xf32> {ge.name = "prob"}, tensor<1x16x1x1xf32> {ge.name = "pooled"}) {
  %w = graph.fill 0.25 : tensor<16x10xf32>
  %g = graph.global_avg_pool %x : (tensor<1x16x2x16xf32>) -> tensor<1x16x1x1xf32> loc("gap")
  %f = graph.flatten %g {axis = 1 : i64} : (tensor<1x16x1x1xf32>) -> tensor<1x16xf32> loc("flat")
  %m = graph.gemm %f, %w : (tensor<1x16xf32>, tensor<16x10xf32>) -> tensor<1x10xf32> loc("fc")
  %s = graph.softmax %m {axis = 1 : i64} : (tensor<1x10xf32>) -> tensor<1x10xf32> loc("softmax")
  func.return %s, %g : tensor<1x10xf32>, tensor<1x16x1x1xf32>
}

// -----

// Flattening a larger map reads it in place (FLAT_NC1HWC0): the gemm takes
// that order by permuting its weight rows at compile time. The same view
// returned as a graph output must be row-major: a transdata FLAT_NC1HWC0 ->
// ND (lowered as NC1HWC0 -> NCHW of the map it views).

// CHECK-LABEL: func.func @flatten_map
// CHECK:         %c = graph.conv %{{.*}}, %w {ge.format = "NC1HWC0"}
// CHECK-NEXT:    %f = graph.flatten %c {ge.format = "FLAT_NC1HWC0"
// CHECK-NEXT:    %[[F:.*]] = graph.transdata %f {ge.format = "ND", src_format = "FLAT_NC1HWC0", dst_format = "ND"}
// CHECK-NEXT:    %m = graph.gemm %f, %v {ge.format = "ND"}
// CHECK-NEXT:    func.return %m, %[[F]]

// TILE-LABEL: tile.program "flatten_map" attributes {{{.*}}ge.transdata = 2 : i64}
// TILE:         tile.kernel "k2_transdata" attributes {kind = "transdata", source = "graph.transdata at loc(\22flat_transdata_nd\22)"
// TILE:           tile.gm {tensor = "features"} : !tile.ref<gm, f32>
// TILE:         tile.kernel "k3_gemm"
func.func @flatten_map(%x: tensor<1x16x2x16xf32> {ge.name = "x"}) -> (tensor<1x10xf32> {ge.name = "y"}, tensor<1x512xf32> {ge.name = "features"}) {
  %w = graph.fill 0.5 : tensor<16x16x1x1xf32>
  %v = graph.fill 0.01 : tensor<512x10xf32>
  %c = graph.conv %x, %w : tensor<1x16x2x16xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x2x16xf32> loc("conv")
  %f = graph.flatten %c {axis = 1 : i64} : (tensor<1x16x2x16xf32>) -> tensor<1x512xf32> loc("flat")
  %m = graph.gemm %f, %v : (tensor<1x512xf32>, tensor<512x10xf32>) -> tensor<1x10xf32> loc("fc")
  func.return %m, %f : tensor<1x10xf32>, tensor<1x512xf32>
}

// -----

// A transdata already in the input: conv2 wants NC1HWC0 back, and the
// inserted NCHW -> NC1HWC0 cancels against it (conv2 reads %a); the
// returned NCHW copy stays.

// CHECK-LABEL: func.func @inverse_pair
// CHECK:         %a = graph.conv %{{.*}}, %w {ge.format = "NC1HWC0"}
// CHECK-NEXT:    %t = graph.transdata %a {ge.format = "NCHW", src_format = "NC1HWC0", dst_format = "NCHW"}
// CHECK-NEXT:    %b = graph.conv %a, %w {ge.format = "NC1HWC0"}
// CHECK-NEXT:    %[[Z:.*]] = graph.transdata %b {ge.format = "NCHW", src_format = "NC1HWC0", dst_format = "NCHW"}
// CHECK-NEXT:    func.return %t, %[[Z]]

// TILE-LABEL: tile.program "inverse_pair" attributes {{{.*}}ge.transdata = 3 : i64}
func.func @inverse_pair(%x: tensor<1x16x2x16xf32> {ge.name = "x"}) -> (tensor<1x16x2x16xf32> {ge.name = "y"}, tensor<1x16x2x16xf32> {ge.name = "z"}) {
  %w = graph.fill 0.5 : tensor<16x16x1x1xf32>
  %a = graph.conv %x, %w : tensor<1x16x2x16xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x2x16xf32> loc("conv1")
  %t = graph.transdata %a {src_format = "NC1HWC0", dst_format = "NCHW"} : (tensor<1x16x2x16xf32>) -> tensor<1x16x2x16xf32> loc("to_nchw")
  %b = graph.conv %t, %w : tensor<1x16x2x16xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x2x16xf32> loc("conv2")
  func.return %t, %b : tensor<1x16x2x16xf32>, tensor<1x16x2x16xf32>
}
