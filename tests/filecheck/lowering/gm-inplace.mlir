// A conv with a fused residual writes over the residual when it is the
// residual's last reader (gedialects/tile/gm_arena.py, `ge.reuses`): its
// epilogue reads each residual tile where it writes the output tile.
// RUN: ge-opt %s --split-input-file -p 'graph-plan-memory,convert-graph-to-tile{precision_mode=must_keep_origin_dtype}' | filecheck %s

// c = conv(b) + a, a read last by c: c takes a's storage; three maps live at
// c, not four.
// CHECK-LABEL: tile.program "in_place"
// CHECK-SAME:  ge.arena_live_bytes = "4608;9216;9216;9216;9216;4608"
// CHECK-SAME:  arena_size = 9216 : i64
// CHECK:       tile.tensor {ge.stored_bytes = 4096 : i64, name = "conv", kind = "internal", offset = [[A:[0-9]+]] : i64
// CHECK:       tile.tensor {ge.stored_bytes = 4096 : i64, ge.reuses = "conv", name = "conv_2", kind = "internal", offset = [[A]] : i64
func.func @in_place(%x: tensor<1x16x8x8xf32> {ge.name = "x"}) -> (tensor<1x16x8x8xf32> {ge.name = "y"}) {
  %w = graph.fill 0.05 : tensor<16x16x1x1xf32>
  %a = graph.conv %x, %w {activation = "relu"} : tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x8x8xf32> loc("a")
  %b = graph.conv %a, %w {activation = "relu"} : tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x8x8xf32> loc("b")
  %c = graph.conv %b, %w residual(%a : tensor<1x16x8x8xf32>) {activation = "relu"} : tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x8x8xf32> loc("c")
  %d = graph.conv %c, %w {activation = "relu"} : tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x8x8xf32> loc("d")
  func.return %d : tensor<1x16x8x8xf32>
}

// -----

// a is read again by d after c: c may not write over it (the plan gives it a
// slot of its own); d, a's last reader, does.
// CHECK-LABEL: tile.program "still_read"
// CHECK:       tile.tensor {ge.stored_bytes = 4096 : i64, name = "conv", kind = "internal", offset = [[A:[0-9]+]] : i64
// CHECK:       tile.tensor {ge.stored_bytes = 4096 : i64, ge.reuses = "conv", name = "conv_2", kind = "internal", offset = [[C:[0-9]+]] : i64
// CHECK:       tile.tensor {ge.stored_bytes = 4096 : i64, ge.reuses = "conv", name = "conv_3", kind = "internal", offset = [[A]] : i64
func.func @still_read(%x: tensor<1x16x8x8xf32> {ge.name = "x"}) -> (tensor<1x16x8x8xf32> {ge.name = "y"}) {
  %w = graph.fill 0.05 : tensor<16x16x1x1xf32>
  %a = graph.conv %x, %w {activation = "relu"} : tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x8x8xf32> loc("a")
  %b = graph.conv %a, %w {activation = "relu"} : tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x8x8xf32> loc("b")
  %c = graph.conv %b, %w residual(%a : tensor<1x16x8x8xf32>) {activation = "relu"} : tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x8x8xf32> loc("c")
  %d = graph.conv %c, %w residual(%a : tensor<1x16x8x8xf32>) {activation = "relu"} : tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x8x8xf32> loc("d")
  func.return %d : tensor<1x16x8x8xf32>
}
