// 4-D ops whose operands are all rows a structured kernel writes stay with
// the structured kernels (legality._written_as_rows): as map kernels they
// would need a transdata into NC1HWC0 for each operand and one back.
// RUN: ge-opt %s --split-input-file -p 'graph-partition{precision_mode=must_keep_origin_dtype},assign-layouts' | filecheck %s
// RUN: ge-opt %s --split-input-file -p 'graph-partition{precision_mode=must_keep_origin_dtype},assign-layouts,convert-graph-to-tile{precision_mode=must_keep_origin_dtype}' | filecheck %s --check-prefix=TILE

// A 4-D elementwise op whose operands are all rows a structured kernel
// writes (attention's heads) is a vector kernel, not a map kernel between
// two transdata.

// CHECK-LABEL: func.func @rows_elementwise
// CHECK:         graph.mul %{{.*}} {ge.kernel = "vector", ge.format = "NCHW"}
// CHECK-NOT:     graph.transdata
// TILE-LABEL: tile.program "rows_elementwise" attributes {{{.*}}ge.transdata = 0 : i64}
func.func @rows_elementwise(%x: tensor<1x2x8x16xf32> {ge.name = "x"}) -> (tensor<1x2x8x16xf32> {ge.name = "y"}) {
  %k = graph.constant dense<0.5> : tensor<f32>
  %e = graph.exp %x : (tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> loc("exp")
  %y = graph.mul %e, %k : (tensor<1x2x8x16xf32>, tensor<f32>) -> tensor<1x2x8x16xf32> loc("scale")
  func.return %y : tensor<1x2x8x16xf32>
}

// -----

// Swin's cyclic shift (torch.roll) of [1, H, W, C] rows: slices and a
// concat along axis 1 -- a vector copy kernel of rows, not a channel concat
// of maps (nor its in-place planning).

// CHECK-LABEL: func.func @rows_concat
// CHECK:         graph.concat %a, %b {ge.kernel = "vector", ge.format = "NCHW", axis = 1 : i64}
// CHECK-NOT:     graph.transdata
// TILE-LABEL: tile.program "rows_concat" attributes {{{.*}}ge.transdata = 0 : i64}
// TILE:         tile.kernel "{{.*}}" attributes {kind = "copy", source = "graph.concat at loc(\22cat\22)"
func.func @rows_concat(%x: tensor<1x16x8x16xf32> {ge.name = "x"}) -> (tensor<1x16x8x16xf32> {ge.name = "y"}) {
  %e = graph.exp %x : (tensor<1x16x8x16xf32>) -> tensor<1x16x8x16xf32> loc("exp")
  %a = graph.slice %e {starts = array<i64: 2>, ends = array<i64: 16>, axes = array<i64: 1>} : (tensor<1x16x8x16xf32>) -> tensor<1x14x8x16xf32> loc("a")
  %b = graph.slice %e {starts = array<i64: 0>, ends = array<i64: 2>, axes = array<i64: 1>} : (tensor<1x16x8x16xf32>) -> tensor<1x2x8x16xf32> loc("b")
  %c = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x14x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x16x8x16xf32> loc("cat")
  func.return %c : tensor<1x16x8x16xf32>
}
