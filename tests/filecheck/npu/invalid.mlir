// Every verifier error of the npu dialect, one per chunk, checked with MLIR's
// --verify-diagnostics semantics. Messages name the op, say what is wrong and
// what is allowed.
// RUN: ge-opt %s --split-input-file --verify-diagnostics

npu.program @p gm_size 1024 {
  npu.kernel @k {
    // expected-error@+1 {{npu.ptr: ub address 100 is not aligned to 32 bytes}}
    %u = npu.ptr ub 100
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    // expected-error@+1 {{npu.ptr: l0a address 256 is not aligned to 512 bytes}}
    %a = npu.ptr l0a 256
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    // expected-error@+1 {{npu.ptr: offset must be >= 0, got -64}}
    %u = npu.ptr ub -64
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %g = npu.ptr gm 0
    %a = npu.ptr l0a 0
    // expected-error@+1 {{npu.dma: no DMA path moves gm -> l0a}}
    npu.dma mte2 %a, %g len 512 : !npu.ptr<l0a>, !npu.ptr<gm>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %g = npu.ptr gm 0
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.dma: gm -> ub moves on mte2, not mte1}}
    npu.dma mte1 %u, %g len 32 : !npu.ptr<ub>, !npu.ptr<gm>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %g = npu.ptr gm 0
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.dma: nburst must be [1, 4095], got 0}}
    npu.dma mte2 %u, %g nburst 0 len 32 : !npu.ptr<ub>, !npu.ptr<gm>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %g = npu.ptr gm 0
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.dma: len must be >= 1, got 0}}
    npu.dma mte2 %u, %g len 0 : !npu.ptr<ub>, !npu.ptr<gm>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %g = npu.ptr gm 0
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.dma: src_gap must be >= 0, got -32}}
    npu.dma mte2 %u, %g nburst 2 len 32 src_gap -32 : !npu.ptr<ub>, !npu.ptr<gm>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %g = npu.ptr gm 0
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.dma: burst length and dst_gap must be multiples of 32 bytes on the destination side (ub), got len=48, dst_gap=0}}
    npu.dma mte2 %u, %g len 48 : !npu.ptr<ub>, !npu.ptr<gm>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %l1 = npu.ptr l1 0
    %a = npu.ptr l0a 0
    // expected-error@+1 {{npu.dma: burst length and dst_gap must be multiples of 512 bytes on the destination side (l0a)}}
    npu.dma mte1 %a, %l1 len 256 : !npu.ptr<l0a>, !npu.ptr<l1>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %g = npu.ptr gm 0
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.dma: cast_f16 is only valid for l0c -> ub}}
    npu.dma mte3 %g, %u len 64 cast_f16 : !npu.ptr<gm>, !npu.ptr<ub>
  }
}

// -----

// pad is a feature of GM <-> UB (DataCopyPad) and GM -> L1 (the nd2nz load):
// not of the on-chip paths
npu.program @p gm_size 1024 {
  npu.kernel @k {
    %l1 = npu.ptr l1 0
    %a = npu.ptr l0a 0
    // expected-error@+1 {{npu.dma: pad is only valid for gm <-> ub and gm -> l1, not l1 -> l0a}}
    npu.dma mte1 %a, %l1 len 512 pad : !npu.ptr<l0a>, !npu.ptr<l1>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %u = npu.ptr ub 0
    %l1 = npu.ptr l1 0
    // expected-error@+1 {{npu.dma: pad is only valid for gm <-> ub and gm -> l1, not ub -> l1}}
    npu.dma mte3 %l1, %u len 20 pad : !npu.ptr<l1>, !npu.ptr<ub>
  }
}

// -----

// pad and cast_f16 never go together (cast_f16 is l0c -> ub only)
npu.program @p gm_size 1024 {
  npu.kernel @k {
    %c = npu.ptr l0c 0
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.dma: pad is only valid for gm <-> ub and gm -> l1, not l0c -> ub}}
    npu.dma v %u, %c len 1024 cast_f16 pad : !npu.ptr<ub>, !npu.ptr<l0c>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %g = npu.ptr gm 0
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.dma: cast_f16 is only valid for l0c -> ub}}
    npu.dma mte2 %u, %g len 20 cast_f16 pad : !npu.ptr<ub>, !npu.ptr<gm>
  }
}

// -----

// A padded burst takes whole blocks in UB and its gap counts from there:
// 20 bytes + a gap of 12 would be 32 without the padding, but the padded
// burst is already 32 bytes, so the gap of 12 leaves the next burst unaligned.
npu.program @p gm_size 1024 {
  npu.kernel @k {
    %g = npu.ptr gm 0
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.dma: burst length and dst_gap must be multiples of 32 bytes on the destination side (ub), got len=32, dst_gap=12}}
    npu.dma mte2 %u, %g nburst 2 len 20 dst_gap 12 pad : !npu.ptr<ub>, !npu.ptr<gm>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %g = npu.ptr gm 0
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.dma: burst length and src_gap must be multiples of 32 bytes on the source side (ub), got len=32, src_gap=12}}
    npu.dma mte3 %g, %u nburst 2 len 20 src_gap 12 pad : !npu.ptr<gm>, !npu.ptr<ub>
  }
}

// -----

// Without pad a burst into UB is whole blocks
npu.program @p gm_size 1024 {
  npu.kernel @k {
    %g = npu.ptr gm 0
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.dma: burst length and dst_gap must be multiples of 32 bytes on the destination side (ub), got len=20, dst_gap=0}}
    npu.dma mte2 %u, %g len 20 : !npu.ptr<ub>, !npu.ptr<gm>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %u = npu.ptr ub 0
    %a = npu.ptr l0a 0
    // expected-error@+1 {{npu.load_2d: operand 'src' must point into l1, got ub}}
    npu.load_2d %a, %u repeat 1 : !npu.ptr<l0a>, !npu.ptr<ub>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %l1 = npu.ptr l1 0
    %c = npu.ptr l0c 0
    // expected-error@+1 {{npu.load_2d: operand 'dst' must point into l0a or l0b, got l0c}}
    npu.load_2d %c, %l1 repeat 1 : !npu.ptr<l0c>, !npu.ptr<l1>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %l1 = npu.ptr l1 0
    %a = npu.ptr l0a 0
    // expected-error@+1 {{npu.load_2d: repeat must be [1, 255], got 256 (split into several loads)}}
    npu.load_2d %a, %l1 repeat 256 : !npu.ptr<l0a>, !npu.ptr<l1>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %l1 = npu.ptr l1 0
    %a = npu.ptr l0a 0
    // expected-error@+1 {{npu.load_3d: m_len must be a multiple of 16, got 20}}
    npu.load_3d %a, %l1 fm_h 8 fm_w 8 kh 3 kw 3 m_len 20 : !npu.ptr<l0a>, !npu.ptr<l1>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %l1 = npu.ptr l1 0
    %a = npu.ptr l0a 0
    // expected-error@+1 {{npu.load_3d: the kernel does not fit the padded feature map (output would be 0x0)}}
    npu.load_3d %a, %l1 fm_h 2 fm_w 2 kh 3 kw 3 m_len 16 : !npu.ptr<l0a>, !npu.ptr<l1>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %l1 = npu.ptr l1 0
    %a = npu.ptr l0a 0
    // expected-error@+1 {{npu.load_3d: m_start must be [0, 35], got 36 (the output has 36 rows)}}
    npu.load_3d %a, %l1 fm_h 8 fm_w 8 kh 3 kw 3 m_start 36 m_len 16 : !npu.ptr<l0a>, !npu.ptr<l1>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %l1 = npu.ptr l1 0
    %a = npu.ptr l0a 0
    // expected-error@+1 {{npu.load_3d: stride_h must be [1, 63], got 0}}
    npu.load_3d %a, %l1 fm_h 8 fm_w 8 kh 3 kw 3 stride_h 0 m_len 16 : !npu.ptr<l0a>, !npu.ptr<l1>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %a = npu.ptr l0a 0
    %b = npu.ptr l0b 0
    %c = npu.ptr l0c 0
    // expected-error@+1 {{npu.mmad: m must be a multiple of 16 for f16, got 24}}
    npu.mmad f16 %c, %a, %b m 24 n 16 k 16 : !npu.ptr<l0c>, !npu.ptr<l0a>, !npu.ptr<l0b>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %a = npu.ptr l0a 0
    %b = npu.ptr l0b 0
    %c = npu.ptr l0c 0
    // expected-error@+1 {{npu.mmad: k must be a multiple of 8 for f32, got 12}}
    npu.mmad f32 %c, %a, %b m 16 n 16 k 12 : !npu.ptr<l0c>, !npu.ptr<l0a>, !npu.ptr<l0b>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %a = npu.ptr l0a 0
    %b = npu.ptr l0b 0
    %c = npu.ptr l0c 0
    // expected-error@+1 {{npu.mmad: n must be [1, 4095], got 4096}}
    npu.mmad f16 %c, %a, %b m 16 n 4096 k 16 : !npu.ptr<l0c>, !npu.ptr<l0a>, !npu.ptr<l0b>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %a = npu.ptr l0a 0
    %b = npu.ptr l0b 0
    %c = npu.ptr l0c 0
    // expected-error@+1 {{npu.mmad: dtype must be f16 or f32, got f64}}
    npu.mmad f64 %c, %a, %b m 16 n 16 k 16 : !npu.ptr<l0c>, !npu.ptr<l0a>, !npu.ptr<l0b>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %a = npu.ptr l0a 0
    %b = npu.ptr l0b 0
    %c = npu.ptr l0c 0
    // expected-error@+1 {{npu.mmad: operand 'a' must point into l0a, got l0b}}
    npu.mmad f16 %c, %b, %b m 16 n 16 k 16 : !npu.ptr<l0c>, !npu.ptr<l0b>, !npu.ptr<l0b>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %u = npu.ptr ub 0
    %l1 = npu.ptr l1 0
    // expected-error@+1 {{npu.vadd: operand 'src1' must point into ub, got l1}}
    npu.vadd f16 %u, %u, %l1 repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<l1>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.vmul: repeat must be [1, 255], got 256 (split into several instructions)}}
    npu.vmul f16 %u, %u, %u repeat 256 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.vexp: mask must be [1, 64], got 128}}
    npu.vexp f32 %u, %u repeat 1 mask 128 : !npu.ptr<ub>, !npu.ptr<ub>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.vadds: src_rep must be [0, 255], got 256}}
    npu.vadds f16 %u, %u scalar 1.0 repeat 1 src_rep 256 : !npu.ptr<ub>, !npu.ptr<ub>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.vrelu: dtype must be f16 or f32, got bf16}}
    npu.vrelu bf16 %u, %u repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.vconv: source and destination dtypes are both f32; use f32 <-> f16}}
    npu.vconv f32 f32 %u, %u repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.vreduce_sum: repeat must be [1, 255], got 0}}
    npu.vreduce_sum f32 %u, %u repeat 0 : !npu.ptr<ub>, !npu.ptr<ub>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.vdup: dst_blk must be [0, 255], got -1}}
    npu.vdup f16 %u scalar 0.0 repeat 1 dst_blk -1 : !npu.ptr<ub>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %u = npu.ptr ub 0
    %l1 = npu.ptr l1 0
    // expected-error@+1 {{npu.vsel: operand 'cond' must point into ub, got l1}}
    npu.vsel f16 %u, %l1, %u, %u repeat 1 : !npu.ptr<ub>, !npu.ptr<l1>, !npu.ptr<ub>, !npu.ptr<ub>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.vcmp_lt: mask must be [1, 64], got 65}}
    npu.vcmp_lt f32 %u, %u, %u repeat 1 mask 65 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.vbrcb: dst_rep must be [0, 255], got 256}}
    npu.vbrcb f16 %u, %u repeat 1 dst_rep 256 : !npu.ptr<ub>, !npu.ptr<ub>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.vrsqrt: dtype must be f16 or f32, got bf16}}
    npu.vrsqrt bf16 %u, %u repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.vmins: repeat must be [1, 255], got 256 (split into several instructions)}}
    npu.vmins f32 %u, %u scalar 0.5 repeat 256 : !npu.ptr<ub>, !npu.ptr<ub>
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    // expected-error@+1 {{npu.set_flag: source and destination pipe are both v; use npu.pipe_barrier v to order work within a pipe}}
    npu.set_flag v -> v event 0
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    // expected-error@+1 {{npu.wait_flag: event must be in [0, 7], got 8}}
    npu.wait_flag mte2 -> v event 8
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    // expected-error@+1 {{npu.set_flag: a flag connects two pipes, not 'all'}}
    npu.set_flag all -> v event 0
  }
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
    // expected-error@+1 {{npu.pipe_barrier: the scalar pipe is in order already}}
    npu.pipe_barrier s
  }
}

// -----

// expected-error@+1 {{npu.program: gm_size must be > 0, got 0}}
npu.program @p gm_size 0 {
}

// -----

// expected-error@+1 {{npu.program: constants 'a' and 'b' overlap in GM}}
npu.program @p gm_size 1024 {
  npu.constant "a" at 0 = dense<1.0> : tensor<8xf32>
  npu.constant "b" at 16 = dense<2.0> : tensor<8xf32>
}

// -----

npu.program @p gm_size 1024 {
  // expected-error@+1 {{npu.input: 'x' occupies GM [512, 2560) beyond gm_size 1024}}
  npu.input "x" at 512 : tensor<32x32xf16>
}

// -----

npu.program @p gm_size 1024 {
  // expected-error@+1 {{npu.output: 'y' has a negative GM offset -2}}
  npu.output "y" at -2 : tensor<4xf16>
}

// -----

npu.program @p gm_size 1024 {
  // expected-error@+1 {{npu.input: 'x' needs a static shape and a sized element type, got tensor<?x4xf16>}}
  npu.input "x" at 0 : tensor<?x4xf16>
}

// -----

npu.program @p gm_size 16 {
  // expected-error@+1 {{npu.constant: 'w' occupies GM [0, 32) beyond gm_size 16}}
  npu.constant "w" at 0 = dense<0.0> : tensor<8xf32>
}

// -----

npu.program @p gm_size 1024 {
  // expected-error@+1 {{npu.launch: no npu.kernel named @missing}}
  npu.launch @missing block_dim 1 stream 0
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
  }
  // expected-error@+1 {{npu.launch: block_dim must be in [1, 65535], got 0}}
  npu.launch @k block_dim 0 stream 0
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
  }
  // expected-error@+1 {{npu.launch: stream must be >= 0}}
  npu.launch @k block_dim 1 stream -1
}

// -----

npu.program @p gm_size 1024 {
  // expected-error@+1 {{npu.stream_wait: event 3 is not recorded by an earlier npu.stream_record}}
  npu.stream_wait stream 1 event 3
}

// -----

npu.program @p gm_size 1024 {
  // expected-error@+1 {{npu.stream_record: stream and event must be >= 0}}
  npu.stream_record stream 0 event -1
}

// -----

// expected-error@+1 {{'npu.block_idx' expects ancestor op 'npu.kernel'}}
%b = npu.block_idx

// -----

// expected-error@+1 {{'npu.kernel' expects parent op 'npu.program'}}
npu.kernel @k {
}

// -----

// npu.aicpu: offsets, types and scales come one of each per operand.
npu.program @p gm_size 1024 {
  // expected-error@+1 {{npu.aicpu @t: 2 input offset(s), 1 input type(s) and 2 input scale(s); there must be one of each per input}}
  "npu.aicpu"() <{sym_name = "t", stream = 0 : i64, in_offsets = array<i64: 0, 64>, in_types = [tensor<4xf32>], in_scales = array<f64: 1.0, 1.0>, out_offsets = array<i64>, out_types = [], out_scales = array<f64>}> ({
  ^bb0(%a: tensor<4xf32>):
    npu.aicpu_return
  }) : () -> ()
}

// -----

npu.program @p gm_size 1024 {
  // expected-error@+1 {{npu.aicpu @t: the body takes 1 argument(s) but the task has 2 input(s)}}
  npu.aicpu @t stream 0 ins [0 : tensor<4xf32>, 16 : tensor<4xf32>] outs [] {
  ^bb0(%a: tensor<4xf32>):
    npu.aicpu_return
  }
}

// -----

npu.program @p gm_size 1024 {
  // expected-error@+1 {{npu.aicpu @t: npu.aicpu_return gives 1 value(s) but the task has 2 output(s)}}
  npu.aicpu @t stream 0 ins [0 : tensor<4xf32>] outs [16 : tensor<4xf32>, 32 : tensor<4xf32>] {
  ^bb0(%a: tensor<4xf32>):
    npu.aicpu_return %a : tensor<4xf32>
  }
}

// -----

// The body ends with npu.aicpu_return (xDSL's terminator check).
npu.program @p gm_size 1024 {
  npu.aicpu @t stream 0 ins [0 : tensor<4xf32>] outs [] {
  ^bb0(%a: tensor<4xf32>):
    // expected-error@+1 {{Operation graph.neg terminates block in single-block region but is not a terminator}}
    %n = graph.neg %a : (tensor<4xf32>) -> tensor<4xf32>
  }
}

// -----

npu.program @p gm_size 1024 {
  // expected-error@+1 {{npu.aicpu @t: input #0: the body argument is tensor<2x2xf32> but the stored tensor is tensor<4xf32>; their shapes must be equal}}
  npu.aicpu @t stream 0 ins [0 : tensor<4xf32>] outs [] {
  ^bb0(%a: tensor<2x2xf32>):
    npu.aicpu_return
  }
}

// -----

npu.program @p gm_size 1024 {
  // expected-error@+1 {{npu.aicpu @t: output #0: the returned value is tensor<4xf32> but the stored tensor is tensor<1x4xf16>; their shapes must be equal}}
  npu.aicpu @t stream 0 ins [0 : tensor<4xf32>] outs [64 : tensor<1x4xf16>] {
  ^bb0(%a: tensor<4xf32>):
    npu.aicpu_return %a : tensor<4xf32>
  }
}

// -----

npu.program @p gm_size 1024 {
  // expected-error@+1 {{npu.aicpu @t: output #0 occupies GM [1000, 1032) beyond gm_size 1024}}
  npu.aicpu @t stream 0 ins [0 : tensor<8xf32>] outs [1000 : tensor<8xf32>] {
  ^bb0(%a: tensor<8xf32>):
    npu.aicpu_return %a : tensor<8xf32>
  }
}

// -----

npu.program @p gm_size 1024 {
  // expected-error@+1 {{npu.aicpu @t: input #0 has a negative GM offset -32}}
  npu.aicpu @t stream 0 ins [-32 : tensor<8xf32>] outs [] {
  ^bb0(%a: tensor<8xf32>):
    npu.aicpu_return
  }
}

// -----

npu.program @p gm_size 1024 {
  // expected-error@+1 {{npu.aicpu @t: input #0 has scale -0.5; a scale must be finite and > 0}}
  npu.aicpu @t stream 0 ins [0 : tensor<8xf16> scale -0.5] outs [] {
  ^bb0(%a: tensor<8xf32>):
    npu.aicpu_return
  }
}

// -----

npu.program @p gm_size 1024 {
  // expected-error@+1 {{npu.aicpu @t: output #0 has scale 0.0; a scale must be finite and > 0}}
  npu.aicpu @t stream 0 ins [] outs [0 : tensor<8xf16> scale 0.0] {
    %z = graph.fill 0.0 : tensor<8xf32>
    npu.aicpu_return %z : tensor<8xf32>
  }
}

// -----

npu.program @p gm_size 1024 {
  // expected-error@+1 {{npu.aicpu @t: input #0 is not a float tensor (tensor<8xi64>); its scale must be 1.0, got 2.0}}
  npu.aicpu @t stream 0 ins [0 : tensor<8xi64> scale 2.0] outs [] {
  ^bb0(%a: tensor<8xi64>):
    npu.aicpu_return
  }
}

// -----

npu.program @p gm_size 1024 {
  // expected-error@+1 {{npu.aicpu @t: input #0 is stored as bf16; the AI CPU reads and writes f16, f32, f64, i64, i32, i16, i8, ui8, i1}}
  npu.aicpu @t stream 0 ins [0 : tensor<8xbf16>] outs [] {
  ^bb0(%a: tensor<8xf32>):
    npu.aicpu_return
  }
}

// -----

npu.program @p gm_size 1024 {
  // expected-error@+1 {{npu.aicpu @t: input #0: the body argument has element type f32 but the stored tensor i32; only float types may differ (f16/f32/f64)}}
  npu.aicpu @t stream 0 ins [0 : tensor<8xi32>] outs [] {
  ^bb0(%a: tensor<8xf32>):
    npu.aicpu_return
  }
}

// -----

npu.program @p gm_size 1024 {
  // expected-error@+1 {{npu.aicpu @t: stream must be >= 0}}
  npu.aicpu @t stream -1 ins [] outs [] {
    npu.aicpu_return
  }
}

// -----

// Task names share the program's symbol table with kernels.
// expected-error@+1 {{Redefinition of symbol "k"}}
npu.program @p gm_size 1024 {
  npu.kernel @k {
  }
  npu.aicpu @k stream 0 ins [] outs [] {
    npu.aicpu_return
  }
}

// -----

// expected-error@+1 {{'npu.aicpu' expects parent op 'npu.program'}}
npu.aicpu @t stream 0 ins [] outs [] {
  npu.aicpu_return
}

// -----

// npu.load_index: the scalar unit reads its index from UB only...
npu.program @p gm_size 1024 {
  npu.kernel @k {
    %g = npu.ptr gm 0
    // expected-error@+1 {{npu.load_index: reads ub, not !npu.ptr<gm>}}
    %k = npu.load_index %g {dtype = i64, bound = 4 : i64} : !npu.ptr<gm>
  }
}

// -----

// ... an i32 or i64 ...
npu.program @p gm_size 1024 {
  npu.kernel @k {
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.load_index: indices are i32 or i64, got i16}}
    %k = npu.load_index %u {dtype = i16, bound = 4 : i64} : !npu.ptr<ub>
  }
}

// -----

// ... into a table of at least one row.
npu.program @p gm_size 1024 {
  npu.kernel @k {
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.load_index: bound must be positive, got 0}}
    %k = npu.load_index %u {dtype = i64, bound = 0 : i64} : !npu.ptr<ub>
  }
}

// -----

// expected-error@+3 {{'npu.load_index' expects ancestor op 'npu.kernel'}}
func.func @outside() {
  %u = npu.ptr ub 0
  %k = npu.load_index %u {dtype = i64, bound = 4 : i64} : !npu.ptr<ub>
  func.return
}

// -----

// npu.vconv converts integers (i32/i64 sources, named s32/s64 in messages) to
// floats, never to an integer: the destination dtype is f16 or f32. (Today the
// property's constraint rejects it with xDSL's "Unexpected attribute i64"
// before the field check; either way the message names the op and the type.)
npu.program @p gm_size 1024 {
  npu.kernel @k {
    %u = npu.ptr ub 0
    %u1 = npu.ptr ub 512
    // expected-error-re@+1 {{npu.vconv{{.*(i64|s64)}}}}
    npu.vconv i64 f32 %u, %u1 repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>
  }
}

// -----

// ... nor integer to integer.
npu.program @p gm_size 1024 {
  npu.kernel @k {
    %u = npu.ptr ub 0
    %u1 = npu.ptr ub 512
    // expected-error-re@+1 {{npu.vconv{{.*(i32|s32)}}}}
    npu.vconv i32 i64 %u, %u1 repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>
  }
}

// -----

// The integer sources are 32 and 64 bits wide only.
npu.program @p gm_size 1024 {
  npu.kernel @k {
    %u = npu.ptr ub 0
    // expected-error@+1 {{npu.vconv: source dtype must be f16, f32, i32 or i64, got i16}}
    npu.vconv f32 i16 %u, %u repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>
  }
}

// -----

// f32 <- i64: a repeat is 32 elements (256 bytes of the i64 side).
npu.program @p gm_size 1024 {
  npu.kernel @k {
    %u = npu.ptr ub 0
    %u1 = npu.ptr ub 512
    // expected-error@+1 {{npu.vconv: mask must be [1, 32], got 64}}
    npu.vconv f32 i64 %u, %u1 repeat 1 mask 64 : !npu.ptr<ub>, !npu.ptr<ub>
  }
}

// -----

// The other vector instructions compute on f16/f32 only: no vadd on i64.
npu.program @p gm_size 1024 {
  npu.kernel @k {
    %u = npu.ptr ub 0
    // expected-error-re@+1 {{npu.vadd{{.*(i64|s64)}}}}
    npu.vadd i64 %u, %u, %u repeat 1 : !npu.ptr<ub>, !npu.ptr<ub>, !npu.ptr<ub>
  }
}

// -----

// npu.program: host_size is a byte count.
// expected-error@+1 {{npu.program: host_size must be >= 0, got -1}}
npu.program @p gm_size 1024 host_size -1 {
}

// -----

// npu.memcpy: d2h (GM -> host) or h2d (host -> GM).
npu.program @p gm_size 1024 host_size 1024 {
  // expected-error@+1 {{npu.memcpy @c: direction must be d2h (GM -> host) or h2d (host -> GM), got 'h2h'}}
  "npu.memcpy"() <{sym_name = "c", direction = "h2h", gm_offset = 0 : i64, host_offset = 0 : i64, nbytes = 64 : i64, stream = 0 : i64}> : () -> ()
}

// -----

npu.program @p gm_size 1024 host_size 1024 {
  // expected-error@+1 {{npu.memcpy @c: bytes must be > 0, got 0}}
  npu.memcpy @c d2h gm 0 host 0 bytes 0 stream 0
}

// -----

npu.program @p gm_size 1024 host_size 1024 {
  // expected-error@+1 {{npu.memcpy @c: gm offset must be >= 0, got -64}}
  npu.memcpy @c d2h gm -64 host 0 bytes 64 stream 0
}

// -----

npu.program @p gm_size 1024 host_size 1024 {
  // expected-error@+1 {{npu.memcpy @c: host offset must be >= 0, got -1}}
  npu.memcpy @c h2d gm 0 host -1 bytes 64 stream 0
}

// -----

npu.program @p gm_size 1024 host_size 4096 {
  // expected-error@+1 {{npu.memcpy @c: gm [1000, 1064) is outside [0, 1024) (the program's gm_size)}}
  npu.memcpy @c h2d gm 1000 host 0 bytes 64 stream 0
}

// -----

npu.program @p gm_size 1024 host_size 512 {
  // expected-error@+1 {{npu.memcpy @c: host [480, 544) is outside [0, 512) (the program's host_size)}}
  npu.memcpy @c d2h gm 0 host 480 bytes 64 stream 0
}

// -----

// Without host_size the program has no host memory to copy to.
npu.program @p gm_size 1024 {
  // expected-error@+1 {{npu.memcpy @c: host [0, 64) is outside [0, 0) (the program's host_size)}}
  npu.memcpy @c d2h gm 0 host 0 bytes 64 stream 0
}

// -----

npu.program @p gm_size 1024 host_size 1024 {
  // expected-error@+1 {{npu.memcpy @c: stream must be >= 0, got -1}}
  npu.memcpy @c d2h gm 0 host 0 bytes 64 stream -1
}

// -----

// A copy's name is a symbol of the program, like a kernel's.
// expected-error@+1 {{Redefinition of symbol "c"}}
npu.program @p gm_size 1024 host_size 1024 {
  npu.kernel @c {
  }
  npu.memcpy @c d2h gm 0 host 0 bytes 64 stream 0
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
  }
  // expected-error@+1 {{npu.kernel @k2: @nowhere is not a kernel with a body}}
  npu.kernel @k2 alike @nowhere moves {x = 64 : i64}
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
  }
  npu.kernel @k2 alike @k moves {x = 64 : i64}
  // expected-error@+1 {{npu.kernel @k3: @k2 is not a kernel with a body}}
  npu.kernel @k3 alike @k2 moves {x = 64 : i64}
}

// -----

npu.program @p gm_size 1024 {
  npu.kernel @k {
  }
  // expected-error@+1 {{npu.kernel @k2: moves are integers (bytes) by GM tensor}}
  npu.kernel @k2 alike @k moves {x = "far"}
}
