// tile-legalize-math: tanh, erf and powf in map bodies become ops the vector unit has.
// RUN: ge-opt %s -p tile-legalize-math | filecheck %s

// CHECK-LABEL: tile.kernel "k"
// tanh(x) = 1 - 2 / (exp(2x) + 1)
// CHECK:      %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT: %[[X2:.*]] = arith.mulf %a, %[[TWO]] : f32
// CHECK-NEXT: %[[E:.*]] = math.exp %[[X2]] : f32
// CHECK-NOT:  math.tanh
// erf: A&S 7.1.26 with a sign select
// CHECK:      math.absf
// CHECK:      arith.cmpf olt
// CHECK:      arith.select
// CHECK-NOT:  math.erf
// powf by 2 is a multiply, by 0.5 a square root
// CHECK:      arith.mulf %a, %a : f32
// CHECK:      math.sqrt %a : f32
// CHECK-NOT:  math.powf
// CHECK:      tile.yield
tile.program "p" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<4x64xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 1024 : i64, type = tensor<4x64xf32>, layout = "ND"}
  tile.kernel "k" attributes {block_dim = 1 : i64} {
    %x = tile.load "x" : tensor<4x64xf32>
    %y = tile.map ins(%x : tensor<4x64xf32>) -> tensor<4x64xf32> {
    ^bb0(%a : f32):
      %t = math.tanh %a : f32
      %e = math.erf %t : f32
      %two = arith.constant 2.0 : f32
      %half = arith.constant 0.5 : f32
      %p = math.powf %a, %two : f32
      %q = math.powf %a, %half : f32
      %s = arith.addf %e, %p : f32
      %r = arith.addf %s, %q : f32
      tile.yield %r : f32
    }
    tile.store %y, "y" : tensor<4x64xf32>
  }
}
