// The exact GELU's map body (lowering/map_bodies.py): max(x, 0) - 0.5 |x| erfc(|x|/√2),
// the same function as 0.5 x (1 + erf(x/√2)) without erf's sign select or the
// cancellation of 1 + erf for negative x; erfc of the non-negative z = |x|/√2 by
// Abramowitz & Stegun 7.1.26 (legalize_math.erfc_of_nonnegative), and 0.5 |x| as
// z/√2. With tile-legalize-math after it (the second run line) the body is the same:
// it holds no op the vector unit lacks.
// RUN: ge-opt %s -p 'graph-partition{precision_mode=must_keep_origin_dtype},assign-layouts,convert-graph-to-tile{precision_mode=must_keep_origin_dtype}' | filecheck %s
// RUN: ge-opt %s -p 'graph-partition{precision_mode=must_keep_origin_dtype},assign-layouts,convert-graph-to-tile{precision_mode=must_keep_origin_dtype},tile-legalize-math' | filecheck %s

// CHECK-LABEL: tile.kernel "k0_vector"
// CHECK:       ^bb0(%[[X:[0-9a-z_]+]]: f32):
// CHECK-NEXT:    %[[AX:[0-9a-z_]+]] = math.absf %[[X]] : f32
// CHECK-NEXT:    %[[C:[0-9a-z_]+]] = arith.constant 0.707106{{[0-9]*}} : f32
// CHECK-NEXT:    %[[Z:[0-9a-z_]+]] = arith.mulf %[[AX]], %[[C]] : f32
// t = 1 / (1 + p z)
// CHECK:         %[[PZ:[0-9a-z_]+]] = arith.mulf %[[Z]], %{{[0-9a-z_]+}} : f32
// CHECK:         %[[T:[0-9a-z_]+]] = arith.divf %{{[0-9a-z_]+}}, %{{[0-9a-z_]+}} : f32
// exp(-z^2)
// CHECK:         %[[Z2:[0-9a-z_]+]] = arith.mulf %[[Z]], %[[Z]] : f32
// CHECK-NEXT:    %[[NZ2:[0-9a-z_]+]] = arith.negf %[[Z2]] : f32
// CHECK-NEXT:    %[[G:[0-9a-z_]+]] = math.exp %[[NZ2]] : f32
// CHECK-NEXT:    %[[TAIL:[0-9a-z_]+]] = arith.mulf %{{[0-9a-z_]+}}, %[[G]] : f32
// CHECK:         %[[RELU:[0-9a-z_]+]] = arith.maximumf %[[X]], %{{[0-9a-z_]+}} : f32
// CHECK:         %[[S:[0-9a-z_]+]] = arith.mulf %[[TAIL]], %{{[0-9a-z_]+}} : f32
// CHECK-NEXT:    %[[H:[0-9a-z_]+]] = arith.mulf %[[Z]], %[[S]] : f32
// CHECK-NEXT:    %[[Y:[0-9a-z_]+]] = arith.subf %[[RELU]], %[[H]] : f32
// CHECK-NEXT:    tile.yield %[[Y]] : f32
// CHECK-NOT:     math.erf
// CHECK-NOT:     arith.select
func.func @gelu(%x: tensor<4x64xf32> {ge.name = "x"}) -> (tensor<4x64xf32> {ge.name = "y"}) {
  %y = graph.gelu %x : (tensor<4x64xf32>) -> tensor<4x64xf32> loc("gelu")
  func.return %y : tensor<4x64xf32>
}
