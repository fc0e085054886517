// convert-tile-to-npu on lowered kernels: GM tensors become npu.input /
// output / constant at their offsets, loops stay scf.for, a ping-pong loop
// gets "buffer free" flags (event 1, set before the loop, waited after it),
// forward dependences set/wait event 0 right before the consumer; copies are
// npu.dma on the path's pipe (bursts with gaps), the cube is load_3d (im2col,
// f32 = C0 8), load_2d (fractals) and mmad (init, then accumulate), the
// vector unit vrelu with repeats.
// RUN: ge-opt %s --split-input-file -p 'graph-fuse,convert-graph-to-tile{precision_mode=must_keep_origin_dtype},ge-tile-opt,convert-tile-to-npu,npu-insert-sync' | filecheck %s

// CHECK-LABEL: npu.program @conv_relu gm_size
// CHECK-DAG:   npu.constant "c_w" at {{[0-9]+}} = dense_resource<{{.*}}> : tensor<{{(1x)?}}2x1x1x16x8xf32>
// CHECK-DAG:   npu.input "x" at {{[0-9]+}} : tensor<1x16x16x16xf32>
// CHECK-DAG:   npu.output "y" at {{[0-9]+}} : tensor<1x16x16x16xf32>
// CHECK:       npu.kernel @k0_transdata attributes {ge.kind = "transdata"}
// CHECK:         npu.mmad f32
// CHECK:       npu.launch @k0_transdata block_dim 16 stream 0
// CHECK:       npu.kernel @k1_conv attributes {ge.kind = "conv"}
// CHECK:         npu.block_idx
// CHECK:         npu.set_flag mte1 -> mte2 event [[E:[1-7]]]
// CHECK:         scf.for
// CHECK:           npu.wait_flag mte1 -> mte2 event [[E]]
// CHECK:           npu.dma mte2 %{{.*}}, %{{.*}} len {{[0-9]+}} : !npu.ptr<l1>, !npu.ptr<gm>
// CHECK:           npu.dma mte2 %{{.*}}, %{{.*}} nburst 2 len 512 src_gap {{[0-9]+}} : !npu.ptr<l1>, !npu.ptr<gm>
// CHECK:           npu.set_flag mte2 -> mte1 event 0
// CHECK-NEXT:      npu.wait_flag mte2 -> mte1 event 0
// CHECK-NEXT:      npu.load_3d %{{.*}}, %{{.*}} fm_h 1 fm_w 16 kh 1 kw 1 m_len 16 f32 : !npu.ptr<l0a>, !npu.ptr<l1>
// CHECK:           npu.load_2d %{{.*}}, %{{.*}} repeat 1 : !npu.ptr<l0b>, !npu.ptr<l1>
// CHECK:           npu.set_flag mte1 -> m event 0
// CHECK-NEXT:      npu.wait_flag mte1 -> m event 0
// CHECK-NEXT:      npu.mmad f32 %{{.*}}, %{{.*}}, %{{.*}} m 16 n 16 k 8 : !npu.ptr<l0c>, !npu.ptr<l0a>, !npu.ptr<l0b>
// CHECK:           npu.mmad f32 %{{.*}}, %{{.*}}, %{{.*}} m 16 n 16 k 8 accumulate
// CHECK:           npu.dma v %{{.*}}, %{{.*}} len 1024 : !npu.ptr<ub>, !npu.ptr<l0c>
// CHECK:           npu.vrelu f32 %{{.*}}, %{{.*}} repeat 4 : !npu.ptr<ub>, !npu.ptr<ub>
// CHECK:           npu.set_flag v -> mte3 event 0
// CHECK-NEXT:      npu.wait_flag v -> mte3 event 0
// CHECK-NEXT:      npu.dma mte3 %{{.*}}, %{{.*}} nburst 16 len 32 src_gap 32 : !npu.ptr<gm>, !npu.ptr<ub>
// CHECK:         }
// CHECK:         npu.wait_flag mte1 -> mte2 event [[E]]
// CHECK-NEXT:  }
// CHECK-NEXT:  npu.launch @k1_conv block_dim 16 stream 0
// CHECK:       npu.kernel @k2_transdata
// CHECK:       npu.launch @k2_transdata
func.func @conv_relu(%x: tensor<1x16x16x16xf32> {ge.name = "x"}) -> (tensor<1x16x16x16xf32> {ge.name = "y"}) {
  %w = graph.fill 0.5 : tensor<16x16x1x1xf32>
  %c = graph.conv %x, %w {activation = "relu"} : tensor<1x16x16x16xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x16x16xf32> loc("conv1")
  func.return %c : tensor<1x16x16x16xf32>
}
