// GM placement. Without a memory plan: one bump allocator (no reuse). After
// graph-plan-memory: the internal tensors share one arena at GM 0, planned
// with the planner's strategies on the stored (NC1HWC0) sizes and kernel
// lifetimes (gedialects/tile/gm_arena.py); constants, inputs, outputs follow it.
// Each internal tensor records its request (ge.stored_bytes, and
// ge.zero_halo / ge.halo_geometry when it relies on zeroed GM), so that
// tile-assign-streams can plan the arena again.
// RUN: ge-opt %s -p 'graph-fuse,graph-plan-memory,convert-graph-to-tile{precision_mode=must_keep_origin_dtype}' | filecheck %s
// RUN: ge-opt %s -p 'graph-fuse,convert-graph-to-tile{precision_mode=must_keep_origin_dtype}' | filecheck %s --check-prefix=BUMP
// RUN: ge-opt %s -p 'graph-fuse,graph-plan-memory,convert-graph-to-tile{precision_mode=must_keep_origin_dtype},ge-tile-opt,convert-tile-to-npu,npu-insert-sync' | filecheck %s --check-prefix=NPU

// Four 16 KiB maps (+64 B slack, 512-aligned: 16896 B) in a chain: each is
// dead two kernels after it is written, so two slots suffice; the arena
// bytes held at each of the five kernels (ge.arena_live_bytes: the profile's
// device-memory track) peak at those two slots.
// CHECK-LABEL: tile.program "planned_chain" attributes {ge.arena_live_bytes = "16896;33792;33792;33792;16896", ge.memory = {alignment = 512 : i64, arena_size = 33792 : i64, no_reuse = 67584 : i64, strategy = "{{.*}}", tensors = 4 : i64, lower_bound = 33792 : i64, graph_arena_size = 32768 : i64}
// CHECK-DAG:   tile.tensor {name = "a_w", kind = "constant", offset = 33792 : i64
// CHECK-DAG:   tile.tensor {ge.stored_bytes = 16384 : i64, name = "input_5hd", kind = "internal", offset = [[A:[0-9]+]] : i64
// CHECK-DAG:   tile.tensor {ge.stored_bytes = 16384 : i64, name = "conv", kind = "internal", offset = [[B:[0-9]+]] : i64
// CHECK-DAG:   tile.tensor {ge.stored_bytes = 16384 : i64, name = "conv_1", kind = "internal", offset = [[A]] : i64
// CHECK-DAG:   tile.tensor {ge.stored_bytes = 16384 : i64, name = "conv_2", kind = "internal", offset = [[B]] : i64
// CHECK-DAG:   tile.tensor {name = "x", kind = "input", offset = {{[1-9][0-9]*}} : i64
// CHECK-DAG:   tile.tensor {name = "y", kind = "output", offset = {{[1-9][0-9]*}} : i64

// BUMP-LABEL: tile.program "planned_chain" attributes {ge.precision_mode
// BUMP-NOT:   ge.memory
// BUMP:       tile.tensor {name = "a_w", kind = "constant", offset = 0 : i64
// The arena is GM [0, 33792): the npu program's first constant follows it.
// NPU-LABEL: npu.program @planned_chain gm_size
// NPU:       npu.constant "a_w" at 33792 =

func.func @planned_chain(%x: tensor<1x16x16x16xf32> {ge.name = "x"}) -> (tensor<1x16x16x16xf32> {ge.name = "y"}) {
  %w = graph.fill 0.5 : tensor<16x16x1x1xf32>
  %a = graph.conv %x, %w {activation = "relu"} : tensor<1x16x16x16xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x16x16xf32> loc("a")
  %b = graph.conv %a, %w {activation = "relu"} : tensor<1x16x16x16xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x16x16xf32> loc("b")
  %c = graph.conv %b, %w {activation = "relu"} : tensor<1x16x16x16xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x16x16xf32> loc("c")
  func.return %c : tensor<1x16x16x16xf32>
}
