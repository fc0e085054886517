// A 4-D map's transposes to its NHWC rows and back (ConvNeXt, SegFormer:
// around a layer_norm over channels) go to the CNN patterns when that saves
// a transdata (legality.map_transpose): to rows of a map a CNN kernel
// writes, to a map every reader reads as one. They read, resp. write, the
// map in NC1HWC0 and are box copies through UB
// (lowering/graph_to_tile/map_transpose.py); otherwise they stay structured.
// RUN: ge-opt %s --split-input-file -p 'graph-partition{precision_mode=must_keep_origin_dtype},assign-layouts' | filecheck %s
// RUN: ge-opt %s --split-input-file -p 'graph-partition{precision_mode=must_keep_origin_dtype},assign-layouts,convert-graph-to-tile{precision_mode=must_keep_origin_dtype}' | filecheck %s --check-prefix=TILE

// relu -> rows -> layer_norm -> map -> padded conv: no transdata between
// relu and conv (24 fp32 channels: 3 C0 slices; no halo, the conv pads on
// the fly, so the 30 pixels are one run: chunks of 16 and 14 over 2 cores).

// CHECK-LABEL: func.func @map_rows_map
// CHECK:         %r = graph.relu %{{.*}} {ge.format = "NC1HWC0"}
// CHECK-NEXT:    %t = graph.transpose %r {ge.format = "NCHW", perm = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT:    %n = graph.layer_norm %t, %g bias(%b : tensor<24xf32>) {ge.kernel = "vector", ge.format = "NCHW"
// CHECK-NEXT:    %m = graph.transpose %n {ge.format = "NC1HWC0", perm = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:    %y = graph.conv %m, %w {ge.format = "NC1HWC0"

// TILE-LABEL: tile.program "map_rows_map" attributes {{{.*}}ge.transdata = 2 : i64}
// TILE:         tile.kernel "{{.*}}_transpose" attributes {kind = "transpose", {{.*}}in_formats = "NC1HWC0", out_shapes = "1,5,6,24", out_formats = "NCHW"
// TILE:           tile.copy %[[UB:.*]], %{{.*}} {shape = array<i64: 3, 16, 8>, dst_strides = array<i64: 8, 24, 1>, src_strides = array<i64: 240, 8, 1>}
// TILE-NEXT:      tile.copy %{{.*}}, %[[UB]] {shape = array<i64: 16, 24>, dst_strides = array<i64: 24, 1>, src_strides = array<i64: 24, 1>}
// TILE:         tile.kernel "{{.*}}_transpose" attributes {kind = "transpose", {{.*}}in_formats = "NCHW", out_shapes = "1,24,5,6", out_formats = "NC1HWC0"
// TILE:           tile.copy %[[UB2:.*]], %{{.*}} {shape = array<i64: 16, 24>, dst_strides = array<i64: 24, 1>, src_strides = array<i64: 24, 1>}
// TILE-NEXT:      tile.copy %{{.*}}, %[[UB2]] {shape = array<i64: 3, 16, 8>, dst_strides = array<i64: 240, 8, 1>, src_strides = array<i64: 8, 24, 1>}
// TILE:           tile.copy %[[UB2]], %{{.*}} {shape = array<i64: 14, 24>,
// TILE-NEXT:      tile.copy %{{.*}}, %[[UB2]] {shape = array<i64: 3, 14, 8>,
// TILE:         tile.kernel "{{.*}}_conv"
func.func @map_rows_map(%x: tensor<1x24x5x6xf32> {ge.name = "x"}) -> (tensor<1x8x5x6xf32> {ge.name = "y"}, tensor<1x5x6x24xf32> {ge.name = "rows"}) {
  %w = graph.fill 0.05 : tensor<8x24x3x3xf32>
  %g = graph.constant dense<[1.0, -0.5, 2.0, 0.25, -1.5, 0.75, 1.25, -2.0, 0.5, 1.5, -0.25, 1.0, 2.5, -0.75, 0.125, 1.75, -1.25, 0.625, 2.25, -0.375, 0.875, -1.75, 1.125, 0.3]> : tensor<24xf32>
  %b = graph.fill 0.1 : tensor<24xf32>
  %r = graph.relu %x : (tensor<1x24x5x6xf32>) -> tensor<1x24x5x6xf32> loc("relu")
  %t = graph.transpose %r {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x24x5x6xf32>) -> tensor<1x5x6x24xf32> loc("to_rows")
  %n = graph.layer_norm %t, %g bias(%b : tensor<24xf32>) {axis = -1 : i64, epsilon = 1.0e-05 : f32} : tensor<1x5x6x24xf32>, tensor<24xf32> -> tensor<1x5x6x24xf32> loc("norm")
  %m = graph.transpose %n {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x5x6x24xf32>) -> tensor<1x24x5x6xf32> loc("to_map")
  %y = graph.conv %m, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<1x24x5x6xf32>, tensor<8x24x3x3xf32> -> tensor<1x8x5x6xf32> loc("conv")
  func.return %y, %t : tensor<1x8x5x6xf32>, tensor<1x5x6x24xf32>
}

// -----

// Not a map's: the first transpose reads a vector kernel's rows, the second
// is read by a layer_norm (rows again): both stay structured (cube).

// CHECK-LABEL: func.func @rows_only
// CHECK:         graph.transpose %{{.*}} {ge.kernel = "cube", ge.format = "NCHW", perm = array<i64: 0, 2, 3, 1>}
// CHECK:         graph.transpose %{{.*}} {ge.kernel = "cube", ge.format = "NCHW", perm = array<i64: 0, 3, 1, 2>}
// CHECK-NOT:     graph.transdata
// TILE-LABEL: tile.program "rows_only"
// TILE-NOT:     NC1HWC0
func.func @rows_only(%x: tensor<1x16x4x8xf32> {ge.name = "x"}) -> (tensor<1x16x4x8xf32> {ge.name = "y"}) {
  %g = graph.fill 1.0 : tensor<16xf32>
  %s = graph.sigmoid %x : (tensor<1x16x4x8xf32>) -> tensor<1x16x4x8xf32> loc("sig")
  %t = graph.transpose %s {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x16x4x8xf32>) -> tensor<1x4x8x16xf32> loc("to_rows")
  %n = graph.layer_norm %t, %g {axis = -1 : i64, epsilon = 1.0e-05 : f32} : tensor<1x4x8x16xf32>, tensor<16xf32> -> tensor<1x4x8x16xf32> loc("norm")
  %m = graph.transpose %n {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x8x16xf32>) -> tensor<1x16x4x8xf32> loc("to_map")
  %e = graph.exp %m : (tensor<1x16x4x8xf32>) -> tensor<1x16x4x8xf32> loc("exp")
  func.return %e : tensor<1x16x4x8xf32>
}
