// Op slicing under a device memory limit (lowering/graph_to_tile/slicing.py):
// convert-graph-to-tile{device_memory_limit} splits the output of a conv
// whose own operands exceed the limit into channel pieces, each its own GM
// tensor written by its own kernel (the conv on the piece's output channels),
// when every reader is a dense conv; a conv reading the pieces copies each
// into its C1 slices of L1. Here "expand" reads 32 KB and writes 64 KB
// (fp32): two pieces of 32 channels bring it to 64 KB, under 85,000 bytes.
// Without a limit (second RUN) it stays one map and one kernel.
// RUN: ge-opt %s --split-input-file -p 'graph-plan-memory,convert-graph-to-tile{precision_mode=must_keep_origin_dtype device_memory_limit=85000},tile-select-tiling,tile-distribute,tile-expand-structured' | filecheck %s
// RUN: ge-opt %s --split-input-file -p 'graph-plan-memory,convert-graph-to-tile{precision_mode=must_keep_origin_dtype},tile-select-tiling,tile-distribute,tile-expand-structured' | filecheck %s --check-prefix=WHOLE

// CHECK-LABEL: tile.program "sliced"
// CHECK-DAG:   tile.tensor {name = "[[W0:a_c0_w]]", kind = "constant", {{.*}}type = tensor<1x4x1x2x16x8xf32>
// CHECK-DAG:   tile.tensor {name = "[[W1:a_c32_w]]", kind = "constant", {{.*}}type = tensor<1x4x1x2x16x8xf32>
// CHECK-DAG:   tile.tensor {ge.stored_bytes = 32768 : i64, name = "[[P0:a_c0]]", kind = "internal", {{.*}}type = tensor<1x4x16x16x8xf32>, layout = "NC1HWC0"}
// CHECK-DAG:   tile.tensor {ge.stored_bytes = 32768 : i64, name = "[[P1:a_c32]]", kind = "internal", {{.*}}type = tensor<1x4x16x16x8xf32>, layout = "NC1HWC0"}
// CHECK:       tile.kernel "k1_conv" attributes {kind = "conv", source = "graph.conv at loc(\22expand\22)"
// CHECK:         tile.gm {tensor = "[[W0]]"}
// CHECK-NEXT:    tile.gm {tensor = "[[P0]]"}
// CHECK:       tile.kernel "k2_conv" attributes {kind = "conv", source = "graph.conv at loc(\22expand\22)"
// CHECK:         tile.gm {tensor = "[[W1]]"}
// CHECK-NEXT:    tile.gm {tensor = "[[P1]]"}
// CHECK:       tile.kernel "k3_conv" attributes {kind = "conv", source = "graph.conv at loc(\22reduce\22)"
// CHECK:         %[[L1:.*]] = tile.alloc {shape = array<i64: 5120>, layout = "NC1HWC0", buffers = 1 : i64} : !tile.ref<l1, f32>
// CHECK:         %[[G0:.*]] = tile.gm {tensor = "[[P0]]"}
// CHECK-NEXT:    %[[G1:.*]] = tile.gm {tensor = "[[P1]]"}
// CHECK:         tile.at %[[L1]] + %{{.*}} {offset = 0 : i64}
// CHECK-NEXT:    tile.at %[[G0]]
// CHECK-NEXT:    tile.copy {{.*}} {shape = array<i64: 4, 3, 128>, dst_strides = array<i64: 640, 128, 1>, src_strides = array<i64: 2048, 128, 1>}
// CHECK:         tile.at %[[L1]] + %{{.*}} {offset = 2560 : i64}
// CHECK-NEXT:    tile.at %[[G1]]
// CHECK-NEXT:    tile.copy {{.*}} {shape = array<i64: 4, 3, 128>, dst_strides = array<i64: 640, 128, 1>, src_strides = array<i64: 2048, 128, 1>}
// CHECK:       tile.kernel "k4_transdata"

// WHOLE-LABEL: tile.program "sliced"
// WHOLE-NOT:   a_c0
// WHOLE:       tile.tensor {ge.stored_bytes = 65536 : i64, name = "conv", kind = "internal", {{.*}}type = tensor<1x8x16x16x8xf32>
// WHOLE:       tile.kernel "k1_conv"
// WHOLE:       tile.kernel "k2_conv" attributes {kind = "conv", source = "graph.conv at loc(\22reduce\22)"
func.func @sliced(%x: tensor<1x32x16x16xf32> {ge.name = "x"}) -> (tensor<1x16x16x16xf32> {ge.name = "y"}) {
  %w = graph.fill 0.05 : tensor<64x32x1x1xf32>
  %v = graph.fill 0.01 : tensor<16x64x3x3xf32>
  %a = graph.conv %x, %w {activation = "relu"} : tensor<1x32x16x16xf32>, tensor<64x32x1x1xf32> -> tensor<1x64x16x16xf32> loc("expand")
  %y = graph.conv %a, %v {pads = array<i64: 1, 1, 1, 1>} : tensor<1x64x16x16xf32>, tensor<16x64x3x3xf32> -> tensor<1x16x16x16xf32> loc("reduce")
  func.return %y : tensor<1x16x16x16xf32>
}

// -----

// A padded max pool reads the sliced map: each piece gets the zero halo the
// pool needs, and the pool runs as one kernel per piece, writing its
// channels (C1 slices 0-3, then 4-7) of the one output map.
// CHECK-LABEL: tile.program "sliced_pool"
// CHECK-DAG:   tile.tensor {{{.*}}ge.zero_halo, ge.halo_geometry = "4,18,18,1,1,1,1", name = "[[P0:a_c0]]", kind = "internal", {{.*}}type = tensor<1x4x18x18x8xf32>
// CHECK-DAG:   tile.tensor {{{.*}}ge.zero_halo, ge.halo_geometry = "4,18,18,1,1,1,1", name = "[[P1:a_c32]]", kind = "internal", {{.*}}type = tensor<1x4x18x18x8xf32>
// CHECK-DAG:   tile.tensor {ge.stored_bytes = 16384 : i64, name = "[[OUT:pool]]", kind = "internal", {{.*}}type = tensor<1x8x8x8x8xf32>
// CHECK:       tile.kernel "k3_max_pool"
// CHECK:         tile.gm {tensor = "[[P0]]"}
// CHECK-NEXT:    %[[O0:.*]] = tile.gm {tensor = "[[OUT]]"}
// CHECK:         tile.at %[[O0]] + %{{.*}} {offset = 0 : i64}
// CHECK:       tile.kernel "k4_max_pool"
// CHECK:         tile.gm {tensor = "[[P1]]"}
// CHECK-NEXT:    %[[O1:.*]] = tile.gm {tensor = "[[OUT]]"}
// CHECK:         tile.at %[[O1]] + %{{.*}} {offset = 2048 : i64}
// WHOLE-LABEL: tile.program "sliced_pool"
// WHOLE:       tile.kernel "k2_max_pool"
// WHOLE-NOT:   tile.kernel "k{{[0-9]+}}_max_pool"
func.func @sliced_pool(%x: tensor<1x32x16x16xf32> {ge.name = "x"}) -> (tensor<1x64x8x8xf32> {ge.name = "y"}) {
  %w = graph.fill 0.05 : tensor<64x32x1x1xf32>
  %a = graph.conv %x, %w {activation = "relu"} : tensor<1x32x16x16xf32>, tensor<64x32x1x1xf32> -> tensor<1x64x16x16xf32> loc("expand")
  %y = graph.max_pool %a {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x16x16xf32>) -> tensor<1x64x8x8xf32> loc("pool")
  func.return %y : tensor<1x64x8x8xf32>
}
