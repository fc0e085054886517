// convert-graph-to-tile, graph.attention (lowering/graph_to_tile/attention.py):
// one structured kernel of kind "attention": tile.loads of q, k (keys as
// rows), v and the masks, one tile.attention (fp32 result, the scores never
// stored), the epilogue map to the stored type and the store. In fp32 the
// values are read as v^T, written first by an identity-product "transpose"
// kernel (fp32 fractals are not transposed on the way to L0B); in
// force_fp16 each fp32 graph input of the cube gets a cast kernel first and
// v is read row-major (load_2d transposes fp16 fractals).
// RUN: ge-opt %s --split-input-file -p 'graph-partition{precision_mode=must_keep_origin_dtype},assign-layouts,convert-graph-to-tile{precision_mode=must_keep_origin_dtype}' | filecheck %s
// RUN: ge-opt %s --split-input-file -p 'graph-partition,assign-layouts,convert-graph-to-tile' | filecheck %s --check-prefix=FP16

// BERT-like: two heads of 32 tokens, head size 16, scale 1/4 and a padding
// mask [B, 1, 1, S].
// CHECK-LABEL: tile.program "attention"
// CHECK:       tile.tensor {name = "[[VT:v_t]]", kind = "internal"
// CHECK:       tile.kernel "k0_transpose" attributes {kind = "transpose", source = "graph.attention"
// CHECK-NEXT:    %[[I:.*]] = tile.load "identity" : tensor<16x16xf32>
// CHECK-NEXT:    %[[V0:.*]] = tile.load "v" : tensor<2x32x16xf32>
// CHECK-NEXT:    %[[P:.*]] = tile.batch_matmul %[[I]], %[[V0]] {transpose_b} : tensor<16x16xf32>, tensor<2x32x16xf32> -> tensor<2x16x32xf32>
// CHECK:         tile.store %{{.*}}, "[[VT]]" : tensor<2x16x32xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  tile.kernel "k1_attention" attributes {kind = "attention", source = "graph.attention"
// CHECK-NEXT:    %[[Q:.*]] = tile.load "q" : tensor<1x2x32x16xf32>
// CHECK-NEXT:    %[[K:.*]] = tile.load "k" : tensor<1x2x32x16xf32>
// CHECK-NEXT:    %[[V:.*]] = tile.load "[[VT]]" : tensor<1x2x16x32xf32>
// CHECK-NEXT:    %[[M:.*]] = tile.load "m" : tensor<1x1x1x32xf32>
// CHECK-NEXT:    %[[A:.*]] = tile.attention %[[Q]], %[[K]], %[[V]] mask(%[[M]] : tensor<1x1x1x32xf32>) {scale = 2.500000e-01 : f32, transpose_v} : tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x16x32xf32> -> tensor<1x2x32x16xf32>
// CHECK-NEXT:    tile.store %[[A]], "y" : tensor<1x2x32x16xf32>
// CHECK-NEXT:  }
// CHECK-NOT:   tile.kernel
// In force_fp16 q, k and v are cast to fp16 by kernels of their own (the
// mask is read as it is stored, fp32); no v^T; the epilogue rounds to fp16
// and the output's cast kernel widens it for "y".
// FP16-LABEL: tile.program "attention"
// FP16-NOT:   "v_t"
// FP16:       tile.kernel "k0_cast"
// FP16-NEXT:    tile.load "q" : tensor<1x2x32x16xf32>
// FP16:           arith.truncf
// FP16:         tile.store %{{.*}}, "[[QH:q_fp16]]" : tensor<1x2x32x16xf16>
// FP16:       tile.kernel "k1_cast"
// FP16-NEXT:    tile.load "k" : tensor<1x2x32x16xf32>
// FP16:         tile.store %{{.*}}, "[[KH:k_fp16]]" : tensor<1x2x32x16xf16>
// FP16:       tile.kernel "k2_cast"
// FP16-NEXT:    tile.load "v" : tensor<1x2x32x16xf32>
// FP16:         tile.store %{{.*}}, "[[VH:v_fp16]]" : tensor<1x2x32x16xf16>
// FP16:       tile.kernel "k3_attention" attributes {kind = "attention"
// FP16-NEXT:    %[[Q:.*]] = tile.load "[[QH]]" : tensor<1x2x32x16xf16>
// FP16-NEXT:    %[[K:.*]] = tile.load "[[KH]]" : tensor<1x2x32x16xf16>
// FP16-NEXT:    %[[V:.*]] = tile.load "[[VH]]" : tensor<1x2x32x16xf16>
// FP16-NEXT:    %[[M:.*]] = tile.load "m" : tensor<1x1x1x32xf32>
// FP16-NEXT:    %[[A:.*]] = tile.attention %[[Q]], %[[K]], %[[V]] mask(%[[M]] : tensor<1x1x1x32xf32>) {scale = 2.500000e-01 : f32} : tensor<1x2x32x16xf16>, tensor<1x2x32x16xf16>, tensor<1x2x32x16xf16> -> tensor<1x2x32x16xf32>
// FP16-NEXT:    tile.store %[[A]], "y" : tensor<1x2x32x16xf32>
// FP16-NEXT:  }
// FP16-NEXT:  }
func.func @attention(%q: tensor<1x2x32x16xf32> {ge.name = "q"}, %k: tensor<1x2x32x16xf32> {ge.name = "k"}, %v: tensor<1x2x32x16xf32> {ge.name = "v"}, %m: tensor<1x1x1x32xf32> {ge.name = "m"}) -> (tensor<1x2x32x16xf32> {ge.name = "y"}) {
  %y = graph.attention %q, %k, %v mask(%m : tensor<1x1x1x32xf32>) {scale = 0.25 : f32} : tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32> -> tensor<1x2x32x16xf32>
  func.return %y : tensor<1x2x32x16xf32>
}

// -----

// q from the head split, a transpose [B, S, H, D] -> [B, H, S, D] that only
// the attention reads: it makes no kernel; q is loaded from its source
// through permuted strides (in force_fp16, from the source's fp16 copy).
// CHECK-LABEL: tile.program "heads"
// CHECK-NOT:   source = "graph.transpose"
// CHECK:       tile.kernel "k1_attention"
// CHECK-NEXT:    %[[Q:.*]] = tile.load "x" {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x32x16xf32>
// CHECK:         tile.attention %[[Q]], {{.*}} {scale = 2.500000e-01 : f32, transpose_v}
// FP16-LABEL: tile.program "heads"
// FP16-NOT:   source = "graph.transpose"
// FP16:       tile.kernel "k0_cast"
// FP16-NEXT:    tile.load "x" : tensor<1x32x2x16xf32>
// FP16:         tile.store %{{.*}}, "[[XH:x_fp16]]" : tensor<1x32x2x16xf16>
// FP16-NOT:   source = "graph.transpose"
// FP16:       tile.kernel "k3_attention"
// FP16-NEXT:    %[[Q:.*]] = tile.load "[[XH]]" {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x32x16xf16>
// FP16-NEXT:    %[[K:.*]] = tile.load "k_fp16"
// FP16-NEXT:    %[[V:.*]] = tile.load "v_fp16"
// FP16-NEXT:    tile.attention %[[Q]], %[[K]], %[[V]] {scale = 2.500000e-01 : f32} : tensor<1x2x32x16xf16>, tensor<1x2x32x16xf16>, tensor<1x2x32x16xf16> -> tensor<1x2x32x16xf32>
func.func @heads(%x: tensor<1x32x2x16xf32> {ge.name = "x"}, %k: tensor<1x2x32x16xf32> {ge.name = "k"}, %v: tensor<1x2x32x16xf32> {ge.name = "v"}) -> (tensor<1x2x32x16xf32> {ge.name = "y"}) {
  %q = graph.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x32x2x16xf32>) -> tensor<1x2x32x16xf32>
  %y = graph.attention %q, %k, %v {scale = 0.25 : f32} : tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32> -> tensor<1x2x32x16xf32>
  func.return %y : tensor<1x2x32x16xf32>
}
