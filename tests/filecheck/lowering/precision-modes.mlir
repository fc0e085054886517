// The two precision modes of convert-graph-to-tile on one small model (3x3
// conv + relu with a 4-D output, global average pool, flatten, gemm with an
// ND output).
// must_keep_origin_dtype: fp32 throughout, C0 = 8, packed
// weights f32 [..][16][8], mmad f32 (k = 9 taps * 8 = 72 per C1 slice).
// force_fp16 (the default, as in ATC; second RUN line): C0 = 16, maps and packed weights f16, the cube reads f16 from
// L0A/L0B and accumulates fp32 in L0C, `cast` on L0C -> UB, vector ops in
// f16; the input transdata takes the fp32 input on the cube and casts, the
// 4-D output's transdata writes fp32 from L0C, and the ND output goes
// through a cast kernel (f16 -> f32).
// RUN: ge-opt %s -p 'convert-graph-to-tile{precision_mode=must_keep_origin_dtype}' | filecheck %s --check-prefix=F32
// RUN: ge-opt %s -p convert-graph-to-tile | filecheck %s --check-prefix=F16
// RUN: ge-opt %s -p 'convert-graph-to-tile{precision_mode=force_fp16}' | filecheck %s --check-prefix=F16
// RUN: ge-opt %s -p 'convert-graph-to-tile{precision_mode=must_keep_origin_dtype},ge-tile-opt,convert-tile-to-npu,npu-insert-sync' | filecheck %s --check-prefix=NPU32
// RUN: ge-opt %s -p 'convert-graph-to-tile{precision_mode=force_fp16},ge-tile-opt,convert-tile-to-npu,npu-insert-sync' | filecheck %s --check-prefix=NPU16

// F32-LABEL: tile.program "conv_gemm" attributes {ge.precision_mode = "must_keep_origin_dtype", ge.transdata = 2 : i64}
// F32-DAG:   tile.tensor {name = "[[W:c_w]]", kind = "constant", {{.*}}type = tensor<1x2x9x1x16x8xf32>
// F32-DAG:   tile.tensor {name = "[[V:gemm_w]]", kind = "constant", {{.*}}type = tensor<2x1x16x8xf32>
// F32-DAG:   tile.tensor {name = "x", kind = "input", {{.*}}type = tensor<1x16x4x16xf32>, layout = "ND"}
// F32-DAG:   tile.tensor {name = "[[IN:input_5hd]]", kind = "internal", {{.*}}type = tensor<1x2x4x16x8xf32>, layout = "NC1HWC0"}
// F32-DAG:   tile.tensor {name = "[[C:conv]]", kind = "internal", {{.*}}type = tensor<1x2x4x16x8xf32>, layout = "NC1HWC0"}
// F32-DAG:   tile.tensor {name = "[[G:gap]]", kind = "internal", {{.*}}type = tensor<1x2x1x1x8xf32>, layout = "NC1HWC0"}
// F32-DAG:   tile.tensor {name = "y", kind = "output", {{.*}}type = tensor<1x16x4x16xf32>, layout = "ND"}
// F32-DAG:   tile.tensor {name = "z", kind = "output", {{.*}}type = tensor<1x10xf32>, layout = "ND"}
// The conv kernel holds a tile.conv on f32 maps and weights (its loops,
// mmad k = 72, are the tile level's: the NPU32 lines below); relu is its
// epilogue, a map body.
// F32-LABEL: tile.kernel "k1_conv"
// F32:         tile.conv ins(%{{.*}} : !tile.ref<gm, f32>) weights(%{{.*}} : !tile.ref<gm, f32>) outs(%{{.*}} : !tile.ref<gm, f32>)
// F32-SAME:      kernel_size = array<i64: 3, 3>, stride = 1 : i64, dilation = 1 : i64, pads = array<i64: 1, 1, 1, 1>, in_slices = 2 : i64, out_fractals = 1 : i64
// F32-NEXT:    ^bb0(%{{.*}}: f32):
// F32:           arith.maximumf
// F32-LABEL: tile.kernel "k2_transdata" attributes {kind = "transdata", source = "graph.transdata at loc(\22conv1_transdata_nchw\22)"
// F32:         tile.gm {tensor = "y"} : !tile.ref<gm, f32>
// F32-LABEL: tile.kernel "k4_gemm"
// F32:         tile.gm {tensor = "z"}
// F32-NOT:   tile.kernel
// F32-NOT:   tile.cast

// F16-LABEL: tile.program "conv_gemm" attributes {ge.precision_mode = "force_fp16", ge.transdata = 2 : i64}
// F16-DAG:   tile.tensor {name = "[[W:c_w]]", kind = "constant", {{.*}}type = tensor<1x1x9x1x16x16xf16>
// F16-DAG:   tile.tensor {name = "[[V:gemm_w]]", kind = "constant", {{.*}}type = tensor<1x1x16x16xf16>
// F16-DAG:   tile.tensor {name = "x", kind = "input", {{.*}}type = tensor<1x16x4x16xf32>, layout = "ND"}
// F16-DAG:   tile.tensor {name = "[[IN:input_5hd]]", kind = "internal", {{.*}}type = tensor<1x1x4x16x16xf16>, layout = "NC1HWC0"}
// F16-DAG:   tile.tensor {name = "[[C:conv]]", kind = "internal", {{.*}}type = tensor<1x1x4x16x16xf16>, layout = "NC1HWC0"}
// F16-DAG:   tile.tensor {name = "[[G:gap]]", kind = "internal", {{.*}}type = tensor<1x1x1x1x16xf16>, layout = "NC1HWC0"}
// F16-DAG:   tile.tensor {name = "[[M:gemm]]", kind = "internal", {{.*}}type = tensor<10xf16>, layout = "ND"}
// F16-DAG:   tile.tensor {name = "y", kind = "output", {{.*}}type = tensor<1x16x4x16xf32>, layout = "ND"}
// F16-DAG:   tile.tensor {name = "z", kind = "output", {{.*}}type = tensor<1x10xf32>, layout = "ND"}
// F16-LABEL: tile.kernel "k0_transdata" attributes {kind = "transdata", source = "graph.transdata at loc(\22x_transdata_nc1hwc0\22)"
// F16:         tile.transdata "NCHW" to "NC1HWC0" %{{.*}}, %{{.*}} : !tile.ref<gm, f32>, !tile.ref<gm, f16>
// F16-LABEL: tile.kernel "k1_conv"
// F16:         tile.conv ins(%{{.*}} : !tile.ref<gm, f16>) weights(%{{.*}} : !tile.ref<gm, f16>) outs(%{{.*}} : !tile.ref<gm, f16>)
// F16-SAME:      in_slices = 1 : i64, out_fractals = 1 : i64
// F16-NEXT:    ^bb0(%{{.*}}: f16):
// F16-LABEL: tile.kernel "k2_transdata" attributes {kind = "transdata", source = "graph.transdata at loc(\22conv1_transdata_nchw\22)"
// F16:         tile.gm {tensor = "y"} : !tile.ref<gm, f32>
// F16:         tile.transdata "NC1HWC0" to "ND" %{{.*}}, %{{.*}} : !tile.ref<gm, f16>, !tile.ref<gm, f32>
// The gemm holds a tile.gemm on f16 operands (its mmads: NPU16 below).
// F16-LABEL: tile.kernel "k4_gemm"
// F16:         %[[GO:.*]] = tile.gm {tensor = "[[M]]"} : !tile.ref<gm, f16>
// F16:         tile.gemm %{{.*}}, %{{.*}}, %[[GO]] : !tile.ref<gm, f16>, !tile.ref<gm, f16>, !tile.ref<gm, f16> attributes {m = 1 : i64, n = 10 : i64, k_fractals = 1 : i64, n_fractals = 1 : i64
// The fp16 row-major result to the fp32 output: a structured kernel (the
// tile passes spread a large one over the cores).
// F16-LABEL: tile.kernel "k5_cast" attributes {kind = "cast", source = "output 'z' f16 -> f32"{{.*}}block_dim = 1 : i64}
// F16-NEXT:    %[[H:.*]] = tile.load "[[M]]" : tensor<1x10xf16>
// F16-NEXT:    %[[F:.*]] = tile.map ins(%[[H]] : tensor<1x10xf16>) -> tensor<1x10xf32> {
// F16:           arith.extf
// F16:         tile.store %[[F]], "z" : tensor<1x10xf32>
// F16-NOT:   tile.kernel

// NPU32-LABEL: npu.program @conv_gemm
// NPU32:       npu.constant "c_w" at {{[0-9]+}} = dense_resource<{{.*}}> : tensor<1x2x9x1x16x8xf32>
// NPU32-LABEL: npu.kernel @k1_conv
// NPU32:         npu.load_3d {{.*}} kh 3 kw 3 pad_left 1 pad_right 1 m_len 16 f32 :
// NPU32:         npu.mmad f32 %{{.*}}, %{{.*}}, %{{.*}} m 16 n 16 k 72 :
// NPU32:         npu.dma v %{{.*}}, %{{.*}} len 1024 : !npu.ptr<ub>, !npu.ptr<l0c>
// NPU32:         npu.vrelu f32
// NPU32-LABEL: npu.kernel @k4_gemm
// NPU32:         npu.mmad f32
// NPU32-NOT:   npu.mmad f16
// NPU32-NOT:   cast_f16
// NPU32-NOT:   npu.vconv

// NPU16-LABEL: npu.program @conv_gemm
// NPU16:       npu.constant "c_w" at {{[0-9]+}} = dense_resource<{{.*}}> : tensor<1x1x9x1x16x16xf16>
// NPU16-LABEL: npu.kernel @k0_transdata
// NPU16:         npu.mmad f32
// NPU16:         npu.dma v %{{.*}}, %{{.*}} len 1024 cast_f16 : !npu.ptr<ub>, !npu.ptr<l0c>
// NPU16-LABEL: npu.kernel @k1_conv
// NPU16:         npu.load_3d {{.*}} kh 3 kw 3 pad_left 1 pad_right 1 m_len 16 :
// NPU16:         npu.mmad f16 %{{.*}}, %{{.*}}, %{{.*}} m 16 n 16 k 144 :
// NPU16:         npu.dma v %{{.*}}, %{{.*}} len 1024 cast_f16 : !npu.ptr<ub>, !npu.ptr<l0c>
// NPU16:         npu.vrelu f16
// NPU16-LABEL: npu.kernel @k2_transdata
// NPU16:         npu.mmad f16
// NPU16-NOT:     cast_f16
// NPU16-LABEL: npu.kernel @k4_gemm
// NPU16:         npu.mmad f16
// NPU16:         npu.dma v {{.*}} cast_f16
// NPU16-LABEL: npu.kernel @k5_cast attributes {ge.kind = "cast"{{.*}}}
// NPU16:         npu.vconv f32 f16
func.func @conv_gemm(%x: tensor<1x16x4x16xf32> {ge.name = "x"}) -> (tensor<1x16x4x16xf32> {ge.name = "y"}, tensor<1x10xf32> {ge.name = "z"}) {
  %w = graph.fill 0.5 : tensor<16x16x3x3xf32>
  %v = graph.fill 0.25 : tensor<16x10xf32>
  %c = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, activation = "relu"} : tensor<1x16x4x16xf32>, tensor<16x16x3x3xf32> -> tensor<1x16x4x16xf32> loc("conv1")
  %g = graph.global_avg_pool %c : (tensor<1x16x4x16xf32>) -> tensor<1x16x1x1xf32> loc("gap")
  %f = graph.flatten %g {axis = 1 : i64} : (tensor<1x16x1x1xf32>) -> tensor<1x16xf32> loc("flat")
  %m = graph.gemm %f, %v : (tensor<1x16xf32>, tensor<16x10xf32>) -> tensor<1x10xf32> loc("fc")
  func.return %c, %m : tensor<1x16x4x16xf32>, tensor<1x10xf32>
}
