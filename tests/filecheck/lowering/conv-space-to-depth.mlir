// conv-space-to-depth: a strided conv on few channels reads its input
// space-to-depth when that shrinks its K in whole cube blocks
// (lowering/space_to_depth.py); the space_to_depth writes the conv's map.
// RUN: ge-opt %s --split-input-file -p conv-space-to-depth --mlir-elide-elementsattrs-if-larger=4 | filecheck %s
// RUN: ge-opt %s --split-input-file -p 'conv-space-to-depth{precision_mode=must_keep_origin_dtype}' --mlir-elide-elementsattrs-if-larger=4 | filecheck %s --check-prefix=FP32
// RUN: ge-opt %s --split-input-file -p 'conv-space-to-depth,graph-partition,assign-layouts' --mlir-elide-elementsattrs-if-larger=4 | filecheck %s --check-prefix=LAYOUT

// ResNet's stem: 7x7/2 on 3 channels, pads 3 -> 2x2 cells of 3 channels
// (12), 4x4 taps, the kernel shifted by one zero tap: pads 2 before, 1
// after. The old weight goes.
// CHECK-LABEL: func.func @stem
// CHECK-NOT:   tensor<8x3x7x7xf32>
// CHECK:       %[[W:.*]] = graph.constant dense_resource<__elided__> : tensor<8x12x4x4xf32>
// CHECK:       %[[S:.*]] = graph.space_to_depth %x {blocksize = 2 : i64} : (tensor<1x3x128x128xf32>) -> tensor<1x12x64x64xf32>
// CHECK:       graph.conv %[[S]], %[[W]] bias(%b : tensor<8xf32>) {activation = "relu", pads = array<i64: 2, 2, 1, 1>} : tensor<1x12x64x64xf32>, tensor<8x12x4x4xf32> -> tensor<1x8x64x64xf32>
// fp32 (blocks of 8): K 49 x 8 = 392 -> 16 x 16 = 256, rewritten too.
// FP32-LABEL: func.func @stem
// FP32:       graph.space_to_depth
// The map is written by the space_to_depth kernel: no transdata before the conv.
// LAYOUT-LABEL: func.func @stem
// LAYOUT:       graph.space_to_depth %x {ge.format = "NC1HWC0", blocksize = 2 : i64}
// LAYOUT-NEXT:  graph.conv
// LAYOUT-NOT:   ge.engine = "AI_CPU"
func.func @stem(%x: tensor<1x3x128x128xf32> {ge.name = "x"}) -> (tensor<1x8x64x64xf32> {ge.name = "y"}) {
  %w = graph.fill 0.05 : tensor<8x3x7x7xf32>
  %b = graph.fill 0.5 : tensor<8xf32>
  %y = graph.conv %x, %w bias(%b : tensor<8xf32>) {strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>, activation = "relu"} : tensor<1x3x128x128xf32>, tensor<8x3x7x7xf32> -> tensor<1x8x64x64xf32> loc("stem")
  func.return %y : tensor<1x8x64x64xf32>
}

// -----

// Stride 1: nothing to fold.
// CHECK-LABEL: func.func @stride_one
// CHECK-NOT:   graph.space_to_depth
func.func @stride_one(%x: tensor<1x3x128x128xf32> {ge.name = "x"}) -> (tensor<1x8x128x128xf32> {ge.name = "y"}) {
  %w = graph.fill 0.05 : tensor<8x3x3x3xf32>
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<1x3x128x128xf32>, tensor<8x3x3x3xf32> -> tensor<1x8x128x128xf32>
  func.return %y : tensor<1x8x128x128xf32>
}

// -----

// 16 channels fill a block already: K 9 x 16 = 144 would become 4 x 64.
// CHECK-LABEL: func.func @full_blocks
// CHECK-NOT:   graph.space_to_depth
func.func @full_blocks(%x: tensor<1x16x128x128xf32> {ge.name = "x"}) -> (tensor<1x8x64x64xf32> {ge.name = "y"}) {
  %w = graph.fill 0.05 : tensor<8x16x3x3xf32>
  %y = graph.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : tensor<1x16x128x128xf32>, tensor<8x16x3x3xf32> -> tensor<1x8x64x64xf32>
  func.return %y : tensor<1x8x64x64xf32>
}

// -----

// AlexNet's 11x11/4 stem: 4x4 cells of 3 channels, 48 channels (three
// blocks), 3x3 taps of cells: K 121 x 16 = 1936 -> 9 x 48 = 432.
// CHECK-LABEL: func.func @stride_four
// CHECK:       graph.space_to_depth %x {blocksize = 4 : i64} : (tensor<1x3x128x128xf32>) -> tensor<1x48x32x32xf32>
// CHECK:       graph.conv {{.*}} : tensor<1x48x32x32xf32>, tensor<8x48x3x3xf32> -> tensor<1x8x30x30xf32>
func.func @stride_four(%x: tensor<1x3x128x128xf32> {ge.name = "x"}) -> (tensor<1x8x30x30xf32> {ge.name = "y"}) {
  %w = graph.fill 0.05 : tensor<8x3x11x11xf32>
  %y = graph.conv %x, %w {strides = array<i64: 4, 4>} : tensor<1x3x128x128xf32>, tensor<8x3x11x11xf32> -> tensor<1x8x30x30xf32>
  func.return %y : tensor<1x8x30x30xf32>
}

// -----

// Cells of 5x5 pixels are more than the space-to-depth kernel takes (16).
// CHECK-LABEL: func.func @stride_five
// CHECK-NOT:   graph.space_to_depth
func.func @stride_five(%x: tensor<1x3x130x130xf32> {ge.name = "x"}) -> (tensor<1x8x24x24xf32> {ge.name = "y"}) {
  %w = graph.fill 0.05 : tensor<8x3x11x11xf32>
  %y = graph.conv %x, %w {strides = array<i64: 5, 5>} : tensor<1x3x130x130xf32>, tensor<8x3x11x11xf32> -> tensor<1x8x24x24xf32>
  func.return %y : tensor<1x8x24x24xf32>
}

// -----

// A 64x64 image: below MIN_PIXELS, the space-to-depth kernel would cost
// more than the conv saves.
// CHECK-LABEL: func.func @small_image
// CHECK-NOT:   graph.space_to_depth
func.func @small_image(%x: tensor<1x3x64x64xf32> {ge.name = "x"}) -> (tensor<1x8x32x32xf32> {ge.name = "y"}) {
  %w = graph.fill 0.05 : tensor<8x3x7x7xf32>
  %y = graph.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>} : tensor<1x3x64x64xf32>, tensor<8x3x7x7xf32> -> tensor<1x8x32x32xf32>
  func.return %y : tensor<1x8x32x32xf32>
}
