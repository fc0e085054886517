// assign-layouts says where it put each transdata (at the consumer that
// needed the other format), which output transdata it folded away, and
// which views read a map in place.
// RUN: ge-opt %s -p assign-layouts --log=info --verify-diagnostics | filecheck %s

// CHECK-LABEL: func.func @remarks
func.func @remarks(%x: tensor<1x16x2x16xf32> {ge.name = "x"}) -> (tensor<1x10xf32> {ge.name = "y"}, tensor<1x16x1x1xf32> {ge.name = "pooled"}) {
  %w = graph.fill 0.5 : tensor<16x16x1x1xf32>
  %v = graph.fill 0.01 : tensor<512x10xf32>
  // expected-remark@+1 {{'graph.conv' op assign-layouts: operand #0 NCHW -> NC1HWC0 (graph.transdata)}}
  %c = graph.conv %x, %w : tensor<1x16x2x16xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x2x16xf32> loc("conv")
  // expected-remark@+1 {{'graph.flatten' op assign-layouts: reads the NC1HWC0 map in place (FLAT_NC1HWC0), no transdata}}
  %f = graph.flatten %c {axis = 1 : i64} : (tensor<1x16x2x16xf32>) -> tensor<1x512xf32> loc("flat")
  %m = graph.gemm %f, %v : (tensor<1x512xf32>, tensor<512x10xf32>) -> tensor<1x10xf32> loc("fc")
  // expected-remark@+1 {{'graph.global_avg_pool' op assign-layouts: output transdata folded (byte-identical to NCHW)}}
  %g = graph.global_avg_pool %c : (tensor<1x16x2x16xf32>) -> tensor<1x16x1x1xf32> loc("gap")
  func.return %m, %g : tensor<1x10xf32>, tensor<1x16x1x1xf32>
}
