// Round trip of every op of the npu dialect: the custom form parses and prints
// back the same (fields equal to their default are not printed), and so does
// the generic form, which shows every property.
// RUN: ge-opt %s | ge-opt | filecheck %s
// RUN: ge-opt %s --print-op-generic | ge-opt | filecheck %s

!ub = !npu.ptr<ub>

// CHECK-LABEL: npu.program @prog gm_size 65536 {
npu.program @prog gm_size 65536 {
  // CHECK-NEXT: npu.input "x" at 0 : tensor<64x64xf16>
  // CHECK-NEXT: npu.output "y" at 8192 : tensor<64x64xf16>
  // CHECK-NEXT: npu.constant "w" at 16384 = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf16>
  // CHECK-NEXT: npu.constant "blob" at 16416 = dense_resource<blob> : tensor<2xf16>
  npu.input "x" at 0 : tensor<64x64xf16>
  npu.output "y" at 8192 : tensor<64x64xf16>
  npu.constant "w" at 16384 = dense<[1.0, 2.0]> : tensor<2xf16>
  npu.constant "blob" at 16416 = dense_resource<blob> : tensor<2xf16>

  // CHECK-LABEL: npu.kernel @k {
  npu.kernel @k {
    // CHECK:      %[[B:.*]] = npu.block_idx
    // CHECK-NEXT: %[[N:.*]] = npu.block_num
    %b = npu.block_idx
    %n = npu.block_num
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    // CHECK:      %[[G:.*]] = npu.ptr gm 0
    // CHECK-NEXT: %[[U:.*]] = npu.ptr ub 0
    // CHECK-NEXT: %[[U1:.*]] = npu.ptr ub 4096
    // CHECK-NEXT: %[[L1:.*]] = npu.ptr l1 0
    // CHECK-NEXT: %[[LA:.*]] = npu.ptr l0a 0
    // CHECK-NEXT: %[[LB:.*]] = npu.ptr l0b 512
    // CHECK-NEXT: %[[LC:.*]] = npu.ptr l0c 0
    %g = npu.ptr gm 0
    %u = npu.ptr ub 0
    %u1 = npu.ptr ub 4096
    %l1 = npu.ptr l1 0
    %la = npu.ptr l0a 0
    %lb = npu.ptr l0b 512
    %lc = npu.ptr l0c 0
    // CHECK:      scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
    // CHECK-NEXT:   %[[OFF:.*]] = arith.muli %[[I]], %{{.*}} : index
    // CHECK-NEXT:   %[[GI:.*]] = npu.ptr gm 64 + %[[OFF]]
    // CHECK-NEXT:   npu.dma mte2 %[[U]], %[[GI]] len 256 : !npu.ptr<ub>, !npu.ptr<gm>
    // CHECK-NEXT:   npu.dma mte2 %[[L1]], %[[GI]] nburst 4 len 32 src_gap 96 : !npu.ptr<l1>, !npu.ptr<gm>
    // CHECK-NEXT: }
    scf.for %i = %c0 to %c4 step %c1 {
      %off = arith.muli %i, %c4 : index
      %gi = npu.ptr gm 64 + %off
      npu.dma mte2 %u, %gi nburst 1 len 256 src_gap 0 : !ub, !npu.ptr<gm>
      npu.dma mte2 %l1, %gi nburst 4 len 32 src_gap 96 : !npu.ptr<l1>, !npu.ptr<gm>
    }
    // CHECK-NEXT: npu.dma mte1 %[[U]], %[[L1]] len 64 : !npu.ptr<ub>, !npu.ptr<l1>
    // CHECK-NEXT: npu.dma mte3 %[[L1]], %[[U]] len 64 dst_gap 32 : !npu.ptr<l1>, !npu.ptr<ub>
    // CHECK-NEXT: npu.dma v %[[U1]], %[[U]] len 32 : !npu.ptr<ub>, !npu.ptr<ub>
    npu.dma mte1 %u, %l1 len 64 : !ub, !npu.ptr<l1>
    npu.dma mte3 %l1, %u len 64 dst_gap 32 : !npu.ptr<l1>, !ub
    npu.dma v %u1, %u len 32 : !ub, !ub
    // pad (GM <-> UB and GM -> L1): bursts that are not whole 32-byte blocks
    // CHECK-NEXT: npu.dma mte2 %[[U]], %[[G]] len 20 pad : !npu.ptr<ub>, !npu.ptr<gm>
    // CHECK-NEXT: npu.dma mte3 %[[G]], %[[U1]] nburst 3 len 20 src_gap 32 dst_gap 8 pad : !npu.ptr<gm>, !npu.ptr<ub>
    // CHECK-NEXT: npu.dma mte2 %[[L1]], %[[G]] nburst 16 len 4 src_gap 256 pad : !npu.ptr<l1>, !npu.ptr<gm>
    npu.dma mte2 %u, %g len 20 pad : !ub, !npu.ptr<gm>
    npu.dma mte3 %g, %u1 nburst 3 len 20 src_gap 32 dst_gap 8 pad : !npu.ptr<gm>, !ub
    npu.dma mte2 %l1, %g nburst 16 len 4 src_gap 256 pad : !npu.ptr<l1>, !npu.ptr<gm>
    // CHECK-NEXT: %[[K:.*]] = npu.load_index %[[U]] {dtype = i64, bound = 50 : i64} : !npu.ptr<ub>
    // CHECK-NEXT: %[[K32:.*]] = npu.load_index %[[U1]] {dtype = i32, bound = 1 : i64} : !npu.ptr<ub>
    // CHECK-NEXT: %[[GK:.*]] = npu.ptr gm 0 + %[[K]]
    %k = npu.load_index %u {dtype = i64, bound = 50 : i64} : !ub
    %k32 = npu.load_index %u1 {dtype = i32, bound = 1 : i64} : !ub
    %gk = npu.ptr gm 0 + %k
    // CHECK-NEXT: npu.load_2d %[[LA]], %[[L1]] repeat 4 src_stride 2 : !npu.ptr<l0a>, !npu.ptr<l1>
    // CHECK-NEXT: npu.load_2d %[[LB]], %[[L1]] repeat 4 transpose : !npu.ptr<l0b>, !npu.ptr<l1>
    npu.load_2d %la, %l1 repeat 4 src_stride 2 : !npu.ptr<l0a>, !npu.ptr<l1>
    npu.load_2d %lb, %l1 repeat 4 transpose : !npu.ptr<l0b>, !npu.ptr<l1>
    // CHECK-NEXT: npu.load_3d %[[LA]], %[[L1]] fm_h 8 fm_w 8 kh 3 kw 3 stride_h 2 pad_top 1 pad_left 1 dilation_w 2 m_start 16 m_len 16 : !npu.ptr<l0a>, !npu.ptr<l1>
    npu.load_3d %la, %l1 fm_h 8 fm_w 8 kh 3 kw 3 stride_h 2 stride_w 1 pad_top 1 pad_left 1 dilation_w 2 m_start 16 m_len 16 : !npu.ptr<l0a>, !npu.ptr<l1>
    // CHECK-NEXT: npu.mmad f16 %[[LC]], %[[LA]], %[[LB]] m 16 n 32 k 64 : !npu.ptr<l0c>, !npu.ptr<l0a>, !npu.ptr<l0b>
    // CHECK-NEXT: npu.mmad f32 %[[LC]], %[[LA]], %[[LB]] m 16 n 16 k 8 accumulate : !npu.ptr<l0c>, !npu.ptr<l0a>, !npu.ptr<l0b>
    npu.mmad f16 %lc, %la, %lb m 16 n 32 k 64 : !npu.ptr<l0c>, !npu.ptr<l0a>, !npu.ptr<l0b>
    npu.mmad f32 %lc, %la, %lb m 16 n 16 k 8 accumulate : !npu.ptr<l0c>, !npu.ptr<l0a>, !npu.ptr<l0b>
    // CHECK-NEXT: npu.dma v %[[U]], %[[LC]] nburst 2 len 1024 src_gap 1024 cast_f16 : !npu.ptr<ub>, !npu.ptr<l0c>
    npu.dma v %u, %lc nburst 2 len 1024 src_gap 1024 cast_f16 : !ub, !npu.ptr<l0c>
    // CHECK-NEXT: npu.vadd f16 %[[U]], %[[U]], %[[U1]] repeat 2 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>
    // CHECK-NEXT: npu.vsub f16 %[[U]], %[[U]], %[[U1]] repeat 2 mask 100 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>
    // CHECK-NEXT: npu.vmul f32 %[[U]], %[[U]], %[[U1]] repeat 2 mask 32 src1_rep 0 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>
    // CHECK-NEXT: npu.vdiv f32 %[[U]], %[[U]], %[[U1]] repeat 1 dst_blk 2 src0_blk 2 src1_blk 2 dst_rep 16 src0_rep 16 src1_rep 16 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>
    // CHECK-NEXT: npu.vmax f16 %[[U]], %[[U]], %[[U1]] repeat 255 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>
    // CHECK-NEXT: npu.vmin f16 %[[U]], %[[U]], %[[U1]] repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>
    npu.vadd f16 %u, %u, %u1 repeat 2 mask 128 : !ub, !ub, !ub
    npu.vsub f16 %u, %u, %u1 repeat 2 mask 100 : !ub, !ub, !ub
    npu.vmul f32 %u, %u, %u1 repeat 2 mask 32 src1_rep 0 : !ub, !ub, !ub
    npu.vdiv f32 %u, %u, %u1 repeat 1 dst_blk 2 src0_blk 2 src1_blk 2 dst_rep 16 src0_rep 16 src1_rep 16 : !ub, !ub, !ub
    npu.vmax f16 %u, %u, %u1 repeat 255 : !ub, !ub, !ub
    npu.vmin f16 %u, %u, %u1 repeat 1 : !ub, !ub, !ub
    // CHECK-NEXT: npu.vrelu f16 %[[U]], %[[U1]] repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>
    // CHECK-NEXT: npu.vexp f32 %[[U]], %[[U1]] repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>
    // CHECK-NEXT: npu.vln f32 %[[U]], %[[U1]] repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>
    // CHECK-NEXT: npu.vsqrt f32 %[[U]], %[[U1]] repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>
    // CHECK-NEXT: npu.vabs f16 %[[U]], %[[U1]] repeat 3 src_rep 4 : !npu.ptr<ub>, !npu.ptr<ub>
    npu.vrelu f16 %u, %u1 repeat 1 : !ub, !ub
    npu.vexp f32 %u, %u1 repeat 1 : !ub, !ub
    npu.vln f32 %u, %u1 repeat 1 : !ub, !ub
    npu.vsqrt f32 %u, %u1 repeat 1 : !ub, !ub
    npu.vabs f16 %u, %u1 repeat 3 src_rep 4 : !ub, !ub
    // CHECK-NEXT: npu.vadds f16 %[[U]], %[[U1]] scalar 1.5 repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>
    // CHECK-NEXT: npu.vmuls f32 %[[U]], %[[U1]] scalar -0.25 repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>
    // CHECK-NEXT: npu.vmaxs f16 %[[U]], %[[U1]] scalar -inf repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>
    npu.vadds f16 %u, %u1 scalar 1.5 repeat 1 : !ub, !ub
    npu.vmuls f32 %u, %u1 scalar -0.25 repeat 1 : !ub, !ub
    npu.vmaxs f16 %u, %u1 scalar -inf repeat 1 : !ub, !ub
    // CHECK-NEXT: npu.vreduce_sum f32 %[[U]], %[[U1]] repeat 4 src_rep 32 : !npu.ptr<ub>, !npu.ptr<ub>
    // CHECK-NEXT: npu.vreduce_max f16 %[[U]], %[[U1]] repeat 2 mask 64 : !npu.ptr<ub>, !npu.ptr<ub>
    npu.vreduce_sum f32 %u, %u1 repeat 4 src_rep 32 : !ub, !ub
    npu.vreduce_max f16 %u, %u1 repeat 2 mask 64 : !ub, !ub
    // CHECK-NEXT: npu.vconv f16 f32 %[[U]], %[[U1]] repeat 2 : !npu.ptr<ub>, !npu.ptr<ub>
    // CHECK-NEXT: npu.vconv f32 f16 %[[U]], %[[U1]] repeat 2 src_rep 8 : !npu.ptr<ub>, !npu.ptr<ub>
    npu.vconv f16 f32 %u, %u1 repeat 2 dst_rep 4 src_rep 8 : !ub, !ub
    npu.vconv f32 f16 %u, %u1 repeat 2 src_rep 8 : !ub, !ub
    // Integer sources (s32/s64, written i32/i64): a repeat covers 256 bytes of
    // the wider side, so f32 <- i64 is 32 elements (mask 32, dst_rep 4,
    // src_rep 8 by default) and f16 <- i32 64 (dst_rep 4, src_rep 8);
    // defaults are dropped.
    // CHECK-NEXT: npu.vconv f32 i64 %[[U]], %[[U1]] repeat 2 : !npu.ptr<ub>, !npu.ptr<ub>
    // CHECK-NEXT: npu.vconv f16 i32 %[[U]], %[[U1]] repeat 1 mask 40 : !npu.ptr<ub>, !npu.ptr<ub>
    // CHECK-NEXT: npu.vconv f32 i32 %[[U]], %[[U1]] repeat 3 : !npu.ptr<ub>, !npu.ptr<ub>
    // CHECK-NEXT: npu.vconv f32 i64 %[[U]], %[[U1]] repeat 1 dst_rep 8 src_rep 16 : !npu.ptr<ub>, !npu.ptr<ub>
    npu.vconv f32 i64 %u, %u1 repeat 2 dst_rep 4 src_rep 8 : !ub, !ub
    npu.vconv f16 i32 %u, %u1 repeat 1 mask 40 dst_rep 4 src_rep 8 : !ub, !ub
    npu.vconv f32 i32 %u, %u1 repeat 3 dst_rep 8 src_rep 8 : !ub, !ub
    npu.vconv f32 i64 %u, %u1 repeat 1 mask 32 dst_rep 8 src_rep 16 : !ub, !ub
    // CHECK-NEXT: npu.vdup f32 %[[U]] scalar 0.0 repeat 3 : !npu.ptr<ub>
    // CHECK-NEXT: npu.vdup f16 %[[U]] scalar nan repeat 1 mask 16 : !npu.ptr<ub>
    npu.vdup f32 %u scalar 0.0 repeat 3 : !ub
    npu.vdup f16 %u scalar nan repeat 1 mask 16 : !ub
    // CHECK-NEXT: npu.vrec f16 %[[U]], %[[U1]] repeat 2 : !npu.ptr<ub>, !npu.ptr<ub>
    // CHECK-NEXT: npu.vrsqrt f32 %[[U]], %[[U1]] repeat 1 mask 32 dst_blk 2 : !npu.ptr<ub>, !npu.ptr<ub>
    // CHECK-NEXT: npu.vmins f16 %[[U]], %[[U1]] scalar 6.0 repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>
    npu.vrec f16 %u, %u1 repeat 2 : !ub, !ub
    npu.vrsqrt f32 %u, %u1 repeat 1 mask 32 dst_blk 2 dst_rep 8 : !ub, !ub
    npu.vmins f16 %u, %u1 scalar 6.0 repeat 1 : !ub, !ub
    // CHECK-NEXT: npu.vcmp_lt f32 %[[U]], %[[U]], %[[U1]] repeat 2 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>
    // CHECK-NEXT: npu.vcmp_le f16 %[[U]], %[[U]], %[[U1]] repeat 1 mask 100 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>
    // CHECK-NEXT: npu.vcmp_gt f32 %[[U]], %[[U]], %[[U1]] repeat 1 src1_rep 0 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>
    // CHECK-NEXT: npu.vcmp_ge f16 %[[U]], %[[U]], %[[U1]] repeat 1 dst_blk 2 src0_blk 2 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>
    // CHECK-NEXT: npu.vcmp_eq f32 %[[U]], %[[U]], %[[U1]] repeat 3 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>
    // CHECK-NEXT: npu.vcmp_ne f16 %[[U]], %[[U]], %[[U1]] repeat 1 mask 1 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>
    npu.vcmp_lt f32 %u, %u, %u1 repeat 2 : !ub, !ub, !ub
    npu.vcmp_le f16 %u, %u, %u1 repeat 1 mask 100 : !ub, !ub, !ub
    npu.vcmp_gt f32 %u, %u, %u1 repeat 1 src1_rep 0 : !ub, !ub, !ub
    npu.vcmp_ge f16 %u, %u, %u1 repeat 1 dst_blk 2 src0_blk 2 : !ub, !ub, !ub
    npu.vcmp_eq f32 %u, %u, %u1 repeat 3 : !ub, !ub, !ub
    npu.vcmp_ne f16 %u, %u, %u1 repeat 1 mask 1 : !ub, !ub, !ub
    // CHECK-NEXT: npu.vsel f32 %[[U]], %[[U1]], %[[U]], %[[U1]] repeat 2 mask 60 src1_blk 2 cond_rep 0 src1_rep 16 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>
    npu.vsel f32 %u, %u1, %u, %u1 repeat 2 mask 60 cond_rep 0 src1_blk 2 src1_rep 16 : !ub, !ub, !ub, !ub
    // CHECK-NEXT: npu.vbrcb f16 %[[U]], %[[U1]] repeat 4 : !npu.ptr<ub>, !npu.ptr<ub>
    // CHECK-NEXT: npu.vbrcb f32 %[[U]], %[[U1]] repeat 2 dst_blk 2 dst_rep 16 : !npu.ptr<ub>, !npu.ptr<ub>
    npu.vbrcb f16 %u, %u1 repeat 4 dst_blk 1 dst_rep 8 : !ub, !ub
    npu.vbrcb f32 %u, %u1 repeat 2 dst_blk 2 dst_rep 16 : !ub, !ub
    // CHECK-NEXT: npu.set_flag mte2 -> v event 0
    // CHECK-NEXT: npu.wait_flag mte2 -> v event 0
    // CHECK-NEXT: npu.set_flag mte3 -> s event 7
    // CHECK-NEXT: npu.wait_flag mte3 -> s event 7
    // CHECK-NEXT: npu.pipe_barrier v
    // CHECK-NEXT: npu.pipe_barrier all
    npu.set_flag mte2 -> v event 0
    npu.wait_flag mte2 -> v event 0
    npu.set_flag mte3 -> s event 7
    npu.wait_flag mte3 -> s event 7
    npu.pipe_barrier v
    npu.pipe_barrier all
    // CHECK-NEXT: npu.dma mte3 %[[G]], %[[U]] len 512 : !npu.ptr<gm>, !npu.ptr<ub>
    npu.dma mte3 %g, %u len 512 : !npu.ptr<gm>, !ub
  }
  // CHECK:      npu.launch @k block_dim 2 stream 0
  // CHECK-NEXT: npu.stream_record stream 0 event 0
  // CHECK-NEXT: npu.stream_wait stream 1 event 0
  // CHECK-NEXT: npu.launch @k block_dim 8 stream 1
  npu.launch @k block_dim 2 stream 0
  npu.stream_record stream 0 event 0
  npu.stream_wait stream 1 event 0
  npu.launch @k block_dim 8 stream 1
}

// A kernel alike another: no body, the other's code with its GM pointers
// into "x" moved 4,096 bytes (they name their tensor).
// CHECK-LABEL: npu.program @alike gm_size 8192 {
// CHECK:         npu.kernel @first {
// CHECK-NEXT:      %{{.*}} = npu.ptr gm 0 {ge.tensor = "x"}
// CHECK:         npu.kernel @second alike @first moves {x = 4096 : i64} attributes {ge.kind = "elementwise"}{{$}}
// CHECK-NEXT:    npu.launch @second block_dim 1 stream 0
npu.program @alike gm_size 8192 {
  npu.kernel @first {
    %g = npu.ptr gm 0 {ge.tensor = "x"}
    %u = npu.ptr ub 0
    npu.dma mte2 %u, %g len 256 : !npu.ptr<ub>, !npu.ptr<gm>
  }
  npu.launch @first block_dim 1 stream 0
  npu.kernel @second alike @first moves {x = 4096 : i64} attributes {ge.kind = "elementwise"}
  npu.launch @second block_dim 1 stream 0
}

// CHECK: dialect_resources
// CHECK: blob: "0x020000000040003C"
{-#
  dialect_resources: {
    builtin: {
      blob: "0x020000000040003C"
    }
  }
#-}
