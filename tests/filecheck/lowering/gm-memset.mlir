// Zero-halo maps in reused GM storage (gedialects/tile/gm_arena.py,
// lowering/graph_to_tile/memset.py): the arena gives them their exact
// lifetimes; one that takes storage an earlier map wrote gets a memset kernel
// before its first user (ge.cleared); one whose latest earlier tenant was a
// zero-halo map of its geometry at its offset inherits that zero halo.
// RUN: ge-opt %s --split-input-file -p 'graph-fuse,graph-plan-memory,convert-graph-to-tile{precision_mode=must_keep_origin_dtype}' | filecheck %s

// 1x1 convs write their whole maps; the padded max pools' inputs (14x14
// with the halo; convs pad on the fly and need none) take those slots:
// conv_1 and pool are cleared first, pool_1 inherits conv_1's zeroed halo at
// offset 0. The arena bytes held per task count the two memsets.
// CHECK-LABEL: tile.program "dirty_halo"
// CHECK-SAME:  ge.arena_live_bytes = "9728;19456;22528;22528;25600;25600;25600;22528;9728"
// CHECK-SAME:  arena_size = 25600 : i64
// CHECK:       tile.tensor {ge.stored_bytes = 9216 : i64, name = "input_5hd", kind = "internal", offset = 0 : i64
// CHECK:       tile.tensor {ge.stored_bytes = 12544 : i64, ge.zero_halo, ge.cleared, ge.halo_geometry = "2,14,14,1,1,1,1", name = "conv_1", kind = "internal", offset = 0 : i64
// CHECK:       tile.tensor {ge.stored_bytes = 12544 : i64, ge.zero_halo, ge.cleared, ge.halo_geometry = "2,14,14,1,1,1,1", name = "pool", kind = "internal", offset = 12800 : i64
// CHECK:       tile.tensor {ge.stored_bytes = 12544 : i64, ge.zero_halo, ge.halo_geometry = "2,14,14,1,1,1,1", name = "pool_1", kind = "internal", offset = 0 : i64
// CHECK:       tile.kernel "k1_conv"
// CHECK:       tile.kernel "k7_memset" attributes {kind = "memset", op_type = "memset", source = "memset of conv_1", block_dim = 1 : i64} {
// CHECK-NEXT:    %[[Z:.*]] = tile.map ins(:) -> tensor<1x2x14x14x8xf32> {
// CHECK-NEXT:      %[[C:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      tile.yield %[[C]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    tile.store %[[Z]], "conv_1" : tensor<1x2x14x14x8xf32>
// CHECK:       tile.kernel "k2_conv"
// CHECK:       tile.kernel "k8_memset" {{.*}}source = "memset of pool"
// CHECK-NEXT:    tile.map
// CHECK:       tile.kernel "k3_max_pool"
// CHECK-NOT:   memset
// CHECK:       tile.kernel "k4_max_pool"
func.func @dirty_halo(%x: tensor<1x16x12x12xf32> {ge.name = "x"}) -> (tensor<1x16x12x12xf32> {ge.name = "y"}) {
  %w1 = graph.fill 0.05 : tensor<16x16x1x1xf32>
  %a = graph.conv %x, %w1 {activation = "relu"} : tensor<1x16x12x12xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x12x12xf32> loc("a")
  %b = graph.conv %a, %w1 {activation = "relu"} : tensor<1x16x12x12xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x12x12xf32> loc("b")
  %c = graph.max_pool %b {kernel_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x12x12xf32>) -> tensor<1x16x12x12xf32> loc("c")
  %d = graph.max_pool %c {kernel_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x12x12xf32>) -> tensor<1x16x12x12xf32> loc("d")
  %e = graph.max_pool %d {kernel_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x12x12xf32>) -> tensor<1x16x12x12xf32> loc("e")
  func.return %e : tensor<1x16x12x12xf32>
}

// -----

// Padded max pools: every map they read has the same halo geometry. pool
// takes input_5hd's slot (no halo: the conv pads on the fly) and is cleared;
// pool_1 takes conv's slot, whose halo is still zero: no second memset.
// CHECK-LABEL: tile.program "halo_chain"
// CHECK-SAME:  arena_size = 41984 : i64
// CHECK:       name = "conv", kind = "internal", offset = 0 : i64
// CHECK:       ge.cleared, {{.*}}name = "pool", kind = "internal", offset = 20992 : i64
// CHECK:       ge.zero_halo, ge.halo_geometry = "2,18,18,1,1,1,1", name = "pool_1", kind = "internal", offset = 0 : i64
// CHECK:       tile.kernel "k1_conv"
// CHECK:       tile.kernel "k6_memset" {{.*}}source = "memset of pool"
// CHECK-NOT:   memset
// CHECK:       tile.kernel "k4_max_pool"
func.func @halo_chain(%x: tensor<1x16x16x16xf32> {ge.name = "x"}) -> (tensor<1x16x16x16xf32> {ge.name = "y"}) {
  %w = graph.fill 0.05 : tensor<16x16x3x3xf32>
  %a = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, activation = "relu"} : tensor<1x16x16x16xf32>, tensor<16x16x3x3xf32> -> tensor<1x16x16x16xf32> loc("a")
  %b = graph.max_pool %a {kernel_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32> loc("b")
  %c = graph.max_pool %b {kernel_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32> loc("c")
  %d = graph.max_pool %c {kernel_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32> loc("d")
  func.return %d : tensor<1x16x16x16xf32>
}
