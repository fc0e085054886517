// graph-fuse, PadConv2dFusionPass: a zero pad of H/W before a conv becomes
// the conv's pads (TF "same" padding, HF MobileNetV2/EfficientNet); a remark
// for every candidate, applied or missed.
// RUN: ge-opt %s --split-input-file -p graph-fuse --verify-diagnostics | filecheck %s

// Asymmetric (bottom/right) pad, added to the conv's own pads.
func.func @same_pad(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32> {
  %w = graph.fill 0.5 : tensor<4x4x3x3xf32>
  %p = graph.pad %x {pads = array<i64: 0, 0, 0, 0, 0, 0, 1, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x9x9xf32> loc("pad")
  // expected-remark@+1 {{applied PadConv2dFusionPass at loc("conv"): absorbed [pad, conv]}}
  %c = graph.conv %p, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : tensor<1x4x9x9xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x4x4xf32> loc("conv")
  func.return %c : tensor<1x4x4x4xf32>
}

// CHECK-LABEL: func.func @same_pad
// CHECK-NEXT:    %[[W:.*]] = graph.fill 0.5
// CHECK-NEXT:    %[[C:.*]] = graph.conv %{{.*}}, %[[W]] {absorbed = ["pad", "conv"], strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    func.return %[[C]]

// -----

// An explicit zero value is a zero fill too; the conv had pads of its own.
func.func @zero_value(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x10x10xf32> {
  %w = graph.fill 0.5 : tensor<4x4x3x3xf32>
  %p = graph.pad %x {pads = array<i64: 0, 0, 1, 0, 0, 0, 1, 2>, value = 0.0 : f32} : (tensor<1x4x8x8xf32>) -> tensor<1x4x10x10xf32> loc("pad")
  // expected-remark@+1 {{applied PadConv2dFusionPass at loc("conv"): absorbed [pad, conv]}}
  %c = graph.conv %p, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<1x4x10x10xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x10x10xf32> loc("conv")
  func.return %c : tensor<1x4x10x10xf32>
}

// CHECK-LABEL: func.func @zero_value
// CHECK:         graph.conv %{{.*}} {absorbed = ["pad", "conv"], pads = array<i64: 2, 1, 2, 3>} : tensor<1x4x8x8xf32>

// -----

// Not a zero fill: reflect padding and a non-zero value stay pads.
func.func @not_zero(%x: tensor<1x4x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %w = graph.fill 0.5 : tensor<4x4x3x3xf32>
  %p = graph.pad %x {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, mode = "reflect"} : (tensor<1x4x8x8xf32>) -> tensor<1x4x10x10xf32> loc("reflect")
  // expected-remark@+1 {{missed PadConv2dFusionPass at loc("conv1"): unsupported attribute (pad mode reflect is not a zero fill)}}
  %c = graph.conv %p, %w : tensor<1x4x10x10xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x8x8xf32> loc("conv1")
  %q = graph.pad %x {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, value = 1.0 : f32} : (tensor<1x4x8x8xf32>) -> tensor<1x4x10x10xf32> loc("ones")
  // expected-remark@+1 {{missed PadConv2dFusionPass at loc("conv2"): unsupported attribute (pad value 1.0 is not zero)}}
  %d = graph.conv %q, %w : tensor<1x4x10x10xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x8x8xf32> loc("conv2")
  func.return %c, %d : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}

// CHECK-LABEL: func.func @not_zero
// CHECK:         graph.pad %{{.*}} mode = "reflect"
// CHECK:         graph.pad %{{.*}} value = 1.0

// -----

// A channel pad is not the conv's to absorb; a pad read by another op stays.
func.func @channel_and_shared(%x: tensor<1x4x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x10x10xf32>) {
  %w = graph.fill 0.5 : tensor<4x6x1x1xf32>
  %v = graph.fill 0.5 : tensor<4x4x3x3xf32>
  %p = graph.pad %x {pads = array<i64: 0, 1, 0, 0, 0, 1, 0, 0>} : (tensor<1x4x8x8xf32>) -> tensor<1x6x8x8xf32> loc("chan")
  // expected-remark@+1 {{missed PadConv2dFusionPass at loc("conv1"): unsupported attribute (the pad grows the batch or channel dims)}}
  %c = graph.conv %p, %w : tensor<1x6x8x8xf32>, tensor<4x6x1x1xf32> -> tensor<1x4x8x8xf32> loc("conv1")
  %q = graph.pad %x {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x10x10xf32> loc("shared")
  // expected-remark@+1 {{missed PadConv2dFusionPass at loc("conv2"): intermediate has other users (graph.pad at loc("shared") is also used by func.return)}}
  %d = graph.conv %q, %v : tensor<1x4x10x10xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x8x8xf32> loc("conv2")
  func.return %c, %q : tensor<1x4x8x8xf32>, tensor<1x4x10x10xf32>
}

// CHECK-LABEL: func.func @channel_and_shared
// CHECK:         graph.pad %{{.*}} {pads = array<i64: 0, 1, 0, 0, 0, 1, 0, 0>}
// CHECK:         graph.pad %{{.*}} {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>}
