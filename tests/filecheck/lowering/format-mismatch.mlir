// convert-graph-to-tile trusts the formats in the IR (it runs
// assign-layouts itself only on IR without any) and checks its kernels
// against them: a hand-edited annotation is reported, not miscompiled.
// RUN: ge-opt %s -p convert-graph-to-tile --verify-diagnostics

// expected-error@unknown {{graph.conv at loc("conv"): assign-layouts chose ND, the lowering produced NC1HWC0}}
func.func @format_mismatch(%x: tensor<1x16x2x16xf32> {ge.name = "x"}) -> (tensor<1x16x2x16xf32> {ge.name = "y"}) {
  %w = graph.fill 0.5 : tensor<16x16x1x1xf32>
  %t = graph.transdata %x {ge.format = "NC1HWC0", src_format = "NCHW", dst_format = "NC1HWC0"} : (tensor<1x16x2x16xf32>) -> tensor<1x16x2x16xf32>
  %c = graph.conv %t, %w {ge.format = "ND"} : tensor<1x16x2x16xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x2x16xf32> loc("conv")
  func.return %c : tensor<1x16x2x16xf32>
}
