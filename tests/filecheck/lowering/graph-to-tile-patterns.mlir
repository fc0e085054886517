// One lowering pattern / layout decision of convert-graph-to-tile per chunk
// (graph-fuse runs first, as in compile_module: kernels are per fused op;
// tile-select-tiling, tile-distribute and tile-expand-structured after it
// tile the conv kernels and write their loops).
// RUN: ge-opt %s --split-input-file -p 'graph-fuse,graph-partition{precision_mode=must_keep_origin_dtype},convert-graph-to-tile{precision_mode=must_keep_origin_dtype},tile-select-tiling,tile-distribute,tile-expand-structured' | filecheck %s

// A 1x1 conv + relu feeding a padded max-pool: NC1HWC0 maps (C0 = 8 fp32),
// the pool's padding becomes a zero halo on the conv's output (16x16 stored
// as 18x18), FRACTAL_Z weights packed [C1][kh*kw][N1][16][C0], one kernel per
// op, the 1x1 conv direct (both C1 slices' fractals of A loaded as they lie
// in L1, one mmad: the cost model's pick), the pool's UB buffers
// ping-ponged over its tiles (bands of one row over 16 cores, the cost
// model's pick; 9 taps: 8 vector max), transdata only at the input and the output.

// CHECK-LABEL: tile.program "conv_relu_pool" attributes {ge.precision_mode = "must_keep_origin_dtype", ge.transdata = 2 : i64}
// CHECK-DAG:   tile.tensor {name = "[[W:c_w]]", kind = "constant", {{.*}}type = tensor<{{(1x)?}}2x1x1x16x8xf32>
// CHECK-DAG:   tile.tensor {name = "x", kind = "input", {{.*}}type = tensor<1x16x16x16xf32>, layout = "ND"}
// CHECK-DAG:   tile.tensor {name = "[[IN:input_5hd]]", kind = "internal", {{.*}}type = tensor<1x2x16x16x8xf32>, layout = "NC1HWC0"}
// CHECK-DAG:   tile.tensor {name = "[[C:conv]]", kind = "internal", {{.*}}type = tensor<1x2x18x18x8xf32>, layout = "NC1HWC0"}
// CHECK-DAG:   tile.tensor {name = "[[P:pool]]", kind = "internal", {{.*}}type = tensor<1x2x8x8x8xf32>, layout = "NC1HWC0"}
// CHECK-DAG:   tile.tensor {name = "y", kind = "output", {{.*}}type = tensor<1x16x8x8xf32>, layout = "ND"}
// CHECK:       tile.kernel "k0_transdata" attributes {kind = "transdata", source = "graph.transdata at loc(\22x_transdata_nc1hwc0\22)"{{.*}}block_dim = 16 : i64}
// CHECK:         tile.matmul
// CHECK:       tile.kernel "k1_conv" attributes {kind = "conv", source = "graph.conv at loc(\22conv1\22)", {{.*}}block_dim = 16 : i64}
// CHECK-DAG:     tile.alloc {{{.*}}layout = "NC1HWC0", buffers = 1 : i64} : !tile.ref<l1, f32>
// CHECK-DAG:     tile.alloc {{{.*}}layout = "FRACTAL_Z", buffers = 1 : i64} : !tile.ref<l1, f32>
// CHECK-DAG:     %[[L0A:.*]] = tile.alloc {{{.*}}layout = "ZZ", buffers = 2 : i64} : !tile.ref<l0a, f32>
// CHECK-DAG:     %[[L0B:.*]] = tile.alloc {{{.*}}layout = "ZN", buffers = 2 : i64} : !tile.ref<l0b, f32>
// CHECK-DAG:     %[[L0C:.*]] = tile.alloc {{{.*}}layout = "NZ", buffers = 1 : i64} : !tile.ref<l0c, f32>
// CHECK-DAG:     tile.gm {tensor = "[[IN]]"}
// CHECK-DAG:     tile.gm {tensor = "[[W]]"}
// CHECK-DAG:     tile.gm {tensor = "[[C]]"}
// CHECK:         scf.for
// CHECK:           tile.load_fractal %[[L0A]], %{{.*}} {count = 2 : i64, src_stride = 1 : i64}
// CHECK-NEXT:      tile.load_fractal %[[L0B]]
// CHECK-NEXT:      tile.matmul %[[L0C]], %[[L0A]], %[[L0B]] {m = 16 : i64, n = 16 : i64, k = 16 : i64}
// CHECK-NEXT:      tile.copy
// CHECK-NEXT:      tile.vec "relu"
// CHECK:       tile.kernel "k2_max_pool" attributes {kind = "max_pool", {{.*}}block_dim = 16 : i64}
// CHECK:         tile.alloc {{{.*}}layout = "NC1HWC0", buffers = 2 : i64} : !tile.ref<ub, f32>
// CHECK:         tile.gm {tensor = "[[C]]"}
// CHECK:         tile.gm {tensor = "[[P]]"}
// CHECK-COUNT-8: tile.vec "max"
// CHECK:         } {tile.pipeline = "ping-pong"}
// CHECK:       tile.kernel "k3_transdata" attributes {kind = "transdata", source = "graph.transdata at loc(\22pool1_transdata_nchw\22)"{{.*}}block_dim = 4 : i64}
// CHECK-NOT:   tile.kernel
func.func @conv_relu_pool(%x: tensor<1x16x16x16xf32> {ge.name = "x"}) -> (tensor<1x16x8x8xf32> {ge.name = "y"}) {
  %w = graph.fill 0.5 : tensor<16x16x1x1xf32>
  %c = graph.conv %x, %w {activation = "relu"} : tensor<1x16x16x16xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x16x16xf32> loc("conv1")
  %p = graph.max_pool %c {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x16x16xf32>) -> tensor<1x16x8x8xf32> loc("pool1")
  func.return %p : tensor<1x16x8x8xf32>
}

// -----

// Global average pool (tree of vector adds, x 1/HW), a flatten that is a
// view (NC1HWC0 with H*W = 1 is ND: no kernel), gemm with ZN-packed weights
// [K1][N1][16][k0] on the cube, softmax on the vector unit; one transdata.

// CHECK-LABEL: tile.program "gap_flatten_gemm_softmax" attributes {{{.*}}ge.transdata = 1 : i64}
// CHECK-DAG:   tile.tensor {name = "[[W:gemm_w]]", kind = "constant", {{.*}}type = tensor<2x1x16x8xf32>
// CHECK-DAG:   tile.tensor {name = "[[G:gap]]", kind = "internal", {{.*}}type = tensor<1x2x1x1x8xf32>, layout = "NC1HWC0"}
// CHECK-DAG:   tile.tensor {name = "[[M:gemm]]", kind = "internal", {{.*}}type = tensor<10xf32>, layout = "ND"}
// CHECK-DAG:   tile.tensor {name = "y", kind = "output", {{.*}}type = tensor<1x10xf32>, layout = "ND"}
// CHECK:       tile.kernel "k0_transdata"
// CHECK:       tile.kernel "k1_global_avg_pool" attributes {kind = "global_avg_pool", {{.*}}block_dim = 1 : i64}
// CHECK:         tile.vec "add"
// CHECK:         tile.vec "muls" {{.*}}scalar = 3.906250e-03
// CHECK-NOT:   tile.kernel {{.*}}flatten
// CHECK:       tile.kernel "k2_gemm" attributes {kind = "gemm", source = "graph.gemm at loc(\22fc\22)"{{.*}}block_dim = 1 : i64}
// CHECK-DAG:     tile.gm {tensor = "[[G]]"}
// CHECK-DAG:     tile.gm {tensor = "[[W]]"}
// CHECK-DAG:     tile.gm {tensor = "[[M]]"}
// CHECK:         tile.matmul
// CHECK:       tile.kernel "k3_softmax" attributes {kind = "softmax", {{.*}}block_dim = 1 : i64}
// CHECK:         tile.reduce "max"
// CHECK:         tile.vec "sub"
// CHECK:         tile.vec "exp"
// CHECK:         tile.reduce "sum"
// CHECK:         tile.vec "div"
// CHECK:         tile.gm {tensor = "y"}
// CHECK-NOT:   tile.kernel
func.func @gap_flatten_gemm_softmax(%x: tensor<1x16x16x16xf32> {ge.name = "x"}) -> (tensor<1x10xf32> {ge.name = "y"}) {
  %w = graph.fill 0.5 : tensor<16x10xf32>
  %g = graph.global_avg_pool %x : (tensor<1x16x16x16xf32>) -> tensor<1x16x1x1xf32> loc("gap")
  %f = graph.flatten %g {axis = 1 : i64} : (tensor<1x16x1x1xf32>) -> tensor<1x16xf32> loc("flat")
  %m = graph.gemm %f, %w : (tensor<1x16xf32>, tensor<16x10xf32>) -> tensor<1x10xf32> loc("fc")
  %s = graph.softmax %m {axis = 1 : i64} : (tensor<1x10xf32>) -> tensor<1x10xf32> loc("prob")
  func.return %s : tensor<1x10xf32>
}

// -----

// Concat along channels is a view: both convs write their C1 slices of one
// 4-slice NC1HWC0 tensor (no concat kernel, no copy). The 3x3 conv pads on
// the fly: the input map has no halo; each band copies its 3 window rows
// clamped into the map to L1 (5 rows: one spare above and below), loops
// that run only at the top and bottom band copy a row of zeros (filled once
// in UB) over the window rows outside the map, and load3d pads left and right.
// One band of one row per core: the core's index is its band.

// CHECK-LABEL: tile.program "concat_in_place"
// CHECK-DAG:   tile.tensor {name = "[[IN:input_5hd]]", kind = "internal", {{.*}}type = tensor<1x2x16x16x8xf32>, layout = "NC1HWC0"}
// CHECK-DAG:   tile.tensor {name = "[[CAT:conv]]", kind = "internal", {{.*}}type = tensor<1x4x16x16x8xf32>, layout = "NC1HWC0"}
// CHECK:       tile.kernel "k1_conv" attributes {kind = "conv", source = "graph.conv at loc(\22expand1x1\22)"
// CHECK-NOT:     tile.dup
// CHECK:         tile.gm {tensor = "[[CAT]]"}
// CHECK:       tile.kernel "k2_conv" attributes {kind = "conv", source = "graph.conv at loc(\22expand3x3\22)"
// CHECK:         %[[L1:.*]] = tile.alloc {shape = array<i64: 1280>, layout = "NC1HWC0", buffers = 1 : i64} : !tile.ref<l1, f32>
// CHECK:         tile.gm {tensor = "[[CAT]]"}
// CHECK:         %[[ZEROS:.*]] = tile.alloc {shape = array<i64: 128>, layout = "ND", buffers = 1 : i64} : !tile.ref<ub, f32>
// CHECK-NEXT:    tile.dup %[[ZEROS]] {count = 128 : i64, value = 0.000000e+00 : f64}
// CHECK:         %[[BAND:.*]] = tile.block_idx : index
// CHECK-NEXT:      %[[FIRST:.*]] = arith.addi %[[BAND]], %{{.*}} : index
// CHECK-NEXT:      %[[LO:.*]] = arith.maxsi %[[FIRST]], %{{.*}} : index
// CHECK-NEXT:      arith.minsi %[[LO]], %{{.*}} : index
// CHECK:           tile.copy %{{.*}}, %{{.*}} {shape = array<i64: 2, 3, 128>, dst_strides = array<i64: 640, 128, 1>, src_strides = array<i64: 2048, 128, 1>} : !tile.ref<l1, f32>, !tile.ref<gm, f32>
// CHECK:           scf.for
// CHECK:             tile.copy %{{.*}}, %[[ZEROS]] {shape = array<i64: 2, 128>, dst_strides = array<i64: 640, 1>, src_strides = array<i64: 0, 1>} : !tile.ref<l1, f32>, !tile.ref<ub, f32>
// CHECK:           scf.for
// CHECK:             tile.copy %{{.*}}, %[[ZEROS]]
// CHECK:           tile.im2col %{{.*}}, %{{.*}} {params = array<i64: 3, 16, 3, 3, 1, 1, 0, 0, 1, 1, 1, 1, 0, 16>}
// CHECK-NOT:   tile.kernel {{.*}}concat
// CHECK:       tile.kernel "k3_transdata" attributes {kind = "transdata", source = "graph.transdata at loc(\22cat_transdata_nchw\22)"
// CHECK:         tile.gm {tensor = "[[CAT]]"}
func.func @concat_in_place(%x: tensor<1x16x16x16xf32> {ge.name = "x"}) -> (tensor<1x32x16x16xf32> {ge.name = "y"}) {
  %w = graph.fill 0.5 : tensor<16x16x1x1xf32>
  %v = graph.fill 0.25 : tensor<16x16x3x3xf32>
  %a = graph.conv %x, %w {activation = "relu"} : tensor<1x16x16x16xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x16x16xf32> loc("expand1x1")
  %b = graph.conv %x, %v {pads = array<i64: 1, 1, 1, 1>, activation = "relu"} : tensor<1x16x16x16xf32>, tensor<16x16x3x3xf32> -> tensor<1x16x16x16xf32> loc("expand3x3")
  %c = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x16x16x16xf32>, tensor<1x16x16x16xf32>) -> tensor<1x32x16x16xf32> loc("cat")
  func.return %c : tensor<1x32x16x16xf32>
}

// -----

// Batch norm (no conv before it) becomes the per-channel scale and shift it
// computes (constants broadcast along pixels with stride 0), which loop
// fusion takes in with the relu and the residual add: one graph.fusion, one
// kernel, in NC1HWC0, transdata only at the boundaries. It is a
// tile.elementwise: the cost model spreads its 32 one-row bands over 32
// cores, the map body writes in place into a UB band.

// CHECK-LABEL: tile.program "bn_relu_residual" attributes {{{.*}}ge.transdata = 2 : i64}
// CHECK-DAG:   tile.tensor {name = "[[S:chan]]", kind = "constant", {{.*}}type = tensor<16xf32>
// CHECK-DAG:   tile.tensor {name = "[[T:chan_1]]", kind = "constant", {{.*}}type = tensor<16xf32>
// CHECK-DAG:   tile.tensor {name = "[[F:fusion]]", kind = "internal", {{.*}}layout = "NC1HWC0"}
// CHECK:       tile.kernel "k0_transdata"
// CHECK:       tile.kernel "k1_elementwise" attributes {kind = "elementwise", source = "graph.fusion at loc(\22bn\22)", absorbed = ["bn", "relu", "res"]{{.*}}tiling = #tile.elementwise_tiling<band_rows = 1, cores = 32, cycles = {{[0-9]+}}>, block_dim = 32 : i64}
// CHECK:         tile.gm {tensor = "[[S]]"}
// CHECK:         tile.gm {tensor = "[[T]]"}
// CHECK:         tile.gm {tensor = "[[F]]"}
// CHECK:         tile.vec "mul" %[[Y:.*]], %[[X:.*]], %{{.*}} {shape = array<i64: 16, 8>, strides = array<i64: 8, 1, 8, 1, 0, 1>}
// CHECK-NEXT:    tile.vec "add" %[[Y]], %[[Y]], %{{.*}} {shape = array<i64: 16, 8>, strides = array<i64: 8, 1, 8, 1, 0, 1>}
// CHECK-NEXT:    tile.vec "relu" %[[Y]], %[[Y]]
// CHECK-NEXT:    tile.vec "add" %{{.*}}, %[[Y]], %[[X]]
// CHECK:       } {tile.pipeline = "ping-pong"}
// CHECK:       tile.kernel "k2_transdata"
// CHECK-NOT:   tile.kernel
func.func @bn_relu_residual(%x: tensor<1x16x16x16xf32> {ge.name = "x"}) -> (tensor<1x16x16x16xf32> {ge.name = "y"}) {
  %s = graph.fill 2.0 : tensor<16xf32>
  %t = graph.fill 0.5 : tensor<16xf32>
  %m = graph.fill 0.0 : tensor<16xf32>
  %v = graph.fill 1.0 : tensor<16xf32>
  %n = graph.batch_norm %x, %s, %t, %m, %v {epsilon = 0.0 : f32} : (tensor<1x16x16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x16x16x16xf32> loc("bn")
  %r = graph.relu %n : (tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32> loc("relu")
  %y = graph.add %r, %x : (tensor<1x16x16x16xf32>, tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32> loc("res")
  func.return %y : tensor<1x16x16x16xf32>
}

// -----

// A pre-activation (DenseNet's batch norm and ReLU before a conv, its only
// reader): the conv computes it on its input's way to L1 when the conv cost
// model says that costs less than a kernel of its own (conv.py,
// `stage_pays`; here each band is loaded once). No elementwise kernel and no
// stored map: the band's 16 C1 slices go GM -> UB in one copy
// (`stage_slices`), and each step of the batch norm and ReLU is one vector
// op over them, each slice reading its 8 channels' scale and shift (block
// stride 0 over its pixels) from two vectors copied to UB whole, once per
// core; the conv names all three model nodes.

// CHECK-LABEL: tile.program "preactivation"
// CHECK-NOT:   tile.kernel "{{.*}}elementwise"
// CHECK:       tile.kernel "k1_conv" attributes {{{.*}}absorbed = ["bn", "relu", "conv"], tiling = #tile.conv_tiling<{{.*}}stage_slices = 16, cycles = {{[0-9]+}}>
// CHECK:         %[[STAGE:.*]] = tile.alloc {shape = array<i64: 7168>, layout = "NC1HWC0", buffers = 2 : i64} : !tile.ref<ub, f32>
// CHECK-NEXT:    %[[SCALE:.*]] = tile.alloc {shape = array<i64: 256>, layout = "ND", buffers = 1 : i64} : !tile.ref<ub, f32>
// CHECK-NEXT:    %[[S:.*]] = tile.gm {tensor = "chan"}
// CHECK-NEXT:    tile.copy %[[SCALE]], %[[S]] {shape = array<i64: 32, 8>
// CHECK-NEXT:    %[[SHIFT:.*]] = tile.alloc {shape = array<i64: 256>, layout = "ND", buffers = 1 : i64} : !tile.ref<ub, f32>
// CHECK-NEXT:    %[[T:.*]] = tile.gm {tensor = "chan_1"}
// CHECK-NEXT:    tile.copy %[[SHIFT]], %[[T]] {shape = array<i64: 32, 8>
// CHECK:         scf.for
// CHECK:           tile.copy %[[STAGE]], %{{.*}} {shape = array<i64: 16, 2, 224>, {{.*}} : !tile.ref<ub, f32>, !tile.ref<gm, f32>
// CHECK:           %[[S0:.*]] = tile.at %[[SCALE]] + %{{.*}} {offset = 0 : i64}
// CHECK:           %[[T0:.*]] = tile.at %[[SHIFT]] + %{{.*}} {offset = 0 : i64}
// CHECK:           tile.vec "mul" %[[STAGE]], %[[STAGE]], %[[S0]] {shape = array<i64: 16, 56, 8>, strides = array<i64: 448, 8, 1, 448, 8, 1, 8, 0, 1>}
// CHECK-NEXT:      tile.vec "add" %[[STAGE]], %[[STAGE]], %[[T0]] {shape = array<i64: 16, 56, 8>, strides = array<i64: 448, 8, 1, 448, 8, 1, 8, 0, 1>}
// CHECK-NEXT:      tile.vec "relu" %[[STAGE]], %[[STAGE]] {shape = array<i64: 7168>
// CHECK:           tile.copy %{{.*}}, %[[STAGE]] {shape = array<i64: 16, 448>, {{.*}} : !tile.ref<l1, f32>, !tile.ref<ub, f32>
// CHECK:         tile.matmul
// CHECK:       tile.kernel "k2_transdata"
// CHECK-NOT:   tile.kernel
func.func @preactivation(%x: tensor<1x256x28x28xf32> {ge.name = "x"}) -> (tensor<1x128x28x28xf32> {ge.name = "y"}) {
  %s = graph.fill 3.0 : tensor<256xf32>
  %t = graph.fill 0.5 : tensor<256xf32>
  %m = graph.fill 0.25 : tensor<256xf32>
  %v = graph.fill 1.0 : tensor<256xf32>
  %w = graph.fill 0.01 : tensor<128x256x1x1xf32>
  %n = graph.batch_norm %x, %s, %t, %m, %v {epsilon = 0.0 : f32} : (tensor<1x256x28x28xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>) -> tensor<1x256x28x28xf32> loc("bn")
  %r = graph.relu %n : (tensor<1x256x28x28xf32>) -> tensor<1x256x28x28xf32> loc("relu")
  %y = graph.conv %r, %w : tensor<1x256x28x28xf32>, tensor<128x256x1x1xf32> -> tensor<1x128x28x28xf32> loc("conv")
  func.return %y : tensor<1x128x28x28xf32>
}

// -----

// The same on a DenseNet transition's shape: its core grid loads each band
// on several cores (a column of output-channel blocks each), so staging
// would redo the batch norm there; the cost model keeps it a kernel.

// CHECK-LABEL: tile.program "transition"
// CHECK:       tile.kernel "k1_elementwise" attributes {{{.*}}absorbed = ["bn", "relu"]
// CHECK:       tile.kernel "k2_conv" attributes {kind = "conv", source = "graph.conv at loc(\22conv\22)"{{.*}}stage_slices = 1, cycles
// CHECK:       tile.kernel "k3_transdata"
func.func @transition(%x: tensor<1x1024x14x14xf32> {ge.name = "x"}) -> (tensor<1x512x14x14xf32> {ge.name = "y"}) {
  %s = graph.fill 3.0 : tensor<1024xf32>
  %t = graph.fill 0.5 : tensor<1024xf32>
  %m = graph.fill 0.25 : tensor<1024xf32>
  %v = graph.fill 1.0 : tensor<1024xf32>
  %w = graph.fill 0.01 : tensor<512x1024x1x1xf32>
  %n = graph.batch_norm %x, %s, %t, %m, %v {epsilon = 0.0 : f32} : (tensor<1x1024x14x14xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>) -> tensor<1x1024x14x14xf32> loc("bn")
  %r = graph.relu %n : (tensor<1x1024x14x14xf32>) -> tensor<1x1024x14x14xf32> loc("relu")
  %y = graph.conv %r, %w : tensor<1x1024x14x14xf32>, tensor<512x1024x1x1xf32> -> tensor<1x512x14x14xf32> loc("conv")
  func.return %y : tensor<1x512x14x14xf32>
}

// -----

// Squeeze-excite on the map kernels: SiLU (x * sigmoid(x)) and the gate
// multiply are one loop fusion, one tile.elementwise; the sigmoid's map body
// runs on a temporary (negate, exp, +1, reciprocal, in place), the products
// in place into the band, and the computed [1, C, 1, 1] gate goes to UB
// whole before the loop, read one C0 block per slice and broadcast over the
// pixels (stride 0).
// CHECK-LABEL: tile.program "se"
// CHECK:       tile.kernel "k{{[0-9]+}}_elementwise" attributes {kind = "elementwise", source = "graph.fusion", absorbed = ["graph.sigmoid", "graph.mul", "graph.mul"]
// CHECK:         tile.copy %[[GW:.*]], %{{.*}} {shape = array<i64: 2, 8>
// CHECK:         scf.for
// CHECK:         tile.copy %[[X:.*]], %{{.*}} {shape = array<i64: 1, 32>
// CHECK:         %[[G:.*]] = tile.at %[[GW]] + %{{.*}} {offset = 0 : i64} : !tile.ref<ub, f32>
// CHECK:         tile.vec "muls" %[[T:.*]], %[[X]] {{.*}}scalar = -1.000000e+00
// CHECK-NEXT:    tile.vec "exp" %[[T]], %[[T]]
// CHECK-NEXT:    tile.vec "adds" %[[T]], %[[T]] {{.*}}scalar = 1.000000e+00
// CHECK-NEXT:    tile.vec "rec" %[[T]], %[[T]]
// CHECK-NEXT:    tile.vec "mul" %[[X]], %[[X]], %[[T]]
// CHECK-NEXT:    tile.vec "mul" %{{.*}}, %[[X]], %[[G]] {shape = array<i64: 4, 8>, strides = array<i64: 8, 1, 8, 1, 0, 1>}
func.func @se(%x: tensor<1x16x4x4xf32> {ge.name = "x"}, %g: tensor<1x16x1x1xf32> {ge.name = "g"}) -> (tensor<1x16x4x4xf32> {ge.name = "y"}) {
  %w = graph.fill 0.1 : tensor<16x16x1x1xf32>
  %c = graph.conv %x, %w : tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x4x4xf32>
  %s = graph.sigmoid %c : (tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %m = graph.mul %c, %s : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %v = graph.conv %g, %w : tensor<1x16x1x1xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x1x1xf32>
  %y = graph.mul %m, %v : (tensor<1x16x4x4xf32>, tensor<1x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  func.return %y : tensor<1x16x4x4xf32>
}

// -----

// A channel split of a map in whole C0 slices (ShuffleNetV2) makes no
// kernel: the second half is the conv's storage from its second C1 slice
// (offset 1 slice x 4x4 pixels x C0 = 128 elements).
// CHECK-LABEL: tile.program "split"
// CHECK:       tile.kernel "k1_conv"
// CHECK-NOT:   tile.kernel "{{.*}}split
// CHECK:       tile.kernel "k2_conv"
// CHECK:         %[[SRC:.*]] = tile.gm {tensor = "conv"}
// CHECK:         tile.at %[[SRC]] + %{{.*}} {offset = 128 : i64}
// CHECK:       tile.kernel "k3_transdata"
func.func @split(%x: tensor<1x16x4x4xf32> {ge.name = "x"}) -> (tensor<1x8x4x4xf32> {ge.name = "y"}) {
  %w = graph.fill 0.1 : tensor<16x16x1x1xf32>
  %c = graph.conv %x, %w : tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32> -> tensor<1x16x4x4xf32>
  %a, %b = graph.split %c {axis = 1 : i64, split = array<i64: 8, 8>} : (tensor<1x16x4x4xf32>) -> (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>)
  %v = graph.fill 0.1 : tensor<8x8x1x1xf32>
  %y = graph.conv %b, %v : tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32> -> tensor<1x8x4x4xf32>
  func.return %y : tensor<1x8x4x4xf32>
}

// -----

// LRN is one cube kernel and stores no map but its result: the channel
// window's sum is a 1x1 conv with a banded weight whose input band is
// squared on its way to L1 (GM -> UB, x * x, UB -> L1, its C1 slices in
// chunks of at most an eighth of UB -- here all three in one copy --,
// ping-ponged), and whose epilogue takes (bias + sum)^-beta and multiplies
// by x, read again tile by tile.

// CHECK-LABEL: tile.program "lrn"
// CHECK-NOT:   tile.tensor {name = "lrn_{{.*}}", kind = "internal"
// CHECK:       tile.kernel "k1_conv" attributes {kind = "conv", source = "graph.lrn at loc(\22norm1\22)", op_type = "lrn"
// CHECK-DAG:     %[[L1:.*]] = tile.alloc {{{.*}}layout = "NC1HWC0", buffers = 1 : i64} : !tile.ref<l1, f32>
// CHECK-DAG:     %[[STAGE:.*]] = tile.alloc {{{.*}}layout = "NC1HWC0", buffers = 2 : i64} : !tile.ref<ub, f32>
// CHECK-DAG:     %[[X:.*]] = tile.gm {tensor = "input_5hd"}
// CHECK:         scf.for
// CHECK:           tile.copy %[[STAGE]], %{{.*}} {shape = array<i64: 3, 1, 64>, {{.*}} : !tile.ref<ub, f32>, !tile.ref<gm, f32>
// CHECK-NEXT:      tile.vec "mul" %[[STAGE]], %[[STAGE]], %[[STAGE]] {shape = array<i64: 192>
// CHECK-NOT:       tile.vec
// CHECK:           tile.copy %{{.*}}, %[[STAGE]] {shape = array<i64: 3, 64>, {{.*}} : !tile.ref<l1, f32>, !tile.ref<ub, f32>
// CHECK-NEXT:    } {tile.pipeline = "ping-pong"}
// CHECK:         tile.im2col
// CHECK:         tile.matmul
// CHECK:         tile.copy %[[OUT:.*]], %{{.*}} : !tile.ref<ub, f32>, !tile.ref<l0c, f32>
// CHECK:         tile.copy %[[RES:.*]], %{{.*}} : !tile.ref<ub, f32>, !tile.ref<gm, f32>
// CHECK-NEXT:    tile.vec "adds" %[[OUT]], %[[OUT]] {{.*}}scalar = 1.000000e+00
// CHECK-NEXT:    tile.vec "ln"
// CHECK-NEXT:    tile.vec "muls" {{.*}}scalar = -7.500000e-01
// CHECK-NEXT:    tile.vec "exp"
// CHECK-NEXT:    tile.vec "mul" %[[OUT]], %[[OUT]], %[[RES]]
// CHECK:         tile.copy %{{.*}}, %[[OUT]] {{.*}} : !tile.ref<gm, f32>, !tile.ref<ub, f32>
// CHECK:       tile.kernel "k2_transdata"
// CHECK-NOT:   tile.kernel
func.func @lrn(%x: tensor<1x24x8x8xf32> {ge.name = "x"}) -> (tensor<1x24x8x8xf32> {ge.name = "y"}) {
  %y = graph.lrn %x {size = 5 : i64, alpha = 1.000000e-04 : f32, beta = 7.500000e-01 : f32, bias = 1.000000e+00 : f32} : (tensor<1x24x8x8xf32>) -> tensor<1x24x8x8xf32> loc("norm1")
  func.return %y : tensor<1x24x8x8xf32>
}

// -----

// Depthwise over 24 channels: the groups gather into superblocks of 16
// channels (whole fractals; in fp32 two C0 slices of input each), the last
// padded with 8 empty groups whose channels the maps store anyway (whole
// fractals): two block-diagonal 16x16 convs, not one dense 24x24 (32x32
// stored) conv with 4x the weights and the cube work.
// CHECK-LABEL: tile.program "depthwise"
// CHECK:       tile.tensor {name = "y_w", kind = "constant", {{.*}}type = tensor<2x2x9x1x16x8xf32>
// CHECK:       tile.tensor {name = "input_5hd", kind = "internal", {{.*}}type = tensor<1x4x8x8x8xf32>
// CHECK:       tile.kernel "k1_conv" attributes {kind = "conv", source = "graph.conv at loc(\22dw\22)"
func.func @depthwise(%x: tensor<1x24x8x8xf32> {ge.name = "x"}) -> (tensor<1x24x8x8xf32> {ge.name = "y"}) {
  %w = graph.fill 0.1 : tensor<24x1x3x3xf32>
  %y = graph.conv %x, %w {group = 24 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<1x24x8x8xf32>, tensor<24x1x3x3xf32> -> tensor<1x24x8x8xf32> loc("dw")
  func.return %y : tensor<1x24x8x8xf32>
}

// -----

// Transdata of a small map (40 channels of 2x3 pixels, fp32): the pieces
// (a row of pixels x 16 channels) spread over cores, 6 here; each piece's
// channel runs come in by one DMA into UB (3-pixel rows: padded, the rest of
// the block zero), then into ZN fractals in L1 on chip; the last 8-channel
// block, after the whole ones, clears the stale rows of L1 first. Out: 16-
// pixel chunks by 16 channels, 3 pieces; the product's rows leave UB in one
// padded copy of 6-pixel rows.

// CHECK-LABEL: tile.program "small_map"
// CHECK:       tile.kernel "k0_transdata" attributes {{{.*}}in_formats = "NCHW", {{.*}}out_formats = "NC1HWC0", tiling = #tile.transdata_tiling<rows = 2, width = 3, chunk = 16, cores = 6, cycles = {{[0-9]+}}>, block_dim = 6 : i64}
// CHECK:         %[[STAGED:.*]] = tile.alloc {shape = array<i64: 256>, layout = "ND", buffers = 1 : i64} : !tile.ref<ub, f32>
// CHECK-NEXT:    %[[ZERO:.*]] = tile.alloc {shape = array<i64: 256>, layout = "ND", buffers = 1 : i64} : !tile.ref<ub, f32>
// CHECK:         scf.for
// CHECK:           tile.copy %[[STAGED]], %{{.*}} {shape = array<i64: 16, 3>, dst_strides = array<i64: 16, 1>, src_strides = array<i64: 6, 1>}
// CHECK-NEXT:      tile.copy %[[L1B:.*]], %[[STAGED]] {shape = array<i64: 16, 1, 8>, dst_strides = array<i64: 8, 128, 1>, src_strides = array<i64: 16, 8, 1>}
// CHECK:           tile.matmul
// CHECK:           tile.copy %{{.*}} {shape = array<i64: 2, 3, 8>, dst_strides = array<i64: 48, 8, 1>, src_strides = array<i64: 8, 16, 1>}
// CHECK:         scf.for
// CHECK:           tile.copy %[[L1B]], %[[ZERO]]
// CHECK:           tile.copy %[[STAGED]], %{{.*}} {shape = array<i64: 8, 3>,
// CHECK:           tile.copy %{{.*}} {shape = array<i64: 1, 3, 8>,
// CHECK:       tile.kernel "k2_transdata" attributes {{{.*}}in_formats = "NC1HWC0", {{.*}}out_formats = "NCHW", tiling = #tile.transdata_tiling<rows = 1, width = 6, chunk = 16, cores = 3, cycles = {{[0-9]+}}>, block_dim = 3 : i64}
// CHECK:         scf.for
// CHECK:           tile.copy %{{.*}} {shape = array<i64: 16, 6>, dst_strides = array<i64: 6, 1>, src_strides = array<i64: 16, 1>} : !tile.ref<gm, f32>, !tile.ref<ub, f32>
// CHECK:         } {tile.pipeline = "ping-pong"}
// CHECK:         scf.for
// CHECK:           tile.copy %{{.*}} {shape = array<i64: 8, 6>, dst_strides = array<i64: 6, 1>, src_strides = array<i64: 16, 1>} : !tile.ref<gm, f32>, !tile.ref<ub, f32>
func.func @small_map(%x: tensor<1x40x2x3xf32> {ge.name = "x"}) -> (tensor<1x40x2x3xf32> {ge.name = "y"}) {
  %r = graph.relu %x : (tensor<1x40x2x3xf32>) -> tensor<1x40x2x3xf32> loc("relu")
  func.return %r : tensor<1x40x2x3xf32>
}

// -----

// A channel split of a map at 12 of 24 fp32 channels (C0 = 8: not whole
// slices, ShuffleNetV2's in fp16): each part a 1x1 conv with a 0/1
// selection matrix on the cube (packed weights [1][C1 = 3][1][N1 = 1][16][8]),
// into a map of its own that the relu after reads; transdata only at the
// input and the outputs.

// CHECK-LABEL: tile.program "unaligned_split" attributes {{{.*}}ge.transdata = 3 : i64}
// CHECK-DAG:   tile.tensor {name = "select_w", kind = "constant", {{.*}}type = tensor<1x3x1x1x16x8xf32>
// CHECK-DAG:   tile.tensor {name = "channels", kind = "internal", {{.*}}type = tensor<1x2x4x4x8xf32>, layout = "NC1HWC0"}
// CHECK:       tile.kernel "k2_conv" attributes {kind = "conv", source = "graph.split at loc(\22split\22)"
// CHECK:       tile.kernel "k3_conv" attributes {kind = "conv", source = "graph.split at loc(\22split\22)"
// CHECK:       tile.kernel "k4_elementwise" {{.*}}in_formats = "NC1HWC0"
func.func @unaligned_split(%x: tensor<1x8x4x4xf32> {ge.name = "x"}) -> (tensor<1x12x4x4xf32> {ge.name = "a"}, tensor<1x12x4x4xf32> {ge.name = "b"}) {
  %w = graph.fill 0.5 : tensor<24x8x1x1xf32>
  %c = graph.conv %x, %w : tensor<1x8x4x4xf32>, tensor<24x8x1x1xf32> -> tensor<1x24x4x4xf32> loc("conv")
  %s:2 = graph.split %c {axis = 1 : i64, split = array<i64: 12, 12>} : (tensor<1x24x4x4xf32>) -> (tensor<1x12x4x4xf32>, tensor<1x12x4x4xf32>) loc("split")
  %a = graph.relu %s#0 : (tensor<1x12x4x4xf32>) -> tensor<1x12x4x4xf32> loc("relu_a")
  %b = graph.relu %s#1 : (tensor<1x12x4x4xf32>) -> tensor<1x12x4x4xf32> loc("relu_b")
  func.return %a, %b : tensor<1x12x4x4xf32>, tensor<1x12x4x4xf32>
}

// -----

// A strided 1x1 conv (ResNet-50's last projection shortcut, 1024 -> 2048
// channels on 14x14) reads every second pixel of every second row: its band
// holds only those (a quarter of the map's bytes, one DMA burst per pixel),
// the im2col over them has stride 1; 32 cores, two blocks of 32 output
// channels each, share the band's loads.

// CHECK-LABEL: tile.program "strided_projection"
// CHECK:       tile.kernel "k1_conv" attributes {{{.*}}tiling = #tile.conv_tiling<band_rows = 7, tile_fractals = 2, {{.*}}, cores = [1, 32], per_core = [1, 2], stationary = band, steps = [2, 2], slices_per_mmad = 0, panels = {{[0-9]+}}, stage_slices = 1, cycles = {{[0-9]+}}>, block_dim = 32 : i64}
// CHECK:         %[[BAND:.*]] = tile.alloc {shape = array<i64: 50176>, layout = "NC1HWC0", buffers = 1 : i64} : !tile.ref<l1, f32>
// CHECK:         %[[IN:.*]] = tile.gm {tensor = "input_5hd"}
// CHECK:         tile.copy %[[BAND]], %[[IN]] {shape = array<i64: 128, 7, 7, 8>, dst_strides = array<i64: 392, 56, 8, 1>, src_strides = array<i64: 1568, 224, 16, 1>}
// CHECK:         tile.im2col {{.*}} {params = array<i64: 7, 7, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 64>}
func.func @strided_projection(%x: tensor<1x1024x14x14xf32> {ge.name = "x"}) -> (tensor<1x2048x7x7xf32> {ge.name = "y"}) {
  %w = graph.fill 0.5 : tensor<2048x1024x1x1xf32>
  %c = graph.conv %x, %w {strides = array<i64: 2, 2>} : tensor<1x1024x14x14xf32>, tensor<2048x1024x1x1xf32> -> tensor<1x2048x7x7xf32> loc("proj")
  func.return %c : tensor<1x2048x7x7xf32>
}

// -----

// A 1x1 conv at stride 1 (a bottleneck's 512 -> 128 reduction on a 7x7
// map): output pixel i reads band pixel i, so A's fractals (16 pixels of
// one C1 slice, C0 = 8 fp32) lie whole in L1; each slice's band is padded
// to whole fractals (7 pixels -> 16: the rest feeds rows of A that are
// never stored), and one load_fractal moves a row of ZZ fractals across
// the slices, one loads the weights, one mmad takes all of K; the weights
// stay in L1 while each core's two bands stream.

// CHECK-LABEL: tile.program "direct_1x1"
// CHECK:       tile.kernel "k1_conv" attributes {{{.*}}tiling = #tile.conv_tiling<band_rows = 1, tile_fractals = 1, {{.*}}, per_core = [2, 1], stationary = weights, steps = [1, 1], slices_per_mmad = 64, panels = 1, stage_slices = 1, cycles = {{[0-9]+}}>
// CHECK:         %[[BAND:.*]] = tile.alloc {shape = array<i64: 8192>, layout = "NC1HWC0", buffers = 1 : i64} : !tile.ref<l1, f32>
// CHECK:         %[[L0A:.*]] = tile.alloc {shape = array<i64: 8192>, layout = "ZZ", buffers = 2 : i64} : !tile.ref<l0a, f32>
// CHECK:         %[[L0B:.*]] = tile.alloc {shape = array<i64: 8192>, layout = "ZN", buffers = 2 : i64} : !tile.ref<l0b, f32>
// CHECK:         scf.for
// CHECK:           tile.copy %{{.*}}, %{{.*}} {shape = array<i64: 64, 1, 56>, dst_strides = array<i64: 128, 56, 1>, src_strides = array<i64: 392, 56, 1>}
// CHECK:           scf.for
// CHECK:             tile.load_fractal %[[L0A]], %{{.*}} {count = 64 : i64, src_stride = 1 : i64}
// CHECK-NEXT:        tile.load_fractal %[[L0B]], %{{.*}} {count = 64 : i64, src_stride = 1 : i64}
// CHECK-NEXT:        tile.matmul %{{.*}}, %[[L0A]], %[[L0B]] {m = 16 : i64, n = 16 : i64, k = 512 : i64}
// CHECK-NOT:         tile.im2col
func.func @direct_1x1(%x: tensor<1x512x7x7xf32> {ge.name = "x"}) -> (tensor<1x128x7x7xf32> {ge.name = "y"}) {
  %w = graph.fill 0.5 : tensor<128x512x1x1xf32>
  %c = graph.conv %x, %w : tensor<1x512x7x7xf32>, tensor<128x512x1x1xf32> -> tensor<1x128x7x7xf32> loc("reduce")
  func.return %c : tensor<1x128x7x7xf32>
}
