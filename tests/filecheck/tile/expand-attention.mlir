// tile.attention (one flash-attention kernel): tile-select-tiling gives it a
// tile of query rows of one head with whole rows of values (TILING), and
// tile-expand-structured (tile/transforms/expand_attention.py) turns each
// tile into a loop over blocks of keys: Q -> L1 (fractals) -> L0A once; per
// key block S = Q . K_blk^T on the cube (K -> L1 -> L0B, mmad into L0C,
// L0C -> UB), the scale and mask blocks on the vector unit, the row max,
// exp(S - max) (later blocks first rescale by exp(m - m')), P back to L1 as
// the left operand of P . V_blk (V -> L1 -> L0B, its copy issued after the
// mask blocks' loads), the row sums; finally the
// result divided by the row sums. The scores never reach GM. A tile.attention
// that does not read tile.loads does not verify.
// RUN: ge-opt %s --split-input-file --verify-diagnostics -p tile-select-tiling | filecheck %s --check-prefix=TILING
// RUN: ge-opt %s --split-input-file --verify-diagnostics -p tile-select-tiling,tile-expand-structured | filecheck %s

// BERT-sized fp16 heads (2 heads, 32 queries and keys, head size 16) with a
// padding mask [1, 1, 1, 32] and scale 1/4; the epilogue map rounds to fp16.
// All 32 keys are one block: one product for the scores, one for P . V.
// The fp16 mask block is widened to fp32 before it is added; the block's
// row max is floored (a row whose keys are all masked stays finite); P is
// rounded to fp16 for the cube; V goes to L0B through load_2d's transpose.
// TILING-LABEL: tile.kernel "bert" attributes {kind = "attention", tiling = #tile.tiling<tile = [1, 1, {{[0-9]+}}, 16], grid = [1, 2, {{[0-9]+}}, 1]
// TILING-NEXT:    tile.load "q"
// TILING:         tile.attention {{.*}} {scale = 2.500000e-01 : f32}

// CHECK-LABEL: tile.kernel "bert" attributes {kind = "attention", tiling = #tile.tiling<tile = [1, 1, {{[0-9]+}}, 16]
// CHECK:       %[[L1Q:.*]] = tile.alloc {{.*}} : !tile.ref<l1, f16>
// CHECK-NEXT:  %[[L0Q:.*]] = tile.alloc {{.*}} : !tile.ref<l0a, f16>
// CHECK-NEXT:  %[[L1K:.*]] = tile.alloc {{.*}} : !tile.ref<l1, f16>
// CHECK-NEXT:  %[[L0K:.*]] = tile.alloc {{.*}} : !tile.ref<l0b, f16>
// CHECK-NEXT:  %[[L1P:.*]] = tile.alloc {{.*}} : !tile.ref<l1, f16>
// CHECK-NEXT:  %[[L0P:.*]] = tile.alloc {{.*}} : !tile.ref<l0a, f16>
// CHECK-NEXT:  %[[L1V:.*]] = tile.alloc {{.*}} : !tile.ref<l1, f16>
// CHECK-NEXT:  %[[L0V:.*]] = tile.alloc {{.*}} : !tile.ref<l0b, f16>
// CHECK-NEXT:  %[[L0S:.*]] = tile.alloc {{.*}} : !tile.ref<l0c, f32>
// CHECK-NEXT:  %[[L0O:.*]] = tile.alloc {{.*}} : !tile.ref<l0c, f32>
// CHECK:       scf.for
// CHECK:         tile.gm {tensor = "q"}
// CHECK:         tile.copy %[[L1Q]], %{{.*}} : !tile.ref<l1, f16>, !tile.ref<gm, f16>
// CHECK-NEXT:    tile.load_fractal %[[L0Q]], %[[L1Q]]
// CHECK-NEXT:    tile.gm {tensor = "k"}
// CHECK:         tile.copy %[[L1K]], %{{.*}} : !tile.ref<l1, f16>, !tile.ref<gm, f16>
// CHECK-NEXT:    tile.load_fractal %[[L0K]], %[[L1K]]
// CHECK-NEXT:    tile.matmul %[[L0S]], %[[L0Q]], %[[L0K]] {m = {{[0-9]+}} : i64, n = 32 : i64, k = 16 : i64}
// CHECK-NEXT:    tile.copy %[[S:.*]], %[[L0S]] {{.*}} : !tile.ref<ub, f32>, !tile.ref<l0c, f32>
// CHECK-NEXT:    tile.vec "muls" %[[S]], %[[S]] {{.*}}scalar = 2.500000e-01 : f64}
// CHECK-NEXT:    tile.gm {tensor = "m"}
// CHECK-NEXT:    tile.copy %[[MH:.*]], %{{.*}} {shape = array<i64: 1, 32>, {{.*}}} : !tile.ref<ub, f16>, !tile.ref<gm, f16>
// CHECK-NEXT:    tile.cast %[[MF:.*]], %[[MH]] {{.*}} : !tile.ref<ub, f32>, !tile.ref<ub, f16>
// CHECK-NEXT:    tile.vec "add" %[[S]], %[[S]], %[[MF]]
// V's copy to L1 is issued here, behind the mask block's load, so it runs
// while P is computed:
// CHECK-NEXT:    tile.gm {tensor = "v"}
// CHECK:         tile.copy %[[L1V]], %{{.*}} : !tile.ref<l1, f16>, !tile.ref<gm, f16>
// CHECK-NEXT:    tile.vec "adds" %[[SC:.*]], %[[S]]
// CHECK-NEXT:    tile.reduce "max" %[[MAX:.*]], %[[SC]]
// CHECK-NEXT:    tile.vec "maxs" %[[MAX]], %[[MAX]] {{.*}}scalar = -3.4028234663852886e+38 : f64}
// CHECK-NEXT:    tile.vec "brcb" %[[MAXB:.*]], %[[MAX]]
// CHECK-NEXT:    tile.vec "sub" %[[S]], %[[S]], %[[MAXB]]
// CHECK-NEXT:    tile.vec "exp" %[[S]], %[[S]]
// CHECK-NEXT:    tile.cast %[[P:.*]], %[[S]] {{.*}} : !tile.ref<ub, f16>, !tile.ref<ub, f32>
// CHECK-NEXT:    tile.copy %[[L1P]], %[[P]] {{.*}} : !tile.ref<l1, f16>, !tile.ref<ub, f16>
// CHECK-NEXT:    tile.reduce "sum" %[[SUM:.*]], %[[S]]
// CHECK-NEXT:    tile.load_fractal %[[L0P]], %[[L1P]]
// V's 32 rows in L1 as one column block of two 16x16 fractals, loaded to
// L0B one 16-row block at a time, transposed:
// CHECK-NEXT:    tile.load_fractal %[[L0V]], %[[L1V]] {count = 1 : i64, src_stride = 2 : i64, transpose}
// CHECK-NEXT:    %[[L0V1:.*]] = tile.at %[[L0V]] {offset = 256 : i64}
// CHECK-NEXT:    %[[L1V1:.*]] = tile.at %[[L1V]] {offset = 256 : i64}
// CHECK-NEXT:    tile.load_fractal %[[L0V1]], %[[L1V1]] {count = 1 : i64, src_stride = 2 : i64, transpose}
// CHECK-NEXT:    tile.matmul %[[L0O]], %[[L0P]], %[[L0V]] {m = {{[0-9]+}} : i64, n = 16 : i64, k = 32 : i64}
// CHECK-NEXT:    tile.copy %[[O:.*]], %[[L0O]] {{.*}} : !tile.ref<ub, f32>, !tile.ref<l0c, f32>
// CHECK-NEXT:    tile.vec "brcb" %[[SUMB:.*]], %[[SUM]]
// CHECK-NEXT:    tile.vec "div" %[[O]], %[[O]], %[[SUMB]]
// CHECK-NEXT:    tile.cast %[[Y:.*]], %[[O]] {{.*}} : !tile.ref<ub, f16>, !tile.ref<ub, f32>
// CHECK-NEXT:    tile.gm {tensor = "y"}
// CHECK:         tile.copy %{{.*}}, %[[Y]] {{.*}} : !tile.ref<gm, f16>, !tile.ref<ub, f16>
// CHECK-NEXT:  }
// CHECK-NOT:   tile.attention
tile.program "bert" {
  tile.tensor {name = "q", kind = "input", offset = 0 : i64, type = tensor<1x2x32x16xf16>, layout = "ND"}
  tile.tensor {name = "k", kind = "input", offset = 4096 : i64, type = tensor<1x2x32x16xf16>, layout = "ND"}
  tile.tensor {name = "v", kind = "input", offset = 8192 : i64, type = tensor<1x2x32x16xf16>, layout = "ND"}
  tile.tensor {name = "m", kind = "input", offset = 12288 : i64, type = tensor<1x1x1x32xf16>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 16384 : i64, type = tensor<1x2x32x16xf16>, layout = "ND"}
  tile.kernel "bert" attributes {kind = "attention", block_dim = 1 : i64} {
    %q = tile.load "q" : tensor<1x2x32x16xf16>
    %k = tile.load "k" : tensor<1x2x32x16xf16>
    %v = tile.load "v" : tensor<1x2x32x16xf16>
    %m = tile.load "m" : tensor<1x1x1x32xf16>
    %o = tile.attention %q, %k, %v mask(%m : tensor<1x1x1x32xf16>) {scale = 2.500000e-01 : f32} : tensor<1x2x32x16xf16>, tensor<1x2x32x16xf16>, tensor<1x2x32x16xf16> -> tensor<1x2x32x16xf32>
    %y = tile.map ins(%o : tensor<1x2x32x16xf32>) -> tensor<1x2x32x16xf16> {
    ^bb0(%x : f32):
      %h = arith.truncf %x : f32 to f16
      tile.yield %h : f16
    }
    tile.store %y, "y" : tensor<1x2x32x16xf16>
  }
}

// -----

// 512 keys of head size 64, no mask: the cube buffers of a 512-key block do
// not fit L0B, so the keys are two blocks of 256. The first block sets the
// running max m, the sums l and the result O; the second block's keys and
// values start 256 rows on (offset 256 x 64), its max m' = max(m, rowmax)
// gives alpha = exp(m - m') on the columns, and l and O are rescaled by
// alpha before its sums and product are added. No mask: no floor of the max.
// TILING-LABEL: tile.kernel "long" attributes {kind = "attention", tiling = #tile.tiling<tile = [1, 1, {{[0-9]+}}, 64], grid = [1, 1, {{[0-9]+}}, 1]

// CHECK-LABEL: tile.kernel "long" attributes {kind = "attention", tiling = #tile.tiling<tile = [1, 1, {{[0-9]+}}, 64]
// CHECK:       scf.for
// CHECK:         tile.load_fractal
// CHECK:         tile.gm {tensor = "k"}
// CHECK:         tile.matmul %{{.*}} {m = {{[0-9]+}} : i64, n = 256 : i64, k = 64 : i64}
// CHECK-NEXT:    tile.copy %[[S:.*]], %{{.*}} : !tile.ref<ub, f32>, !tile.ref<l0c, f32>
// CHECK-NEXT:    tile.vec "muls" %[[S]], %[[S]] {{.*}}scalar = 1.250000e-01 : f64}
// CHECK-NEXT:    tile.gm {tensor = "v"}
// CHECK:         tile.vec "adds"
// CHECK-NEXT:    tile.reduce "max" %[[M0:.*]], %{{.*}} {rows = {{[0-9]+}} : i64, cols = 256 : i64
// CHECK-NEXT:    tile.vec "brcb" %{{.*}}, %[[M0]]
// CHECK-NEXT:    tile.vec "sub" %[[S]], %[[S]]
// CHECK-NEXT:    tile.vec "exp" %[[S]], %[[S]]
// CHECK-NEXT:    tile.cast
// CHECK-NEXT:    tile.copy {{.*}} : !tile.ref<l1, f16>, !tile.ref<ub, f16>
// CHECK-NEXT:    tile.reduce "sum" %[[L:.*]], %[[S]]
// CHECK-NEXT:    tile.load_fractal
// CHECK:         tile.load_fractal {{.*}} {count = 4 : i64, src_stride = 16 : i64, transpose}
// CHECK:         tile.matmul %{{.*}} {m = {{[0-9]+}} : i64, n = 64 : i64, k = 256 : i64}
// CHECK-NEXT:    tile.copy %[[O:.*]], %{{.*}} : !tile.ref<ub, f32>, !tile.ref<l0c, f32>
// The second block.
// CHECK-NEXT:    %[[K:.*]] = tile.gm {tensor = "k"}
// CHECK-NEXT:    tile.at %[[K]] {offset = 16384 : i64}
// CHECK:         tile.matmul %{{.*}} {m = {{[0-9]+}} : i64, n = 256 : i64, k = 64 : i64}
// CHECK-NEXT:    tile.copy %[[S]], %{{.*}} : !tile.ref<ub, f32>, !tile.ref<l0c, f32>
// CHECK-NEXT:    tile.vec "muls" %[[S]], %[[S]]
// CHECK-NEXT:    %[[V:.*]] = tile.gm {tensor = "v"}
// CHECK-NEXT:    tile.at %[[V]] {offset = 16384 : i64}
// CHECK:         tile.vec "adds"
// CHECK-NEXT:    tile.reduce "max" %[[BM:.*]], %{{.*}}
// CHECK-NEXT:    tile.vec "max" %[[M1:.*]], %[[M0]], %[[BM]]
// CHECK-NEXT:    tile.vec "sub" %[[ALPHA:.*]], %[[M0]], %[[M1]]
// CHECK-NEXT:    tile.vec "exp" %[[ALPHA]], %[[ALPHA]]
// CHECK-NEXT:    tile.vec "brcb" %{{.*}}, %[[M1]]
// CHECK-NEXT:    tile.vec "sub" %[[S]], %[[S]]
// CHECK-NEXT:    tile.vec "exp" %[[S]], %[[S]]
// CHECK-NEXT:    tile.cast
// CHECK-NEXT:    tile.copy {{.*}} : !tile.ref<l1, f16>, !tile.ref<ub, f16>
// CHECK-NEXT:    tile.reduce "sum" %[[BS:.*]], %[[S]]
// CHECK-NEXT:    tile.vec "mul" %[[L]], %[[L]], %[[ALPHA]]
// CHECK-NEXT:    tile.vec "add" %[[L]], %[[L]], %[[BS]]
// CHECK-NEXT:    tile.load_fractal
// CHECK:         tile.load_fractal {{.*}} {count = 4 : i64, src_stride = 16 : i64, transpose}
// CHECK:         tile.matmul %{{.*}} {m = {{[0-9]+}} : i64, n = 64 : i64, k = 256 : i64}
// CHECK-NEXT:    tile.copy %[[PV:.*]], %{{.*}} : !tile.ref<ub, f32>, !tile.ref<l0c, f32>
// CHECK-NEXT:    tile.vec "brcb" %[[AB:.*]], %[[ALPHA]]
// CHECK-NEXT:    tile.vec "mul" %[[O]], %[[O]], %[[AB]]
// CHECK-NEXT:    tile.vec "add" %[[O]], %[[O]], %[[PV]]
// CHECK-NOT:     tile.matmul
// CHECK:         tile.vec "brcb" %[[LB:.*]], %[[L]]
// CHECK-NEXT:    tile.vec "div" %[[O]], %[[O]], %[[LB]]
// CHECK-NOT:     tile.matmul
// CHECK:         tile.copy %{{.*}} : !tile.ref<gm, f16>, !tile.ref<ub, f16>
// CHECK-NEXT:  }
tile.program "long" {
  tile.tensor {name = "q", kind = "input", offset = 0 : i64, type = tensor<1x1x512x64xf16>, layout = "ND"}
  tile.tensor {name = "k", kind = "input", offset = 65536 : i64, type = tensor<1x1x512x64xf16>, layout = "ND"}
  tile.tensor {name = "v", kind = "input", offset = 131072 : i64, type = tensor<1x1x512x64xf16>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 196608 : i64, type = tensor<1x1x512x64xf16>, layout = "ND"}
  tile.kernel "long" attributes {kind = "attention", block_dim = 1 : i64} {
    %q = tile.load "q" : tensor<1x1x512x64xf16>
    %k = tile.load "k" : tensor<1x1x512x64xf16>
    %v = tile.load "v" : tensor<1x1x512x64xf16>
    %o = tile.attention %q, %k, %v {scale = 1.250000e-01 : f32} : tensor<1x1x512x64xf16>, tensor<1x1x512x64xf16>, tensor<1x1x512x64xf16> -> tensor<1x1x512x64xf32>
    %y = tile.map ins(%o : tensor<1x1x512x64xf32>) -> tensor<1x1x512x64xf16> {
    ^bb0(%x : f32):
      %h = arith.truncf %x : f32 to f16
      tile.yield %h : f16
    }
    tile.store %y, "y" : tensor<1x1x512x64xf16>
  }
}

// -----

// fp32 (must_keep_origin_dtype) reads the values as v^T [1, 2, 16, 32]
// (transpose_v): fp32 fractals are not transposed by load_2d, so V^T's rows
// go to L1 as the product's b^T and load to L0B as they are (staged through
// UB: one GM DMA of the block's rows, then the scatter into fractals, not a
// GM DMA per column block). P stays fp32 (no cast) on its way from UB to L1.
// TILING-LABEL: tile.kernel "fp32" attributes {kind = "attention", tiling = #tile.tiling<tile = [1, 1, {{[0-9]+}}, 16], grid = [1, 2, {{[0-9]+}}, 1]
// TILING:         tile.attention {{.*}} {scale = 2.500000e-01 : f32, transpose_v}

// CHECK-LABEL: tile.kernel "fp32" attributes {kind = "attention", tiling = #tile.tiling<tile = [1, 1, {{[0-9]+}}, 16]
// CHECK:       tile.alloc {{.*}} : !tile.ref<l1, f32>
// CHECK-NEXT:  tile.alloc {{.*}} : !tile.ref<l0a, f32>
// CHECK-NEXT:  tile.alloc {{.*}} : !tile.ref<l1, f32>
// CHECK-NEXT:  tile.alloc {{.*}} : !tile.ref<l0b, f32>
// CHECK-NEXT:  %[[L1P:.*]] = tile.alloc {{.*}} : !tile.ref<l1, f32>
// CHECK-NEXT:  %[[L0P:.*]] = tile.alloc {{.*}} : !tile.ref<l0a, f32>
// CHECK-NEXT:  %[[L1V:.*]] = tile.alloc {{.*}} : !tile.ref<l1, f32>
// CHECK-NEXT:  %[[L0V:.*]] = tile.alloc {{.*}} : !tile.ref<l0b, f32>
// CHECK:       scf.for
// CHECK:         tile.matmul %{{.*}} {m = {{[0-9]+}} : i64, n = 32 : i64, k = 16 : i64} : !tile.ref<l0c, f32>, !tile.ref<l0a, f32>, !tile.ref<l0b, f32>
// CHECK-NEXT:    tile.copy %[[S:.*]], %{{.*}} : !tile.ref<ub, f32>, !tile.ref<l0c, f32>
// CHECK:         tile.gm {tensor = "v_t"}
// CHECK:         tile.copy %[[VT:.*]], %{{.*}} : !tile.ref<ub, f32>, !tile.ref<gm, f32>
// CHECK-NEXT:    tile.copy %[[L1V]], %[[VT]] {{.*}} : !tile.ref<l1, f32>, !tile.ref<ub, f32>
// CHECK:         tile.vec "exp" %[[S]], %[[S]]
// CHECK-NEXT:    tile.copy %[[L1P]], %[[S]] {{.*}} : !tile.ref<l1, f32>, !tile.ref<ub, f32>
// CHECK-NEXT:    tile.reduce "sum"
// CHECK-NEXT:    tile.load_fractal %[[L0P]], %[[L1P]]
// CHECK-NEXT:    tile.load_fractal %[[L0V]], %[[L1V]] {count = {{[0-9]+}} : i64, src_stride = 1 : i64} :
// CHECK-NEXT:    tile.matmul %{{.*}}, %[[L0P]], %[[L0V]] {m = {{[0-9]+}} : i64, n = 16 : i64, k = 32 : i64}
// CHECK:         tile.vec "div"
// CHECK-NOT:     tile.cast
// CHECK:         tile.gm {tensor = "y"}
// CHECK:         tile.copy %{{.*}} : !tile.ref<gm, f32>, !tile.ref<ub, f32>
tile.program "fp32" {
  tile.tensor {name = "q", kind = "input", offset = 0 : i64, type = tensor<1x2x32x16xf32>, layout = "ND"}
  tile.tensor {name = "k", kind = "input", offset = 4096 : i64, type = tensor<1x2x32x16xf32>, layout = "ND"}
  tile.tensor {name = "v_t", kind = "input", offset = 8192 : i64, type = tensor<1x2x16x32xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 12288 : i64, type = tensor<1x2x32x16xf32>, layout = "ND"}
  tile.kernel "fp32" attributes {kind = "attention", block_dim = 1 : i64} {
    %q = tile.load "q" : tensor<1x2x32x16xf32>
    %k = tile.load "k" : tensor<1x2x32x16xf32>
    %v = tile.load "v_t" : tensor<1x2x16x32xf32>
    %o = tile.attention %q, %k, %v {scale = 2.500000e-01 : f32, transpose_v} : tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x16x32xf32> -> tensor<1x2x32x16xf32>
    %y = tile.map ins(%o : tensor<1x2x32x16xf32>) -> tensor<1x2x32x16xf32> {
    ^bb0(%x : f32):
      tile.yield %x : f32
    }
    tile.store %y, "y" : tensor<1x2x32x16xf32>
  }
}

// -----

// zero_empty_rows (torch's NaN guard, absorbed by AttentionFusionPass): the
// row sums are raised to at least 1 before O / l (l broadcast along rows). A row with a finite score
// already has l >= 1 (exact); a row whose every score is -inf has O = 0 and
// l = 0, and gives 0 instead of 0 / 0.
// CHECK-LABEL: tile.kernel "guarded" attributes {kind = "attention"
// CHECK:         tile.reduce "sum"
// CHECK:         tile.vec "maxs" %[[L:[^,]*]], %[[L]] {{.*}}scalar = 1.000000e+00
// CHECK-NEXT:    tile.vec "brcb" %[[LB:[^,]*]], %[[L]]
// CHECK-NEXT:    tile.vec "div" %[[O:[^,]*]], %[[O]], %[[LB]]
tile.program "guarded" {
  tile.tensor {name = "q", kind = "input", offset = 0 : i64, type = tensor<1x2x32x16xf32>, layout = "ND"}
  tile.tensor {name = "k", kind = "input", offset = 4096 : i64, type = tensor<1x2x32x16xf32>, layout = "ND"}
  tile.tensor {name = "v_t", kind = "input", offset = 8192 : i64, type = tensor<1x2x16x32xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 12288 : i64, type = tensor<1x2x32x16xf32>, layout = "ND"}
  tile.kernel "guarded" attributes {kind = "attention", block_dim = 1 : i64} {
    %q = tile.load "q" : tensor<1x2x32x16xf32>
    %k = tile.load "k" : tensor<1x2x32x16xf32>
    %v = tile.load "v_t" : tensor<1x2x16x32xf32>
    %o = tile.attention %q, %k, %v {scale = 2.500000e-01 : f32, transpose_v, zero_empty_rows} : tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x16x32xf32> -> tensor<1x2x32x16xf32>
    %y = tile.map ins(%o : tensor<1x2x32x16xf32>) -> tensor<1x2x32x16xf32> {
    ^bb0(%x : f32):
      tile.yield %x : f32
    }
    tile.store %y, "y" : tensor<1x2x32x16xf32>
  }
}

// -----

// The expansion reads every operand from GM itself, block by block: an
// operand computed in the kernel (here q doubled by a tile.map) is rejected
// by the verifier.
tile.program "bad" {
  tile.tensor {name = "q", kind = "input", offset = 0 : i64, type = tensor<1x2x32x16xf16>, layout = "ND"}
  tile.tensor {name = "k", kind = "input", offset = 4096 : i64, type = tensor<1x2x32x16xf16>, layout = "ND"}
  tile.tensor {name = "v", kind = "input", offset = 8192 : i64, type = tensor<1x2x32x16xf16>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 12288 : i64, type = tensor<1x2x32x16xf32>, layout = "ND"}
  tile.kernel "bad" attributes {kind = "attention", block_dim = 1 : i64} {
    %q = tile.load "q" : tensor<1x2x32x16xf16>
    %k = tile.load "k" : tensor<1x2x32x16xf16>
    %v = tile.load "v" : tensor<1x2x32x16xf16>
    %q2 = tile.map ins(%q : tensor<1x2x32x16xf16>) -> tensor<1x2x32x16xf16> {
    ^bb0(%x : f16):
      %d = arith.addf %x, %x : f16
      tile.yield %d : f16
    }
    // expected-error@+1 {{tile.attention: every operand is a tile.load result}}
    %o = tile.attention %q2, %k, %v {scale = 2.500000e-01 : f32} : tensor<1x2x32x16xf16>, tensor<1x2x32x16xf16>, tensor<1x2x32x16xf16> -> tensor<1x2x32x16xf32>
    tile.store %o, "y" : tensor<1x2x32x16xf32>
  }
}
