// A 4-D map's transposes to its NHWC rows and back (ConvNeXt, SegFormer:
// around a layer_norm over channels; SegFormer's also on the [1, C, H*W]
// view) go to the CNN patterns when that saves a transdata
// (legality.map_transpose): to rows of a map a CNN kernel writes, to a map
// every reader reads as one (or views to rows again). They read, resp. write, the
// map in NC1HWC0: a tile.transdata "NC1HWC0" to "NHWC" or back
// (lowering/graph_to_tile/map_transpose.py), box copies through UB once
// expanded (tests/filecheck/tile/transdata.mlir); otherwise they stay structured.
// RUN: ge-opt %s --split-input-file -p 'graph-partition{precision_mode=must_keep_origin_dtype},assign-layouts' | filecheck %s
// RUN: ge-opt %s --split-input-file -p 'graph-partition{precision_mode=must_keep_origin_dtype},assign-layouts,convert-graph-to-tile{precision_mode=must_keep_origin_dtype}' | filecheck %s --check-prefix=TILE

// relu -> rows -> layer_norm -> map -> padded conv: no transdata between
// relu and conv (24 fp32 channels: 3 C0 slices; no halo, the conv pads on
// the fly).

// CHECK-LABEL: func.func @map_rows_map
// CHECK:         %r = graph.relu %{{.*}} {ge.format = "NC1HWC0"}
// CHECK-NEXT:    %t = graph.transpose %r {ge.format = "NCHW", perm = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT:    %n = graph.layer_norm %t, %g bias(%b : tensor<24xf32>) {ge.kernel = "vector", ge.format = "NCHW"
// CHECK-NEXT:    %m = graph.transpose %n {ge.format = "NC1HWC0", perm = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:    %y = graph.conv %m, %w {ge.format = "NC1HWC0"

// TILE-LABEL: tile.program "map_rows_map" attributes {{{.*}}ge.transdata = 2 : i64}
// TILE:         tile.kernel "{{.*}}_transpose" attributes {kind = "transpose", {{.*}}in_formats = "NC1HWC0", out_shapes = "1,5,6,24", out_formats = "NCHW"
// TILE:           tile.transdata "NC1HWC0" to "NHWC" %{{.*}}, %{{.*}} : !tile.ref<gm, f32>, !tile.ref<gm, f32> {map_view = #tile.map_view<shape = [1, 24, 5, 6], origin = 0, slice_stride = 240, padded_w = 6>}
// TILE:         tile.kernel "{{.*}}_transpose" attributes {kind = "transpose", {{.*}}in_formats = "NCHW", out_shapes = "1,24,5,6", out_formats = "NC1HWC0"
// TILE:           tile.transdata "NHWC" to "NC1HWC0" %{{.*}}, %{{.*}} : !tile.ref<gm, f32>, !tile.ref<gm, f32> {map_view = #tile.map_view<shape = [1, 24, 5, 6], origin = 0, slice_stride = 240, padded_w = 6>}
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

// -----

// SegFormer's block boundary: the map's [1, C, H*W] view to rows, rows to a
// [1, C, H*W] tensor that a view reads as the map (FLAT_NC1HWC0), rows viewed
// [1, H, W, C] to a map that an add reads and that, viewed [1, C, H*W] again,
// goes to rows: transdata only at the graph's input and 4-D output.

// CHECK-LABEL: func.func @segformer_block
// CHECK:         %t = graph.transpose %f {ge.format = "ND", perm = array<i64: 0, 2, 1>}
// CHECK:         %u = graph.transpose %n {ge.format = "FLAT_NC1HWC0", perm = array<i64: 0, 2, 1>}
// CHECK-NEXT:    %m = graph.reshape %u {ge.format = "NC1HWC0"
// CHECK:         %p = graph.transpose %h {ge.format = "NC1HWC0", perm = array<i64: 0, 3, 1, 2>}
// CHECK:         %o = graph.transpose %q {ge.format = "ND", perm = array<i64: 0, 2, 1>}

// TILE-LABEL: tile.program "segformer_block" attributes {{{.*}}ge.transdata = 2 : i64}
// TILE-COUNT-4: kind = "transpose"
func.func @segformer_block(%x: tensor<1x16x4x6xf32> {ge.name = "x"}) -> (tensor<1x16x4x6xf32> {ge.name = "y"}, tensor<1x24x16xf32> {ge.name = "rows"}) {
  %w = graph.fill 0.05 : tensor<16x16x3x3xf32>
  %g = graph.constant dense<[1.0, -0.5, 2.0, 0.25, -1.5, 0.75, 1.25, -2.0, 0.5, 1.5, -0.25, 1.0, 2.5, -0.75, 0.125, 1.75]> : tensor<16xf32>
  %b = graph.fill 0.1 : tensor<16xf32>
  %r = graph.relu %x : (tensor<1x16x4x6xf32>) -> tensor<1x16x4x6xf32> loc("relu")
  %f = graph.reshape %r {shape = array<i64: 1, 16, -1>} : (tensor<1x16x4x6xf32>) -> tensor<1x16x24xf32> loc("flat")
  %t = graph.transpose %f {perm = array<i64: 0, 2, 1>} : (tensor<1x16x24xf32>) -> tensor<1x24x16xf32> loc("to_rows")
  %n = graph.layer_norm %t, %g bias(%b : tensor<16xf32>) {axis = -1 : i64, epsilon = 1.0e-05 : f32} : tensor<1x24x16xf32>, tensor<16xf32> -> tensor<1x24x16xf32> loc("norm")
  %u = graph.transpose %n {perm = array<i64: 0, 2, 1>} : (tensor<1x24x16xf32>) -> tensor<1x16x24xf32> loc("to_flat_map")
  %m = graph.reshape %u {shape = array<i64: 1, 16, 4, 6>} : (tensor<1x16x24xf32>) -> tensor<1x16x4x6xf32> loc("map")
  %c = graph.conv %m, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<1x16x4x6xf32>, tensor<16x16x3x3xf32> -> tensor<1x16x4x6xf32> loc("conv")
  %h = graph.reshape %n {shape = array<i64: 1, 4, 6, 16>} : (tensor<1x24x16xf32>) -> tensor<1x4x6x16xf32> loc("nhwc")
  %p = graph.transpose %h {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x6x16xf32>) -> tensor<1x16x4x6xf32> loc("to_map")
  %s = graph.add %p, %c : (tensor<1x16x4x6xf32>, tensor<1x16x4x6xf32>) -> tensor<1x16x4x6xf32> loc("add")
  %q = graph.reshape %p {shape = array<i64: 1, 16, -1>} : (tensor<1x16x4x6xf32>) -> tensor<1x16x24xf32> loc("flat2")
  %o = graph.transpose %q {perm = array<i64: 0, 2, 1>} : (tensor<1x16x24xf32>) -> tensor<1x24x16xf32> loc("to_rows2")
  func.return %s, %o : tensor<1x16x4x6xf32>, tensor<1x24x16xf32>
}

