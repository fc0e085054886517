// RUN: ge-opt %s -p 'convert-graph-to-tile{precision_mode=must_keep_origin_dtype}' | filecheck %s
// RUN: ge-opt %s -p 'convert-graph-to-tile{precision_mode=must_keep_origin_dtype},tile-select-tiling,tile-distribute,tile-expand-structured' | filecheck %s --check-prefix=EXPAND
// RUN: ge-opt %s -p 'convert-graph-to-tile{precision_mode=must_keep_origin_dtype},ge-tile-opt,convert-tile-to-npu,npu-insert-sync' | filecheck %s --check-prefix=NPU

// A pool + relu: NCHW input -> NC1HWC0 transdata (a tile.transdata, which
// the tile passes expand into identity products on the cube), a max-pool
// kernel (a tile.pool, which the tile passes tile into (C1 slice, band)
// tiles with ping-pong UB buffers), an elementwise kernel, and the
// NC1HWC0 -> NCHW transdata at the output.

builtin.module {
  func.func @main(%0: tensor<1x16x16x16xf32> {ge.name = "x"}) -> (tensor<1x16x8x8xf32> {ge.name = "y"}) {
    %1 = graph.max_pool %0 {strides = array<i64: 2, 2>, kernel_shape = array<i64: 2, 2>} : (tensor<1x16x16x16xf32>) -> tensor<1x16x8x8xf32>
    %2 = graph.relu %1 : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
    func.return %2 : tensor<1x16x8x8xf32>
  }
}

// CHECK:      tile.program "main"
// CHECK-DAG:  tile.tensor {name = "x", kind = "input", {{.*}}type = tensor<1x16x16x16xf32>, layout = "ND"}
// CHECK-DAG:  tile.tensor {name = "input_5hd", kind = "internal", {{.*}}type = tensor<1x2x16x16x8xf32>, layout = "NC1HWC0"}
// CHECK-DAG:  tile.tensor {name = "y", kind = "output", {{.*}}type = tensor<1x16x8x8xf32>, layout = "ND"}
// CHECK:      tile.kernel "k0_transdata"
// CHECK:        tile.transdata "NCHW" to "NC1HWC0" %{{.*}}, %{{.*}} : !tile.ref<gm, f32>, !tile.ref<gm, f32> {map_view = #tile.map_view<shape = [1, 16, 16, 16], origin = 0, slice_stride = 2048, padded_w = 16>}
// CHECK:      tile.kernel "k1_max_pool"
// CHECK:        %[[X:.*]] = tile.gm {tensor = "input_5hd"} : !tile.ref<gm, f32>
// CHECK:        %[[P:.*]] = tile.gm {tensor = "pool"} : !tile.ref<gm, f32>
// CHECK:        tile.pool "max" %[[X]], %[[P]] : !tile.ref<gm, f32>, !tile.ref<gm, f32> {input_view = #tile.map_view<shape = [1, 16, 16, 16], {{.*}}>, output_view = #tile.map_view<shape = [1, 16, 8, 8], {{.*}}>, kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>}
// CHECK:      tile.kernel "k2_elementwise"
// CHECK:        tile.elementwise ins(%{{.*}} : !tile.ref<gm, f32>) outs(%{{.*}} : !tile.ref<gm, f32>) attributes {input_views = [#tile.map_view<shape = [1, 16, 8, 8], {{.*}}>], output_views = [#tile.map_view<shape = [1, 16, 8, 8], {{.*}}>]} {
// CHECK-NEXT:   ^{{.*}}(%[[A:.*]]: f32):
// CHECK-NEXT:     %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %[[R:.*]] = arith.maximumf %[[A]], %[[Z]] : f32
// CHECK-NEXT:     tile.yield %[[R]] : f32
// CHECK:      tile.kernel "k3_transdata"
// CHECK:        tile.transdata "NC1HWC0" to "ND" %{{.*}}, %{{.*}} : !tile.ref<gm, f32>, !tile.ref<gm, f32> {map_view = #tile.map_view<shape = [1, 16, 8, 8], {{.*}}>}

// EXPAND:      tile.kernel "k1_max_pool" attributes {{{.*}}tiling = #tile.pool_tiling<band_rows = {{[0-9]+}}, slices = 1, cores = {{[0-9]+}}, cycles = {{[0-9]+}}>
// EXPAND:        tile.alloc {{.*}}layout = "NC1HWC0", buffers = 2 : i64} : !tile.ref<ub, f32>
// EXPAND:        scf.for
// EXPAND:          tile.copy
// EXPAND:          tile.vec "max"
// EXPAND:          tile.copy
// EXPAND:        {tile.pipeline = "ping-pong"}
// EXPAND-NOT:    tile.pool
// EXPAND:      tile.kernel "k2_elementwise" attributes {{{.*}}tiling = #tile.elementwise_tiling<band_rows = {{[0-9]+}}, cores = {{[0-9]+}}, cycles = {{[0-9]+}}>
// EXPAND:        scf.for
// EXPAND:          tile.copy
// EXPAND:          tile.vec "relu"
// EXPAND:          tile.copy
// EXPAND:        {tile.pipeline = "ping-pong"}
// EXPAND-NOT:    tile.elementwise

// NPU:      npu.program @main
// NPU:        npu.input "x"
// NPU:        npu.output "y"
// NPU:        npu.kernel @k1_max_pool
// NPU:          npu.set_flag v -> mte2 event 1
// NPU:          scf.for
// NPU:            npu.wait_flag v -> mte2 event 1
// NPU:            npu.dma mte2
// NPU:            npu.set_flag mte2 -> v event 0
// NPU-NEXT:       npu.wait_flag mte2 -> v event 0
// NPU:            npu.vmax f32
// NPU:            npu.set_flag v -> mte2 event 1
// NPU:        npu.launch @k1_max_pool
