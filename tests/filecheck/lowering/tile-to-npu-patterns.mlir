// convert-tile-to-npu on lowered kernels: GM tensors become npu.input /
// output / constant at their offsets, loops stay scf.for (one tile per core:
// the 3x3 conv's band is the core's index, no tile loop; its weights copied
// after the band), the C1 loop's ping-pong pairs get "buffer free" flags
// (one event per buffer, their closing waits before the first load into
// L0A after the loop; the loop starts on the
// second copies, the first C1 slice having used the first: the flag of the
// second copies is primed ahead of the first slice's loads, that of the
// first right after its mmad), forward dependences
// set/wait event 0 right before the consumer; copies are
// npu.dma on the path's pipe (bursts with gaps), the cube is load_3d (im2col,
// f32 = C0 8), load_2d (fractals) and mmad (init, then accumulate), the
// vector unit vrelu with repeats. The hand-written tile IR at the end (after
// the `// =====` lines, cut out with sed) goes through convert-tile-to-npu alone:
// padded DMAs (prefix PAD) and the refusal of UB rows closer than whole
// blocks (prefix CLOSE). The tile passes are ge-tile-opt's but
// tile-split-reduction, which would split this conv's K in two
// (tile/split-reduction-conv.mlir tests that).
// RUN: sed '/^\/\/ ===== hand-written tile IR/,$d' %s | ge-opt --split-input-file -p 'graph-fuse,convert-graph-to-tile{precision_mode=must_keep_origin_dtype},tile-legalize-math,tile-select-tiling,tile-distribute,tile-pipeline-buffers,tile-expand-structured,tile-allocate,tile-assign-streams,convert-tile-to-npu,npu-insert-sync' | filecheck %s
// RUN: sed -n '/^\/\/ ===== hand-written tile IR: padded/,/^\/\/ ===== hand-written tile IR: UB rows closer/p' %s | ge-opt --split-input-file -p 'convert-tile-to-npu,npu-insert-sync' | filecheck %s --check-prefix=PAD
// RUN: sed -n '/^\/\/ ===== hand-written tile IR: UB rows closer/,$p' %s | not ge-opt -p convert-tile-to-npu 2>&1 | filecheck %s --check-prefix=CLOSE

// CHECK-LABEL: npu.program @conv_relu gm_size
// CHECK-DAG:   npu.constant "c_w" at {{[0-9]+}} = dense_resource<{{.*}}> : tensor<{{(1x)?}}4x9x1x16x8xf32>
// CHECK-DAG:   npu.input "x" at {{[0-9]+}} : tensor<1x32x16x16xf32>
// CHECK-DAG:   npu.output "y" at {{[0-9]+}} : tensor<1x16x16x16xf32>
// CHECK:       npu.kernel @k0_transdata attributes {ge.kind = "transdata"{{.*}}}
// CHECK:         npu.mmad f32
// CHECK:       npu.launch @k0_transdata block_dim 32 stream 0
// CHECK:       npu.kernel @k1_conv attributes {ge.kind = "conv"{{.*}}}
// CHECK:         npu.block_idx
// CHECK:         npu.dma mte2 %{{.*}}, %{{.*}} nburst 4 len 1536 src_gap 6656 dst_gap 1024 : !npu.ptr<l1>, !npu.ptr<gm>
// CHECK:         npu.set_flag m -> mte1 event [[E1:[1-7]]]
// CHECK:         npu.dma mte2 %[[W:.*]], %{{.*}} len 18432 : !npu.ptr<l1>, !npu.ptr<gm>
// CHECK:         npu.wait_flag mte2 -> mte1 event 0
// CHECK-NEXT:    npu.load_3d %{{.*}}, %{{.*}} fm_h 3 fm_w 16 kh 3 kw 3 pad_left 1 pad_right 1 m_len 16 f32 : !npu.ptr<l0a>, !npu.ptr<l1>
// CHECK-NEXT:    npu.wait_flag mte2 -> mte1 event 0
// CHECK-NEXT:    npu.load_2d %{{.*}}, %[[W]] repeat 9 : !npu.ptr<l0b>, !npu.ptr<l1>
// CHECK-NEXT:    npu.set_flag mte1 -> m event 0
// CHECK-NEXT:    npu.wait_flag mte1 -> m event 0
// CHECK-NEXT:    npu.mmad f32 %{{.*}}, %[[A0:[0-9]+]], %{{.*}} m 16 n 16 k 72 : !npu.ptr<l0c>, !npu.ptr<l0a>, !npu.ptr<l0b>
// CHECK-NEXT:    npu.set_flag m -> mte1 event [[E2:[1-7]]]
// CHECK-NEXT:    scf.for
// CHECK:           npu.wait_flag m -> mte1 event [[E1]]
// CHECK-NEXT:      npu.load_3d %[[A1:[0-9]+]],
// CHECK:           npu.mmad f32 %{{.*}}, %[[A1]], %{{.*}} m 16 n 16 k 72 accumulate
// CHECK:           npu.set_flag m -> mte1 event [[E1]]
// CHECK-NEXT:      npu.wait_flag m -> mte1 event [[E2]]
// CHECK-NEXT:      npu.load_3d %[[A0]],
// CHECK:           npu.mmad f32 %{{.*}}, %{{.*}}, %{{.*}} m 16 n 16 k 72 accumulate
// CHECK-NEXT:      npu.set_flag m -> mte1 event [[E2]]
// CHECK-NEXT:    }
// CHECK-NEXT:    npu.set_flag m -> mte1 event 0
// CHECK-NEXT:    npu.wait_flag m -> mte1 event 0
// CHECK-NEXT:    npu.wait_flag m -> mte1 event [[E1]]
// CHECK-NEXT:    npu.wait_flag m -> mte1 event [[E2]]
// CHECK-NEXT:    npu.load_3d
// CHECK:         npu.dma v %{{.*}}, %{{.*}} len 1024 : !npu.ptr<ub>, !npu.ptr<l0c>
// CHECK-NEXT:    npu.vrelu f32 %{{.*}}, %{{.*}} repeat 4 : !npu.ptr<ub>, !npu.ptr<ub>
// CHECK:         npu.set_flag v -> mte3 event 0
// CHECK-NEXT:    npu.wait_flag v -> mte3 event 0
// CHECK-NEXT:    npu.dma mte3 %{{.*}}, %{{.*}} nburst 16 len 32 src_gap 32 : !npu.ptr<gm>, !npu.ptr<ub>
// CHECK:       npu.launch @k1_conv block_dim 16 stream 0
// CHECK:       npu.kernel @k2_transdata
// CHECK:       npu.launch @k2_transdata
func.func @conv_relu(%x: tensor<1x32x16x16xf32> {ge.name = "x"}) -> (tensor<1x16x16x16xf32> {ge.name = "y"}) {
  %w = graph.fill 0.5 : tensor<16x32x3x3xf32>
  %c = graph.conv %x, %w {activation = "relu", pads = array<i64: 1, 1, 1, 1>} : tensor<1x32x16x16xf32>, tensor<16x32x3x3xf32> -> tensor<1x16x16x16xf32> loc("conv1")
  func.return %c : tensor<1x16x16x16xf32>
}

// ===== hand-written tile IR: padded copies (the second RUN line) =====
// A GM <-> UB tile.copy whose innermost run is not whole 32-byte blocks on the
// UB side is a padded npu.dma: [3, 5] f32 rows (20 bytes) into UB rows 8
// floats (one block) apart are 3 bursts of len 20 with no gaps: the UB gap
// counts from the padded end (20 -> 32), so dst_gap is 0, not 12; GM rows are
// contiguous (src_gap 0). The store back to GM is the same, mirrored.
// PAD-LABEL: npu.program @rows_of_five
// PAD:       npu.kernel @k attributes {ge.writes = {{.*}}} {
// Static pointers are made once, at the top of the kernel, in the order of
// first use.
// PAD:         %[[U:.*]] = npu.ptr ub 0
// PAD-NEXT:    %[[X:.*]] = npu.ptr gm 0
// PAD-NEXT:    %[[Y:.*]] = npu.ptr gm 128
// PAD-NEXT:    npu.dma mte2 %[[U]], %[[X]] nburst 3 len 20 pad : !npu.ptr<ub>, !npu.ptr<gm>
// PAD-NEXT:    npu.set_flag mte2 -> mte3 event 0
// PAD-NEXT:    npu.wait_flag mte2 -> mte3 event 0
// PAD-NEXT:    npu.dma mte3 %[[Y]], %[[U]] nburst 3 len 20 pad : !npu.ptr<gm>, !npu.ptr<ub>
// PAD-NEXT:  }
tile.program "rows_of_five" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<3x5xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 128 : i64, type = tensor<3x5xf32>, layout = "ND"}
  tile.kernel "k" attributes {block_dim = 1 : i64} {
    %u = tile.alloc {shape = array<i64: 24>, layout = "ND", buffers = 1 : i64, offset = 0 : i64} : !tile.ref<ub, f32>
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    tile.copy %u, %x {shape = array<i64: 3, 5>, dst_strides = array<i64: 8, 1>, src_strides = array<i64: 5, 1>} : !tile.ref<ub, f32>, !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
    tile.copy %y, %u {shape = array<i64: 3, 5>, dst_strides = array<i64: 5, 1>, src_strides = array<i64: 8, 1>} : !tile.ref<gm, f32>, !tile.ref<ub, f32>
  }
}

// -----

// Gaps on both sides: a [3, 5] box of a [3, 7] tensor (GM rows 28 bytes
// apart: a GM gap of 8 from len 20) into UB rows 16 floats (64 bytes) apart
// (a UB gap of 32 from the padded 32). The store mirrors it.
// PAD-LABEL: npu.program @gaps
// PAD:       npu.dma mte2 %{{.*}}, %{{.*}} nburst 3 len 20 src_gap 8 dst_gap 32 pad : !npu.ptr<ub>, !npu.ptr<gm>
// PAD:       npu.dma mte3 %{{.*}}, %{{.*}} nburst 3 len 20 src_gap 32 dst_gap 8 pad : !npu.ptr<gm>, !npu.ptr<ub>
tile.program "gaps" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<3x7xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 128 : i64, type = tensor<3x7xf32>, layout = "ND"}
  tile.kernel "k" attributes {block_dim = 1 : i64} {
    %u = tile.alloc {shape = array<i64: 48>, layout = "ND", buffers = 1 : i64, offset = 0 : i64} : !tile.ref<ub, f32>
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    tile.copy %u, %x {shape = array<i64: 3, 5>, dst_strides = array<i64: 16, 1>, src_strides = array<i64: 7, 1>} : !tile.ref<ub, f32>, !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
    tile.copy %y, %u {shape = array<i64: 3, 5>, dst_strides = array<i64: 7, 1>, src_strides = array<i64: 16, 1>} : !tile.ref<gm, f32>, !tile.ref<ub, f32>
  }
}

// -----

// Rows of 5 floats contiguous on both sides merge into one run of 60 bytes:
// one padded burst (UB [0, 64)). Rows of 8 floats (whole blocks in UB) from
// GM rows 9 apart need no pad.
// PAD-LABEL: npu.program @merged
// PAD:       npu.dma mte2 %{{.*}}, %{{.*}} len 60 pad : !npu.ptr<ub>, !npu.ptr<gm>
// PAD:       npu.dma mte2 %{{.*}}, %{{.*}} nburst 3 len 32 src_gap 4 : !npu.ptr<ub>, !npu.ptr<gm>
tile.program "merged" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<3x5xf32>, layout = "ND"}
  tile.tensor {name = "w", kind = "input", offset = 128 : i64, type = tensor<3x9xf32>, layout = "ND"}
  tile.kernel "k" attributes {block_dim = 1 : i64} {
    %u = tile.alloc {shape = array<i64: 16>, layout = "ND", buffers = 1 : i64, offset = 0 : i64} : !tile.ref<ub, f32>
    %v = tile.alloc {shape = array<i64: 24>, layout = "ND", buffers = 1 : i64, offset = 64 : i64} : !tile.ref<ub, f32>
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    tile.copy %u, %x {shape = array<i64: 3, 5>, dst_strides = array<i64: 5, 1>, src_strides = array<i64: 5, 1>} : !tile.ref<ub, f32>, !tile.ref<gm, f32>
    %w = tile.gm {tensor = "w"} : !tile.ref<gm, f32>
    tile.copy %v, %w {shape = array<i64: 3, 8>, dst_strides = array<i64: 8, 1>, src_strides = array<i64: 9, 1>} : !tile.ref<ub, f32>, !tile.ref<gm, f32>
  }
}

// -----

// GM -> L1 (the cube's nd2nz load) pads too: 16 rows of 5 floats of a
// [16, 13] tensor into L1 rows one block (8 floats) apart, as the tail
// K block of a product whose K is 13: 16 bursts of len 20, the GM gap 32
// from len 20, no L1 gap (the padded burst is the whole block).
// PAD-LABEL: npu.program @l1_tail
// PAD:       npu.dma mte2 %{{.*}}, %{{.*}} nburst 16 len 20 src_gap 32 pad : !npu.ptr<l1>, !npu.ptr<gm>
tile.program "l1_tail" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<16x13xf32>, layout = "ND"}
  tile.kernel "k" attributes {block_dim = 1 : i64} {
    %l1 = tile.alloc {shape = array<i64: 128>, layout = "ND", buffers = 1 : i64, offset = 0 : i64} : !tile.ref<l1, f32>
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %tail = tile.at %x {offset = 8 : i64} : !tile.ref<gm, f32> -> !tile.ref<gm, f32>
    tile.copy %l1, %tail {shape = array<i64: 16, 5>, dst_strides = array<i64: 8, 1>, src_strides = array<i64: 13, 1>} : !tile.ref<l1, f32>, !tile.ref<gm, f32>
  }
}

// -----

// An innermost dim of one element (a [2, 4, 1] box, GM elements 1 and 2
// apart, UB rows a block apart) is a run of one element per burst, not a
// run of the dim above it (the fuzzer's channel shuffle of a 1x1 map).
// PAD-LABEL: npu.program @unit_inner
// PAD-COUNT-2: npu.dma mte2 %{{.*}}, %{{.*}} nburst 4 len 4 src_gap 4 pad : !npu.ptr<ub>, !npu.ptr<gm>
tile.program "unit_inner" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<8xf32>, layout = "ND"}
  tile.kernel "k" attributes {block_dim = 1 : i64} {
    %u = tile.alloc {shape = array<i64: 64>, layout = "ND", buffers = 1 : i64, offset = 0 : i64} : !tile.ref<ub, f32>
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    tile.copy %u, %x {shape = array<i64: 2, 4, 1>, dst_strides = array<i64: 32, 8, 1>, src_strides = array<i64: 1, 2, 1>} : !tile.ref<ub, f32>, !tile.ref<gm, f32>
  }
}

// -----

// Index arithmetic and pointers are built once per block: a loop body whose
// copies compute the same offset (as expansions write them, one per copy) gets
// one product per value and one pointer per address, so the scalar unit issues
// each once.
// PAD-LABEL: npu.program @same_offsets
// PAD:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// PAD-NEXT:      %[[ROW:.*]] = arith.muli %[[I]], %{{.*}} : index
// PAD-NEXT:      %[[BYTES:.*]] = arith.muli %[[ROW]], %{{.*}} : index
// PAD-NEXT:      %[[X:.*]] = npu.ptr gm 0 + %[[BYTES]]
// PAD-NEXT:      npu.dma mte2 %[[U:.*]], %[[X]] len 32
// PAD-NOT:       arith.muli
// PAD:           %[[Y:.*]] = npu.ptr gm 256 + %[[BYTES]]
// PAD:           npu.dma mte3 %[[Y]], %[[U]] len 32
// PAD-NOT:       = npu.ptr
// PAD:           npu.dma mte2 %[[U]], %[[X]] len 32
tile.program "same_offsets" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<4x8xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 256 : i64, type = tensor<4x8xf32>, layout = "ND"}
  tile.kernel "k" attributes {block_dim = 1 : i64} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %u = tile.alloc {shape = array<i64: 8>, layout = "ND", buffers = 1 : i64, offset = 0 : i64} : !tile.ref<ub, f32>
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f32>
    scf.for %i = %c0 to %c4 step %c1 {
      %o1 = arith.muli %i, %c8 : index
      %xi = tile.at %x + %o1 {offset = 0 : i64} : !tile.ref<gm, f32> -> !tile.ref<gm, f32>
      tile.copy %u, %xi {shape = array<i64: 8>, dst_strides = array<i64: 1>, src_strides = array<i64: 1>} : !tile.ref<ub, f32>, !tile.ref<gm, f32>
      %o2 = arith.muli %i, %c8 : index
      %yi = tile.at %y + %o2 {offset = 0 : i64} : !tile.ref<gm, f32> -> !tile.ref<gm, f32>
      tile.copy %yi, %u {shape = array<i64: 8>, dst_strides = array<i64: 1>, src_strides = array<i64: 1>} : !tile.ref<gm, f32>, !tile.ref<ub, f32>
      %o3 = arith.muli %i, %c8 : index
      %xj = tile.at %x + %o3 {offset = 0 : i64} : !tile.ref<gm, f32> -> !tile.ref<gm, f32>
      tile.copy %u, %xj {shape = array<i64: 8>, dst_strides = array<i64: 1>, src_strides = array<i64: 1>} : !tile.ref<ub, f32>, !tile.ref<gm, f32>
    }
  }
}

// ===== hand-written tile IR: UB rows closer than whole blocks (the third RUN line) =====
// Rows of 5 floats 5 floats apart in UB but 7 apart in GM: each padded burst
// would take a whole block in UB, overlapping the next row. One line, no traceback.
// CLOSE:     {{^}}ge-opt: error: tile.copy: rows of 20 bytes 20 bytes apart in UB are closer than their whole 32-byte blocks{{$}}
// CLOSE-NOT: {{.}}
tile.program "close_rows" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<3x7xf32>, layout = "ND"}
  tile.kernel "k" attributes {block_dim = 1 : i64} {
    %u = tile.alloc {shape = array<i64: 16>, layout = "ND", buffers = 1 : i64, offset = 0 : i64} : !tile.ref<ub, f32>
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f32>
    tile.copy %u, %x {shape = array<i64: 3, 5>, dst_strides = array<i64: 5, 1>, src_strides = array<i64: 7, 1>} : !tile.ref<ub, f32>, !tile.ref<gm, f32>
  }
}
