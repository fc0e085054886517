// graph-fuse, GELU rules: GeluErfFusionPass and GeluTanhFusionPass, the
// factors x, (1 + erf/tanh) and 0.5 multiplied in any order.
// RUN: ge-opt %s --split-input-file -p graph-fuse --verify-diagnostics | filecheck %s

// erf form as PyTorch exports it: x * 0.5 computed first.
func.func @erf_half_first(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %k = graph.fill 1.4142135 : tensor<f32>
  %d = graph.div %x, %k : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32> loc("div")
  // expected-remark@+1 {{applied GeluErfFusionPass at loc("erf"): absorbed [div, erf, add, half, mul]}}
  %e = graph.erf %d : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("erf")
  %one = graph.fill 1.0 : tensor<f32>
  %a = graph.add %one, %e : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("add")
  %h = graph.fill 0.5 : tensor<f32>
  %xh = graph.mul %x, %h : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32> loc("half")
  %y = graph.mul %a, %xh : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("mul")
  func.return %y : tensor<2x8xf32>
}

// CHECK-LABEL: func.func @erf_half_first
// CHECK-SAME:    (%[[X:.*]]: tensor<2x8xf32>)
// CHECK-NEXT:    %[[Y:.*]] = graph.gelu %[[X]] {absorbed = ["div", "erf", "add", "half", "mul"]} : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:    func.return %[[Y]]

// -----

// erf form with x * (1/sqrt 2), then (x * a) * 0.5.
func.func @erf_mul(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %k = graph.fill 0.70710677 : tensor<f32>
  %d = graph.mul %k, %x : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("scale")
  // expected-remark@+1 {{applied GeluErfFusionPass at loc("erf"): absorbed [scale, erf, plus1, mx, mh]}}
  %e = graph.erf %d : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("erf")
  %one = graph.fill 1.0 : tensor<f32>
  %a = graph.add %e, %one : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32> loc("plus1")
  %m = graph.mul %x, %a : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("mx")
  %h = graph.fill 0.5 : tensor<f32>
  %y = graph.mul %h, %m : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("mh")
  func.return %y : tensor<2x8xf32>
}

// CHECK-LABEL: func.func @erf_mul
// CHECK-NEXT:    graph.gelu %{{.*}} {absorbed = ["scale", "erf", "plus1", "mx", "mh"]}

// -----

// tanh form, with x * x * x for the cube.
func.func @tanh_form(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %sq = graph.mul %x, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("sq")
  %c = graph.mul %sq, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("cube")
  %k = graph.fill 0.044715 : tensor<f32>
  %kc = graph.mul %k, %c : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("kc")
  %i = graph.add %x, %kc : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("inner")
  %s = graph.fill 0.7978846 : tensor<f32>
  %si = graph.mul %i, %s : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32> loc("scale")
  // expected-remark@+1 {{applied GeluTanhFusionPass at loc("tanh"): absorbed [sq, cube, kc, inner, scale, tanh, add1, mulx, half]}}
  %t = graph.tanh %si : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("tanh")
  %one = graph.fill 1.0 : tensor<f32>
  %a = graph.add %t, %one : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32> loc("add1")
  %m = graph.mul %x, %a : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("mulx")
  %h = graph.fill 0.5 : tensor<f32>
  %y = graph.mul %m, %h : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32> loc("half")
  func.return %y : tensor<2x8xf32>
}

// CHECK-LABEL: func.func @tanh_form
// CHECK-SAME:    (%[[X:.*]]: tensor<2x8xf32>)
// CHECK-NEXT:    %[[Y:.*]] = graph.gelu %[[X]] {absorbed = ["sq", "cube", "kc", "inner", "scale", "tanh", "add1", "mulx", "half"], approximate = "tanh"}
// CHECK-NEXT:    func.return %[[Y]]

// -----

// Missed: the 1 + erf term is used elsewhere (loop fusion takes the rest,
// yielding the term); and an f16 GELU fuses like any other float.
func.func @missed(%x: tensor<2x8xf32>, %xh: tensor<4xf16>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<4xf16>) {
  %k = graph.fill 1.4142135 : tensor<f32>
  // expected-remark@+1 {{applied ElementwiseLoopFusionPass at loc("div"): absorbed [div, erf, add, mul, half]}}
  %d = graph.div %x, %k : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32> loc("div")
  // expected-remark@+1 {{missed GeluErfFusionPass at loc("erf"): intermediate has other users (graph.add at loc("add") is also used outside the GELU)}}
  %e = graph.erf %d : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("erf")
  %one = graph.fill 1.0 : tensor<f32>
  %a = graph.add %e, %one : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32> loc("add")
  %m = graph.mul %x, %a : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("mul")
  %h = graph.fill 0.5 : tensor<f32>
  %y = graph.mul %m, %h : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32> loc("half")
  %kh = graph.fill 0.70710677 : tensor<f16>
  %dh = graph.mul %xh, %kh : (tensor<4xf16>, tensor<f16>) -> tensor<4xf16> loc("hdiv")
  // expected-remark@+1 {{applied GeluErfFusionPass at loc("herf"): absorbed [hdiv, herf, hadd, hmul, hhalf]}}
  %eh = graph.erf %dh : (tensor<4xf16>) -> tensor<4xf16> loc("herf")
  %oneh = graph.fill 1.0 : tensor<f16>
  %ah = graph.add %eh, %oneh : (tensor<4xf16>, tensor<f16>) -> tensor<4xf16> loc("hadd")
  %mh = graph.mul %xh, %ah : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16> loc("hmul")
  %hh = graph.fill 0.5 : tensor<f16>
  %yh = graph.mul %mh, %hh : (tensor<4xf16>, tensor<f16>) -> tensor<4xf16> loc("hhalf")
  func.return %y, %a, %yh : tensor<2x8xf32>, tensor<2x8xf32>, tensor<4xf16>
}

// CHECK-LABEL: func.func @missed
// CHECK:         graph.fusion
// CHECK:         graph.yield
// CHECK:         graph.gelu %{{.*}} {absorbed = ["hdiv", "herf", "hadd", "hmul", "hhalf"]} : (tensor<4xf16>) -> tensor<4xf16>
