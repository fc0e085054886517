// npu.memcpy: copies between GM and the program's host memory (host_size).
// The custom form parses and prints back the same, and so does the generic
// form, which shows every property; host_size is printed only when > 0.
// RUN: ge-opt %s --split-input-file | ge-opt --split-input-file | filecheck %s
// RUN: ge-opt %s --split-input-file --print-op-generic | ge-opt --split-input-file | filecheck %s
// RUN: ge-opt %s --split-input-file --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: npu.program @offload gm_size 4096 host_size 2048 {
// GENERIC-LABEL: "npu.program"() <{sym_name = "offload", gm_size = 4096 : i64, host_size = 2048 : i64}> ({
npu.program @offload gm_size 4096 host_size 2048 {
  npu.kernel @k0 {
  }
  // CHECK: npu.launch @k0 block_dim 1 stream 0
  npu.launch @k0 block_dim 1 stream 0
  // CHECK-NEXT: npu.memcpy @x_offload d2h gm 1024 host 0 bytes 1024 stream 1 attributes {ge.source = "offload of conv_3", ge.tensor = "conv_3"}
  // GENERIC: "npu.memcpy"() <{sym_name = "x_offload", direction = "d2h", gm_offset = 1024 : i64, host_offset = 0 : i64, nbytes = 1024 : i64, stream = 1 : i64}> {ge.source = "offload of conv_3", ge.tensor = "conv_3"} : () -> ()
  npu.memcpy @x_offload d2h gm 1024 host 0 bytes 1024 stream 1 attributes {ge.source = "offload of conv_3", ge.tensor = "conv_3"}
  // CHECK-NEXT: npu.stream_record stream 1 event 0
  // CHECK-NEXT: npu.stream_wait stream 0 event 0
  npu.stream_record stream 1 event 0
  npu.stream_wait stream 0 event 0
  // The last bytes of both memories; no attributes.
  // CHECK-NEXT: npu.memcpy @x_reload h2d gm 3072 host 1024 bytes 1024 stream 0{{$}}
  // GENERIC: "npu.memcpy"() <{sym_name = "x_reload", direction = "h2d", gm_offset = 3072 : i64, host_offset = 1024 : i64, nbytes = 1024 : i64, stream = 0 : i64}> : () -> ()
  npu.memcpy @x_reload h2d gm 3072 host 1024 bytes 1024 stream 0
}

// -----

// host_size 0 is no host memory: not printed, no property.
// CHECK-LABEL: npu.program @none gm_size 64 {
// GENERIC-LABEL: "npu.program"() <{sym_name = "none", gm_size = 64 : i64}> ({
npu.program @none gm_size 64 host_size 0 {
}
