// convert-graph-to-tile's cube family: a matmul of row-major tensors becomes
// one structured kernel: both operands loaded, a tile.batch_matmul, one
// epilogue map (bias, activation, scales) and the store; a weight is stored
// transposed ([N, K]) so its rows are the columns of the product, packed in
// FRACTAL_NZ ([K / k0, N, k0] = 8x48x8 in fp32: each K block of a tile's
// rows is one contiguous run, one DMA burst).
// RUN: ge-opt %s --split-input-file -p 'graph-partition{precision_mode=must_keep_origin_dtype},assign-layouts,convert-graph-to-tile{precision_mode=must_keep_origin_dtype}' | filecheck %s
// RUN: ge-opt %s --split-input-file -p 'graph-partition,assign-layouts,convert-graph-to-tile' | filecheck %s --check-prefix=FP16

// CHECK-LABEL: tile.program "linear"
// CHECK:       tile.tensor {name = "weight_nz", kind = "constant", {{.*}}type = tensor<8x48x8xf32>, layout = "FRACTAL_NZ"
// CHECK:       tile.kernel "k0_matmul" attributes {kind = "matmul"
// CHECK-NEXT:    %[[X:.*]] = tile.load "x" : tensor<2x32x64xf32>
// CHECK-NEXT:    %[[W:.*]] = tile.load "weight_nz" {layout = "FRACTAL_NZ"} : tensor<48x64xf32>
// CHECK-NEXT:    %[[P:.*]] = tile.batch_matmul %[[X]], %[[W]] {transpose_b} : tensor<2x32x64xf32>, tensor<48x64xf32> -> tensor<2x32x48xf32>
// CHECK-NEXT:    %[[B:.*]] = tile.load "{{.*}}" : tensor<48xf32>
// CHECK-NEXT:    %[[Y:.*]] = tile.map ins(%[[P]], %[[B]] : tensor<2x32x48xf32>, tensor<48xf32>) -> tensor<2x32x48xf32>
// CHECK:           arith.addf
// CHECK:           arith.maximumf
// CHECK:         tile.store %[[Y]], "y"
// In force_fp16 the fp32 graph input is cast first; the epilogue writes the
// fp32 graph output itself (no cast kernel after it).
// FP16-LABEL: tile.program "linear"
// FP16:       tile.kernel "k0_cast"
// FP16:         arith.truncf
// FP16:       tile.kernel "k1_matmul"
// FP16:         tile.batch_matmul {{.*}} : tensor<2x32x64xf16>, tensor<48x64xf16> -> tensor<2x32x48xf32>
// FP16-NOT:       arith.truncf
// FP16:         tile.store %{{.*}}, "y" : tensor<2x32x48xf32>
// FP16-NEXT:  }
// FP16-NEXT:  }
func.func @linear(%x: tensor<2x32x64xf32> {ge.name = "x"}) -> (tensor<2x32x48xf32> {ge.name = "y"}) {
  %w = graph.fill 0.125 : tensor<64x48xf32>
  %b = graph.fill 0.5 : tensor<48xf32>
  %y = graph.matmul %x, %w, %b {activation = "relu"} : (tensor<2x32x64xf32>, tensor<64x48xf32>, tensor<48xf32>) -> tensor<2x32x48xf32>
  func.return %y : tensor<2x32x48xf32>
}

// -----

// Two activations (attention context): the right operand is read row-major.
// In fp32 fractals are not transposed on the way to L0B: a transpose kernel
// first writes v^T (an identity product), which the product reads as b^T;
// in force_fp16 load_2d transposes the fp16 fractals, one kernel.
// CHECK-LABEL: tile.program "context"
// CHECK:       tile.kernel "k0_transpose"
// CHECK:         tile.batch_matmul %{{.*}}, %{{.*}} {transpose_b} : tensor<32x32xf32>, tensor<2x16x32xf32> -> tensor<2x32x16xf32>
// CHECK:         tile.store %{{.*}}, "[[VT:.*]]" : tensor<2x32x16xf32>
// CHECK:       tile.kernel "k1_matmul"
// CHECK:         %[[B:.*]] = tile.load "[[VT]]" : tensor<1x2x32x16xf32>
// CHECK:         tile.batch_matmul %{{.*}}, %[[B]] {transpose_b} : tensor<1x2x16x16xf32>, tensor<1x2x32x16xf32> -> tensor<1x2x16x32xf32>
// FP16-LABEL: tile.program "context"
// FP16:       tile.batch_matmul %{{.*}}, %{{.*}} : tensor<1x2x16x16xf16>, tensor<1x2x16x32xf16> -> tensor<1x2x16x32xf32>
func.func @context(%p: tensor<1x2x16x16xf32> {ge.name = "p"}, %v: tensor<1x2x16x32xf32> {ge.name = "v"}) -> (tensor<1x2x16x32xf32> {ge.name = "y"}) {
  %y = graph.matmul %p, %v : (tensor<1x2x16x16xf32>, tensor<1x2x16x32xf32>) -> tensor<1x2x16x32xf32>
  func.return %y : tensor<1x2x16x32xf32>
}

// -----

// Attention's keys: a transpose of the last two dims that only a product
// reads makes no kernel; the product loads its source through permuted
// strides as b^T (fp32 and fp16 alike).
// CHECK-LABEL: tile.program "scores"
// CHECK-NOT:   tile.kernel "{{.*}}transpose
// CHECK:       tile.kernel "k0_matmul"
// CHECK:         %[[K:.*]] = tile.load "k" {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x16x16xf32>
// CHECK:         tile.batch_matmul %{{.*}}, %[[K]] {transpose_b}
// FP16-LABEL: tile.program "scores"
// FP16-NOT:   tile.aicpu
// FP16:       tile.batch_matmul {{.*}} {transpose_b}
func.func @scores(%q: tensor<1x2x16x16xf32> {ge.name = "q"}, %k: tensor<1x16x2x16xf32> {ge.name = "k"}) -> (tensor<1x2x16x16xf32> {ge.name = "y"}) {
  %kt = graph.transpose %k {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x16x2x16xf32>) -> tensor<1x2x16x16xf32>
  %y = graph.matmul %q, %kt : (tensor<1x2x16x16xf32>, tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32>
  func.return %y : tensor<1x2x16x16xf32>
}

// -----

// A transpose that moves the innermost dim (NCHW -> NHWC of a 1x64x4x8 map,
// i.e. x as [1, 64, 32] -> [1, 32, 64]) and that no product reads: one
// kernel, a product with a 32x32 identity, I . x^T.
// CHECK-LABEL: tile.program "to_nhwc"
// CHECK:       tile.tensor {name = "identity", kind = "constant", {{.*}}type = tensor<32x32xf32>
// CHECK:       tile.kernel "k0_transpose" attributes {kind = "transpose"
// CHECK-NEXT:    %[[I:.*]] = tile.load "identity" : tensor<32x32xf32>
// CHECK-NEXT:    %[[X:.*]] = tile.load "x" : tensor<1x64x32xf32>
// CHECK-NEXT:    %[[P:.*]] = tile.batch_matmul %[[I]], %[[X]] {transpose_b} : tensor<32x32xf32>, tensor<1x64x32xf32> -> tensor<1x32x64xf32>
// CHECK-NEXT:    tile.store %[[P]], "y"
func.func @to_nhwc(%x: tensor<1x64x4x8xf32> {ge.name = "x"}) -> (tensor<1x4x8x64xf32> {ge.name = "y"}) {
  %y = graph.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x64x4x8xf32>) -> tensor<1x4x8x64xf32>
  func.return %y : tensor<1x4x8x64xf32>
}

// -----

// Three products of one fp32 graph input (BERT's query, key and value
// projections of the hidden states): in force_fp16 one cast kernel writes
// its fp16 copy and all three read it.
// CHECK-LABEL: tile.program "projections"
// CHECK-NOT:   tile.kernel "{{.*}}_cast"
// CHECK-COUNT-3: tile.load "x" : tensor<1x32x64xf32>
// FP16-LABEL: tile.program "projections"
// FP16:       tile.kernel "k0_cast"
// FP16:         tile.store %{{.*}}, "[[XH:x_fp16]]" : tensor<1x32x64xf16>
// FP16-NOT:   tile.kernel "{{.*}}_cast"
// FP16:       tile.load "[[XH]]" : tensor<1x32x64xf16>
// FP16-NOT:   tile.kernel "{{.*}}_cast"
// FP16:       tile.load "[[XH]]" : tensor<1x32x64xf16>
// FP16-NOT:   tile.kernel "{{.*}}_cast"
// FP16:       tile.load "[[XH]]" : tensor<1x32x64xf16>
func.func @projections(%x: tensor<1x32x64xf32> {ge.name = "x"}) -> (tensor<1x32x48xf32> {ge.name = "q"}, tensor<1x32x48xf32> {ge.name = "k"}, tensor<1x32x48xf32> {ge.name = "v"}) {
  %wq = graph.fill 0.125 : tensor<64x48xf32>
  %wk = graph.fill 0.25 : tensor<64x48xf32>
  %wv = graph.fill 0.5 : tensor<64x48xf32>
  %q = graph.matmul %x, %wq : (tensor<1x32x64xf32>, tensor<64x48xf32>) -> tensor<1x32x48xf32>
  %k = graph.matmul %x, %wk : (tensor<1x32x64xf32>, tensor<64x48xf32>) -> tensor<1x32x48xf32>
  %v = graph.matmul %x, %wv : (tensor<1x32x64xf32>, tensor<64x48xf32>) -> tensor<1x32x48xf32>
  func.return %q, %k, %v : tensor<1x32x48xf32>, tensor<1x32x48xf32>, tensor<1x32x48xf32>
}
