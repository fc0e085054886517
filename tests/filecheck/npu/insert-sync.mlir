// npu-insert-sync: flags between pipes from the instructions' footprints.
// RUN: ge-opt %s --split-input-file -p npu-insert-sync | filecheck %s

// GM -> UB (mte2), add (v), UB -> GM (mte3): each consumer waits for its
// producer; each set_flag comes right after the producer, each wait_flag
// right before the consumer.
// CHECK-LABEL: npu.kernel @chain
// CHECK:      npu.dma mte2 %[[U:.*]], %{{.*}} len 256
// CHECK-NEXT: npu.set_flag mte2 -> v event 0
// CHECK-NEXT: npu.set_flag mte2 -> mte3 event 0
// CHECK-NEXT: npu.wait_flag mte2 -> v event 0
// CHECK-NEXT: npu.vadd f32 %[[U]], %[[U]], %[[U]] repeat 1
// CHECK-NEXT: npu.set_flag v -> mte3 event 0
// CHECK-NEXT: npu.wait_flag v -> mte3 event 0
// CHECK-NEXT: npu.wait_flag mte2 -> mte3 event 0
// CHECK-NEXT: npu.dma mte3 %{{.*}}, %[[U]] len 256
npu.program @p gm_size 4096 {
  npu.input "x" at 0 : tensor<64xf32>
  npu.output "y" at 1024 : tensor<64xf32>
  npu.kernel @chain {
    %g = npu.ptr gm 0
    %o = npu.ptr gm 1024
    %u = npu.ptr ub 0
    npu.dma mte2 %u, %g len 256 : !npu.ptr<ub>, !npu.ptr<gm>
    npu.vadd f32 %u, %u, %u repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>
    npu.dma mte3 %o, %u len 256 : !npu.ptr<gm>, !npu.ptr<ub>
  }
  npu.launch @chain block_dim 1 stream 0
}

// -----

// Dynamic pointers: `within` bounds each to its buffer, so a load into one
// buffer need not wait for the vector op on the other; without the bound
// the pass must assume they overlap.
// CHECK-LABEL: npu.kernel @bounded
// CHECK:      npu.ptr ub 0 + %{{.*}} within 256
// CHECK-NEXT: npu.dma mte2
// CHECK-NOT:  npu.wait_flag
// CHECK:      npu.vmuls
// CHECK-LABEL: npu.kernel @unbounded
// CHECK:      npu.dma mte2
// CHECK-NEXT: npu.set_flag mte2 -> v event 0
// CHECK-NEXT: npu.wait_flag mte2 -> v event 0
// CHECK-NEXT: npu.vmuls
npu.program @q gm_size 4096 {
  npu.input "x" at 0 : tensor<64xf32>
  npu.kernel @bounded {
    %c0 = arith.constant 0 : index
    %g = npu.ptr gm 0
    %v = npu.ptr ub 512
    %a = npu.ptr ub 0 + %c0 within 256
    npu.dma mte2 %a, %g len 256 : !npu.ptr<ub>, !npu.ptr<gm>
    npu.vmuls f32 %v, %v scalar 2.0 repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>
  }
  npu.kernel @unbounded {
    %c0 = arith.constant 0 : index
    %g = npu.ptr gm 0
    %v = npu.ptr ub 512
    %a = npu.ptr ub 0 + %c0
    npu.dma mte2 %a, %g len 256 : !npu.ptr<ub>, !npu.ptr<gm>
    npu.vmuls f32 %v, %v scalar 2.0 repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>
  }
  npu.launch @bounded block_dim 1 stream 0
  npu.launch @unbounded block_dim 1 stream 0
}

// -----

// npu.load_index reads UB bytes a DMA wrote: the scalar unit waits for mte2.
// In a gather's row loop (index column DMA, load_index, a row DMA at the
// index, the row stored), the scalar read needs no flag after it: the next
// iteration's DMA over the same UB bytes is issued after it by the scalar
// unit itself, so no flag has s as its source.
// CHECK-LABEL: npu.kernel @index
// CHECK:      npu.dma mte2 %[[U:.*]], %{{.*}} len 32
// CHECK-NEXT: npu.set_flag mte2 -> s event 0
// CHECK-NEXT: npu.wait_flag mte2 -> s event 0
// CHECK-NEXT: npu.load_index %[[U]] {dtype = i64, bound = 50 : i64}
// CHECK-LABEL: npu.kernel @rows
// CHECK-NOT:  _flag s ->
// CHECK:      scf.for
// CHECK-NOT:  _flag s ->
// CHECK:      npu.dma mte2 %[[I:.*]], %{{.*}} len 32
// CHECK-NEXT: npu.set_flag mte2 -> s event 0
// CHECK-NEXT: npu.wait_flag mte2 -> s event 0
// CHECK-NEXT: %[[K:.*]] = npu.load_index %[[I]] {dtype = i64, bound = 50 : i64}
// CHECK-NOT:  _flag s ->
// CHECK:      npu.dma mte2 %[[ROW:.*]], %{{.*}} len 256
// CHECK-NOT:  _flag s ->
// CHECK:      npu.set_flag mte2 -> mte3 event 0
// CHECK-NEXT: npu.wait_flag mte2 -> mte3 event 0
// CHECK-NEXT: npu.dma mte3 %{{.*}}, %[[ROW]] len 256
// CHECK-NOT:  _flag s ->
// CHECK:      npu.launch @index
npu.program @li gm_size 16384 {
  npu.input "i" at 0 : tensor<4xi64>
  npu.input "w" at 1024 : tensor<50x64xf32>
  npu.output "y" at 14336 : tensor<4x64xf32>
  npu.kernel @index {
    %gi = npu.ptr gm 0
    %u = npu.ptr ub 0
    npu.dma mte2 %u, %gi len 32 : !npu.ptr<ub>, !npu.ptr<gm>
    %k = npu.load_index %u {dtype = i64, bound = 50 : i64} : !npu.ptr<ub>
  }
  npu.kernel @rows {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c256 = arith.constant 256 : index
    scf.for %r = %c0 to %c4 step %c1 {
      %off = arith.muli %r, %c8 : index
      %gi = npu.ptr gm 0 + %off
      %u = npu.ptr ub 0
      npu.dma mte2 %u, %gi len 32 : !npu.ptr<ub>, !npu.ptr<gm>
      %k = npu.load_index %u {dtype = i64, bound = 50 : i64} : !npu.ptr<ub>
      %start = arith.muli %k, %c256 : index
      %gw = npu.ptr gm 1024 + %start
      %row = npu.ptr ub 256
      npu.dma mte2 %row, %gw len 256 : !npu.ptr<ub>, !npu.ptr<gm>
      %yo = arith.muli %r, %c256 : index
      %gy = npu.ptr gm 14336 + %yo
      npu.dma mte3 %gy, %row len 256 : !npu.ptr<gm>, !npu.ptr<ub>
    }
  }
  npu.launch @index block_dim 1 stream 0
  npu.launch @rows block_dim 1 stream 0
}

// -----

// A padded DMA (pad) occupies whole 32-byte blocks in UB: 20 bytes GM -> UB
// at ub 0 write ub [0, 32) (the last 12 zero-filled). A vector op reading
// ub [0, 32) waits for it; one reading ub [32, 64) does not overlap it.
// CHECK-LABEL: npu.kernel @pad_tail
// CHECK:      npu.dma mte2 %{{.*}}, %{{.*}} len 20 pad
// CHECK-NEXT: npu.set_flag mte2 -> v event 0
// CHECK-NEXT: npu.wait_flag mte2 -> v event 0
// CHECK-NEXT: npu.vadds f32
// CHECK-LABEL: npu.kernel @pad_next_block
// CHECK:      npu.dma mte2 %{{.*}}, %{{.*}} len 20 pad
// CHECK-NOT:  npu.wait_flag
// CHECK:      npu.vadds f32
// CHECK-NOT:  npu.wait_flag
// CHECK:      npu.launch @pad_tail
npu.program @pad gm_size 4096 {
  npu.input "x" at 0 : tensor<5xf32>
  npu.kernel @pad_tail {
    %g = npu.ptr gm 0
    %u = npu.ptr ub 0
    %v = npu.ptr ub 512
    npu.dma mte2 %u, %g len 20 pad : !npu.ptr<ub>, !npu.ptr<gm>
    npu.vadds f32 %v, %u scalar 1.0 repeat 1 mask 8 : !npu.ptr<ub>, !npu.ptr<ub>
  }
  npu.kernel @pad_next_block {
    %g = npu.ptr gm 0
    %u = npu.ptr ub 0
    %w = npu.ptr ub 32
    %v = npu.ptr ub 512
    npu.dma mte2 %u, %g len 20 pad : !npu.ptr<ub>, !npu.ptr<gm>
    npu.vadds f32 %v, %w scalar 1.0 repeat 1 mask 8 : !npu.ptr<ub>, !npu.ptr<ub>
  }
  npu.launch @pad_tail block_dim 1 stream 0
  npu.launch @pad_next_block block_dim 1 stream 0
}

// -----

// Three padded bursts of 20 bytes are ub [0, 96), not the 60 bytes they move:
// a vector op on the third block [64, 96) reads the third burst (GM -> UB),
// and a padded UB -> GM store of three 20-byte rows reads what a vector op
// wrote to the third block.
// CHECK-LABEL: npu.kernel @pad_bursts_load
// CHECK:      npu.dma mte2 %{{.*}}, %{{.*}} nburst 3 len 20 pad
// CHECK-NEXT: npu.set_flag mte2 -> v event 0
// CHECK-NEXT: npu.wait_flag mte2 -> v event 0
// CHECK-NEXT: npu.vadds f32
// CHECK-LABEL: npu.kernel @pad_bursts_store
// CHECK:      npu.vadds f32
// CHECK-NEXT: npu.set_flag v -> mte3 event 0
// CHECK-NEXT: npu.wait_flag v -> mte3 event 0
// CHECK-NEXT: npu.dma mte3 %{{.*}}, %{{.*}} nburst 3 len 20 pad
npu.program @bursts gm_size 4096 {
  npu.input "x" at 0 : tensor<15xf32>
  npu.output "y" at 1024 : tensor<15xf32>
  npu.kernel @pad_bursts_load {
    %g = npu.ptr gm 0
    %u = npu.ptr ub 0
    %third = npu.ptr ub 64
    %v = npu.ptr ub 512
    npu.dma mte2 %u, %g nburst 3 len 20 pad : !npu.ptr<ub>, !npu.ptr<gm>
    npu.vadds f32 %v, %third scalar 1.0 repeat 1 mask 8 : !npu.ptr<ub>, !npu.ptr<ub>
  }
  npu.kernel @pad_bursts_store {
    %o = npu.ptr gm 1024
    %u = npu.ptr ub 0
    %third = npu.ptr ub 64
    %v = npu.ptr ub 512
    npu.vadds f32 %third, %v scalar 1.0 repeat 1 mask 8 : !npu.ptr<ub>, !npu.ptr<ub>
    npu.dma mte3 %o, %u nburst 3 len 20 pad : !npu.ptr<gm>, !npu.ptr<ub>
  }
  npu.launch @pad_bursts_load block_dim 1 stream 0
  npu.launch @pad_bursts_store block_dim 1 stream 0
}

// -----

// Two buffers in turn (load A, store A, load B, store B, load A again): the
// second load into A waits for A's store only. Its set_flag comes right after
// that store, before B's load and store are issued, so mte2 never waits for
// B's store (a set placed right before the consumer would cover it too).
// CHECK-LABEL: npu.kernel @ping_pong
// CHECK:      npu.dma mte2 %[[A:.*]], %{{.*}} len 256
// CHECK-NEXT: npu.set_flag mte2 -> mte3 event 0
// CHECK-NEXT: npu.wait_flag mte2 -> mte3 event 0
// CHECK-NEXT: npu.dma mte3 %{{.*}}, %[[A]] len 256
// CHECK-NEXT: npu.set_flag mte3 -> mte2 event 0
// CHECK-NEXT: npu.dma mte2 %[[B:.*]], %{{.*}} len 256
// CHECK-NEXT: npu.set_flag mte2 -> mte3 event 0
// CHECK-NEXT: npu.wait_flag mte2 -> mte3 event 0
// CHECK-NEXT: npu.dma mte3 %{{.*}}, %[[B]] len 256
// CHECK-NEXT: npu.wait_flag mte3 -> mte2 event 0
// CHECK-NEXT: npu.dma mte2 %[[A]], %{{.*}} len 256
npu.program @pp gm_size 8192 {
  npu.input "x" at 0 : tensor<192xf32>
  npu.output "y" at 4096 : tensor<192xf32>
  npu.kernel @ping_pong {
    %x0 = npu.ptr gm 0
    %x1 = npu.ptr gm 256
    %x2 = npu.ptr gm 512
    %y0 = npu.ptr gm 4096
    %y1 = npu.ptr gm 4352
    %y2 = npu.ptr gm 4608
    %a = npu.ptr ub 0
    %b = npu.ptr ub 256
    npu.dma mte2 %a, %x0 len 256 : !npu.ptr<ub>, !npu.ptr<gm>
    npu.dma mte3 %y0, %a len 256 : !npu.ptr<gm>, !npu.ptr<ub>
    npu.dma mte2 %b, %x1 len 256 : !npu.ptr<ub>, !npu.ptr<gm>
    npu.dma mte3 %y1, %b len 256 : !npu.ptr<gm>, !npu.ptr<ub>
    npu.dma mte2 %a, %x2 len 256 : !npu.ptr<ub>, !npu.ptr<gm>
    npu.dma mte3 %y2, %a len 256 : !npu.ptr<gm>, !npu.ptr<ub>
  }
  npu.launch @ping_pong block_dim 1 stream 0
}

// -----

// A set never moves above a nested loop: the loop's own mte2 -> mte3 pairs
// (event 0) would take it first. The store of A waits for the load of A
// through a set placed after the loop. The loop's closing wait (its last
// "buffer free" set is left over) goes to the end of the kernel: nothing
// after the loop on mte2 meets the loop's mte3 work.
// CHECK-LABEL: npu.kernel @set_below_loop
// CHECK:      npu.dma mte2 %[[A:.*]], %{{.*}} len 256
// CHECK-NOT:  npu.set_flag mte2 -> mte3
// CHECK:      scf.for
// CHECK:        npu.set_flag mte2 -> mte3 event 0
// CHECK-NEXT:   npu.wait_flag mte2 -> mte3 event 0
// CHECK:      }
// CHECK-NEXT: npu.set_flag mte2 -> mte3 event 0
// CHECK-NEXT: npu.wait_flag mte2 -> mte3 event 0
// CHECK-NEXT: npu.dma mte3 %{{.*}}, %[[A]] len 256
// CHECK-NEXT: npu.wait_flag mte3 -> mte2 event 1
// CHECK-NEXT: }
npu.program @nest gm_size 8192 {
  npu.input "x" at 0 : tensor<256xf32>
  npu.output "y" at 4096 : tensor<256xf32>
  npu.kernel @set_below_loop {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %x0 = npu.ptr gm 0
    %x1 = npu.ptr gm 256
    %y0 = npu.ptr gm 4096
    %y1 = npu.ptr gm 4352
    %a = npu.ptr ub 0
    %c = npu.ptr ub 256
    npu.dma mte2 %a, %x0 len 256 : !npu.ptr<ub>, !npu.ptr<gm>
    scf.for %i = %c0 to %c2 step %c1 {
      npu.dma mte2 %c, %x1 len 256 : !npu.ptr<ub>, !npu.ptr<gm>
      npu.dma mte3 %y1, %c len 256 : !npu.ptr<gm>, !npu.ptr<ub>
    }
    npu.dma mte3 %y0, %a len 256 : !npu.ptr<gm>, !npu.ptr<ub>
  }
  npu.launch @set_below_loop block_dim 1 stream 0
}

// -----

// A strided DMA touches its bursts, not the gap after its last one: a store
// reading ub [0, 32) and [64, 96) (two bursts of 32 bytes, 32 apart) and a
// load writing ub [96, 128) right after it need no flag between them (the
// trailing gap, once counted, made the load wait for the store).
// CHECK-LABEL: npu.kernel @strided
// CHECK:      npu.dma mte3 %{{.*}}, %{{.*}} nburst 2 len 32 src_gap 32
// CHECK-NOT:  npu.wait_flag mte3 -> mte2
// CHECK:      npu.dma mte2
// CHECK-LABEL: npu.kernel @touching
// CHECK:      npu.dma mte3 %{{.*}}, %{{.*}} nburst 2 len 32 src_gap 32
// CHECK-NEXT: npu.set_flag mte3 -> mte2 event 0
// CHECK-NEXT: npu.wait_flag mte3 -> mte2 event 0
// CHECK-NEXT: npu.dma mte2
npu.program @r gm_size 4096 {
  npu.output "y" at 0 : tensor<64xf32>
  npu.input "x" at 1024 : tensor<64xf32>
  npu.kernel @strided {
    %o = npu.ptr gm 0
    %g = npu.ptr gm 1024
    %u = npu.ptr ub 0
    %next = npu.ptr ub 96
    npu.dma mte3 %o, %u nburst 2 len 32 src_gap 32 : !npu.ptr<gm>, !npu.ptr<ub>
    npu.dma mte2 %next, %g len 32 : !npu.ptr<ub>, !npu.ptr<gm>
  }
  npu.kernel @touching {
    %o = npu.ptr gm 0
    %g = npu.ptr gm 1024
    %u = npu.ptr ub 0
    %last = npu.ptr ub 64
    npu.dma mte3 %o, %u nburst 2 len 32 src_gap 32 : !npu.ptr<gm>, !npu.ptr<ub>
    npu.dma mte2 %last, %g len 32 : !npu.ptr<ub>, !npu.ptr<gm>
  }
  npu.launch @strided block_dim 1 stream 0
  npu.launch @touching block_dim 1 stream 0
}

// -----

// A product peeled before its ping-pong loop (a conv's first C1 slice, then
// a loop over the rest that starts on the second L0A/L0B copies): the peeled
// mmad reads the first copies; the loop's first loads go to the second. No
// flag makes mte1 wait for that mmad before entering the loop: the loop's
// flag guarding the second copies is primed at the kernel's start, and the
// one guarding the first copies right after the peeled mmad (on the cube
// pipe, so the loop's reload of the first copies still waits for it).
// CHECK-LABEL: npu.kernel @peeled_product
// CHECK-NEXT:  npu.set_flag m -> mte1 event 1
// CHECK:       npu.mmad f16 %{{.*}}, %[[A0:.*]], %[[B0:.*]] m 16 n 16 k 32 :
// CHECK-NEXT:  npu.set_flag m -> mte1 event 2
// CHECK-NOT:   npu.wait_flag m -> mte1
// CHECK:       scf.for
// CHECK-NEXT:    npu.wait_flag m -> mte1 event 1
// CHECK-NEXT:    npu.load_2d %[[A1:.*]], %{{.*}} repeat 2
// CHECK:         npu.mmad f16 %{{.*}}, %[[A1]], %{{.*}} m 16 n 16 k 32 accumulate
// CHECK-NEXT:    npu.set_flag m -> mte1 event 1
// CHECK-NEXT:    npu.wait_flag m -> mte1 event 2
// CHECK-NEXT:    npu.load_2d %[[A0]], %{{.*}} repeat 2
npu.program @peeled gm_size 4096 {
  npu.input "x" at 0 : tensor<64xf16>
  npu.kernel @peeled_product {
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c2 = arith.constant 2 : index
    %l1 = npu.ptr l1 0
    %a0 = npu.ptr l0a 0
    %a1 = npu.ptr l0a 1024
    %b0 = npu.ptr l0b 0
    %b1 = npu.ptr l0b 1024
    %c = npu.ptr l0c 0
    npu.load_2d %a0, %l1 repeat 2 : !npu.ptr<l0a>, !npu.ptr<l1>
    npu.load_2d %b0, %l1 repeat 2 : !npu.ptr<l0b>, !npu.ptr<l1>
    npu.mmad f16 %c, %a0, %b0 m 16 n 16 k 32 : !npu.ptr<l0c>, !npu.ptr<l0a>, !npu.ptr<l0b>
    scf.for %k = %c1 to %c3 step %c2 {
      npu.load_2d %a1, %l1 repeat 2 : !npu.ptr<l0a>, !npu.ptr<l1>
      npu.load_2d %b1, %l1 repeat 2 : !npu.ptr<l0b>, !npu.ptr<l1>
      npu.mmad f16 %c, %a1, %b1 m 16 n 16 k 32 accumulate : !npu.ptr<l0c>, !npu.ptr<l0a>, !npu.ptr<l0b>
      npu.load_2d %a0, %l1 repeat 2 : !npu.ptr<l0a>, !npu.ptr<l1>
      npu.load_2d %b0, %l1 repeat 2 : !npu.ptr<l0b>, !npu.ptr<l1>
      npu.mmad f16 %c, %a0, %b0 m 16 n 16 k 32 accumulate : !npu.ptr<l0c>, !npu.ptr<l0a>, !npu.ptr<l0b>
    }
  }
  npu.launch @peeled_product block_dim 1 stream 0
}

// -----

// A ping-pong loop over pairs of tiles, then the remainder loop for an odd
// count (as convert-tile-to-npu lowers a pipelined tile loop): load into
// u0/u1 (mte2), vadd into o0/o1 (v), store (mte3). The remainder's "buffer
// free" flags (u0: v -> mte2, o0: mte3 -> v) are primed right after the pair
// loop, before that loop's closing waits: behind them on the vector pipe the
// first would wait for the last pair's store (mte3 -> v), and the
// remainder's load with it (the flags' older sets, left by the pair loop,
// are what the closing waits take).
// CHECK-LABEL: npu.kernel @remainder_after_pairs
// CHECK:       scf.for
// CHECK:       }
// CHECK-NEXT:  npu.set_flag mte3 -> v event [[O0:[1-7]]]
// CHECK-NEXT:  npu.set_flag v -> mte2 event [[U0:[1-7]]]
// CHECK-NEXT:  npu.wait_flag v -> mte2 event
// CHECK:       npu.wait_flag mte3 -> v event
// CHECK:       scf.for
// CHECK-NEXT:    npu.wait_flag v -> mte2 event [[U0]]
// CHECK-NEXT:    npu.dma mte2
// CHECK-NEXT:    npu.wait_flag mte3 -> v event [[O0]]
npu.program @remainder gm_size 8192 {
  npu.input "x" at 0 : tensor<512xf32>
  npu.output "y" at 4096 : tensor<512xf32>
  npu.kernel @remainder_after_pairs {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %g = npu.ptr gm 0
    %o = npu.ptr gm 4096
    %u0 = npu.ptr ub 0
    %u1 = npu.ptr ub 256
    %o0 = npu.ptr ub 512
    %o1 = npu.ptr ub 768
    scf.for %t = %c0 to %c4 step %c2 {
      npu.dma mte2 %u0, %g len 256 : !npu.ptr<ub>, !npu.ptr<gm>
      npu.vadd f32 %o0, %u0, %u0 repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>
      npu.dma mte3 %o, %o0 len 256 : !npu.ptr<gm>, !npu.ptr<ub>
      npu.dma mte2 %u1, %g len 256 : !npu.ptr<ub>, !npu.ptr<gm>
      npu.vadd f32 %o1, %u1, %u1 repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>
      npu.dma mte3 %o, %o1 len 256 : !npu.ptr<gm>, !npu.ptr<ub>
    }
    scf.for %t = %c4 to %c5 step %c1 {
      npu.dma mte2 %u0, %g len 256 : !npu.ptr<ub>, !npu.ptr<gm>
      npu.vadd f32 %o0, %u0, %u0 repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>
      npu.dma mte3 %o, %o0 len 256 : !npu.ptr<gm>, !npu.ptr<ub>
    }
  }
  npu.launch @remainder_after_pairs block_dim 1 stream 0
}

// -----

// A loop's closing waits go as late as is safe. After a loop staging a band
// (mte2: GM -> UB, v: relu, mte3: UB -> L1), the weights' copy into another
// part of L1 (mte2) does not wait for the loop's last copy out of UB
// (mte3 -> mte2, the UB buffer's "free" flag); the next copy into that UB
// buffer does, and the closing wait goes right before it.
// CHECK-LABEL: npu.kernel @closing_wait_late
// CHECK:       scf.for
// CHECK:         npu.dma mte3
// CHECK-NEXT:    npu.set_flag mte3 -> mte2 event [[E:[1-7]]]
// CHECK:       }
// CHECK-NOT:   npu.wait_flag
// CHECK:       npu.dma mte2 %{{.*}}, %{{.*}} len 4096 : !npu.ptr<l1>, !npu.ptr<gm>
// CHECK:       npu.wait_flag mte3 -> mte2 event [[E]]
// CHECK-NEXT:  npu.wait_flag v -> mte2 event [[E]]
// CHECK-NEXT:  npu.dma mte2 %{{.*}}, %{{.*}} len 256 : !npu.ptr<ub>, !npu.ptr<gm>
// CHECK-NEXT:  npu.wait_flag mte3 -> v event
// CHECK-NEXT:  }
npu.program @late gm_size 16384 {
  npu.input "x" at 0 : tensor<1024xf32>
  npu.kernel @closing_wait_late {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %g = npu.ptr gm 0
    %w = npu.ptr gm 4096
    %u = npu.ptr ub 0
    %band = npu.ptr l1 0
    %wl1 = npu.ptr l1 8192
    scf.for %i = %c0 to %c4 step %c1 {
      npu.dma mte2 %u, %g len 256 : !npu.ptr<ub>, !npu.ptr<gm>
      npu.vrelu f32 %u, %u repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>
      npu.dma mte3 %band, %u len 256 : !npu.ptr<l1>, !npu.ptr<ub>
    }
    npu.dma mte2 %wl1, %w len 4096 : !npu.ptr<l1>, !npu.ptr<gm>
    npu.dma mte2 %u, %g len 256 : !npu.ptr<ub>, !npu.ptr<gm>
  }
  npu.launch @closing_wait_late block_dim 1 stream 0
}

// -----

// A nested loop's "buffer free" flags run on across the iterations of the
// loop around it when nothing else in that loop's body meets what they
// guard: one priming set before the outer loop and one closing wait after
// it, so the next band's first copy into the staging buffer (mte2) waits
// for the last copy out of it (mte3), not for the band's result store
// behind it on mte3 (a priming set at the top of the outer body would).
// CHECK-LABEL: npu.kernel @chained_across_bands
// CHECK:       npu.set_flag mte3 -> mte2 event [[E:[1-7]]]
// CHECK:       scf.for
// CHECK-NOT:     npu.set_flag mte3 -> mte2 event [[E]]
// CHECK:         scf.for
// CHECK-NEXT:      npu.wait_flag mte3 -> mte2 event [[E]]
// CHECK:           npu.dma mte2
// CHECK:           npu.dma mte3 %{{.*}}, %{{.*}} len 256 : !npu.ptr<l1>, !npu.ptr<ub>
// CHECK-NEXT:      npu.set_flag mte3 -> mte2 event [[E]]
// CHECK:         }
// CHECK-NOT:     npu.wait_flag mte3 -> mte2 event [[E]]
// CHECK:         npu.dma mte3 %{{.*}}, %{{.*}} len 256 : !npu.ptr<gm>, !npu.ptr<ub>
// CHECK:       }
// CHECK:       npu.wait_flag mte3 -> mte2 event [[E]]
// CHECK-NOT:   scf.for
npu.program @chain gm_size 16384 {
  npu.input "x" at 0 : tensor<1024xf32>
  npu.output "y" at 8192 : tensor<256xf32>
  npu.kernel @chained_across_bands {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %g = npu.ptr gm 0
    %y = npu.ptr gm 8192
    %u = npu.ptr ub 0
    %r = npu.ptr ub 1024
    %band = npu.ptr l1 0
    scf.for %b = %c0 to %c2 step %c1 {
      scf.for %i = %c0 to %c4 step %c1 {
        npu.dma mte2 %u, %g len 256 : !npu.ptr<ub>, !npu.ptr<gm>
        npu.vrelu f32 %u, %u repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>
        npu.dma mte3 %band, %u len 256 : !npu.ptr<l1>, !npu.ptr<ub>
      }
      npu.vrelu f32 %r, %r repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>
      npu.dma mte3 %y, %r len 256 : !npu.ptr<gm>, !npu.ptr<ub>
    }
  }
  npu.launch @chained_across_bands block_dim 1 stream 0
}
