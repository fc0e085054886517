// npu-insert-sync: flags between pipes from the instructions' footprints.
// RUN: ge-opt %s --split-input-file -p npu-insert-sync | filecheck %s

// GM -> UB (mte2), add (v), UB -> GM (mte3): each consumer waits for its producer.
// CHECK-LABEL: npu.kernel @chain
// CHECK:      npu.dma mte2 %[[U:.*]], %{{.*}} len 256
// CHECK-NEXT: npu.set_flag mte2 -> v event 0
// CHECK-NEXT: npu.wait_flag mte2 -> v event 0
// CHECK-NEXT: npu.vadd f32 %[[U]], %[[U]], %[[U]] repeat 1
// CHECK-NEXT: npu.set_flag v -> mte3 event 0
// CHECK-NEXT: npu.wait_flag v -> mte3 event 0
// CHECK:      npu.dma mte3 %{{.*}}, %[[U]] len 256
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
