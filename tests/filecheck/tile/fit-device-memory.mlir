// tile-fit-device-memory: offload to host memory and recompute until the GM
// arena fits the limit (gedialects/tile/memory_limit.py).
// RUN: ge-opt %s --split-input-file -p 'tile-fit-device-memory{device-memory-limit=10000}' | filecheck %s
// RUN: ge-opt %s --split-input-file -p 'tile-fit-device-memory{device-memory-limit=10000},tile-assign-streams' | filecheck %s --check-prefix=STREAMS
// RUN: ge-opt %s --split-input-file -p 'tile-fit-device-memory{device-memory-limit=100000}' | filecheck %s --check-prefix=ROOM
// RUN: ge-opt %s --split-input-file -p tile-fit-device-memory | filecheck %s --check-prefix=NONE
// RUN: not ge-opt %s --split-input-file -p 'tile-fit-device-memory{device-memory-limit=9000}' 2>&1 | filecheck %s --check-prefix=TIGHT
// RUN: not ge-opt %s -p 'tile-assign-streams,tile-fit-device-memory{device-memory-limit=10000}' 2>&1 | filecheck %s --check-prefix=ORDER

// a (4 KB, a slot of 4608 bytes) is alive across k2, where the arena peaks
// (t, a, b: 13824 bytes). Its writer k1 read t, dead by then: a is copied to
// host after its last access before the peak (k1) and back before its next
// one (k3), which reads the copy; a's storage is free at k2: 9216 bytes.
// CHECK-LABEL: tile.program "offload"
// CHECK-SAME:  arena_size = 9216 : i64
// CHECK-SAME:  device_memory_limit = 10000 : i64, offloaded = 1 : i64, recomputed = 0 : i64, host_bytes = 4160 : i64, copy_cycles = 10328 : i64
// CHECK-SAME:  ge.arena_live_bytes = "4608;9216;4608;4608;9216;9216;9216"
// CHECK:      tile.tensor {name = "x", kind = "input", offset = 9216 : i64
// CHECK:      tile.tensor {ge.stored_bytes = 4096 : i64, name = "a_reloaded", kind = "internal", offset = 0 : i64
// CHECK:      tile.tensor {name = "a_host", kind = "host", offset = 0 : i64, type = tensor<1024xf32>, layout = "ND"}
// CHECK:      tile.kernel "k1"
// CHECK-NEXT:   tile.load "t"
// CHECK-NEXT:   tile.store %{{.*}}, "a"
// CHECK-NEXT: }
// CHECK-NEXT: tile.memcpy "a_to_host" "a" -> "a_host" {source = "offload of a"}
// CHECK-NEXT: tile.kernel "k2"
// CHECK:      tile.kernel "k2b"
// CHECK:      tile.memcpy "a_from_host" "a_host" -> "a_reloaded" {source = "reload of a"}
// CHECK-NEXT: tile.kernel "k3"
// CHECK-NEXT:   tile.load "a_reloaded"
// On streams under the limit the arena stays as planned: k2 takes t's
// storage, so it waits for k1; k2b takes a's, so it waits for the copy to
// host, which overlaps k2 on the other stream.
// STREAMS-LABEL: tile.program "offload"
// STREAMS-SAME:  arena_size = 9216 : i64
// STREAMS:       tile.kernel "k1" attributes {block_dim = 1 : i64, stream = 0 : i64}
// STREAMS:       tile.stream_record stream 0 event 0
// STREAMS-NEXT:  tile.memcpy "a_to_host" "a" -> "a_host" {source = "offload of a", stream = 0 : i64}
// STREAMS-NEXT:  tile.stream_record stream 0 event 1
// STREAMS-NEXT:  tile.stream_wait stream 1 event 0
// STREAMS-NEXT:  tile.kernel "k2" attributes {block_dim = 1 : i64, stream = 1 : i64}
// STREAMS:       tile.stream_wait stream 1 event 1
// STREAMS-NEXT:  tile.kernel "k2b" attributes {block_dim = 1 : i64, stream = 1 : i64}
// ROOM-LABEL: tile.program "offload"
// ROOM-SAME:  arena_size = 13824 : i64
// ROOM-SAME:  device_memory_limit = 100000 : i64
// ROOM-NOT:   memcpy
// NONE-LABEL: tile.program "offload"
// NONE-NOT:   device_memory_limit
// TIGHT: error: tile-fit-device-memory: @offload: device-memory-limit=9000 cannot be met: task 1 (tile.kernel @k1) itself reads and writes 9216 bytes of the arena, which no offload or recompute takes off the device: a (4608 B), t (4608 B); the limit must be at least 9216
// ORDER: error: tile-fit-device-memory: @offload: the program has streams already (run it before tile-assign-streams)
tile.program "offload" attributes {ge.memory = {alignment = 512 : i64, arena_size = 13824 : i64, no_reuse = 18432 : i64, strategy = "greedy-by-size", tensors = 4 : i64}} {
  tile.tensor {name = "x", kind = "input", offset = 13824 : i64, type = tensor<1024xf32>, layout = "ND"}
  tile.tensor {ge.stored_bytes = 4096 : i64, name = "t", kind = "internal", offset = 0 : i64, type = tensor<1024xf32>, layout = "ND"}
  tile.tensor {ge.stored_bytes = 4096 : i64, name = "a", kind = "internal", offset = 4608 : i64, type = tensor<1024xf32>, layout = "ND"}
  tile.tensor {ge.stored_bytes = 4096 : i64, name = "b", kind = "internal", offset = 0 : i64, type = tensor<1024xf32>, layout = "ND"}
  tile.tensor {ge.stored_bytes = 4096 : i64, name = "c", kind = "internal", offset = 9216 : i64, type = tensor<1024xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 18048 : i64, type = tensor<1024xf32>, layout = "ND"}
  tile.kernel "k0" attributes {block_dim = 1 : i64} {
    %x = tile.load "x" : tensor<1024xf32>
    tile.store %x, "t" : tensor<1024xf32>
  }
  tile.kernel "k1" attributes {block_dim = 1 : i64} {
    %t = tile.load "t" : tensor<1024xf32>
    tile.store %t, "a" : tensor<1024xf32>
  }
  tile.kernel "k2" attributes {block_dim = 1 : i64} {
    %x = tile.load "x" : tensor<1024xf32>
    tile.store %x, "b" : tensor<1024xf32>
  }
  tile.kernel "k2b" attributes {block_dim = 1 : i64} {
    %b = tile.load "b" : tensor<1024xf32>
    tile.store %b, "c" : tensor<1024xf32>
  }
  tile.kernel "k3" attributes {block_dim = 1 : i64} {
    %a = tile.load "a" : tensor<1024xf32>
    %c = tile.load "c" : tensor<1024xf32>
    %s = tile.map ins(%a, %c : tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32> {
    ^bb0(%p : f32, %q : f32):
      %r = arith.addf %p, %q : f32
      tile.yield %r : f32
    }
    tile.store %s, "y" : tensor<1024xf32>
  }
}

// -----

// a is alive across k2 again, but its writer k0 reads only the input x:
// cloning k0 before k3 (a vector kernel: ~100 cycles) is cheaper than two
// host copies (~10k): k3 reads the recomputed copy.
// CHECK-LABEL: tile.program "recompute"
// CHECK-SAME:  arena_size = 9216 : i64
// CHECK-SAME:  device_memory_limit = 10000 : i64, offloaded = 0 : i64, recomputed = 1 : i64, host_bytes = 0 : i64, copy_cycles = 0 : i64
// CHECK:      tile.kernel "k2"
// CHECK:      tile.kernel "k0_recompute" attributes {source = "recompute of a", block_dim = 1 : i64} {
// CHECK-NEXT:   %{{.*}} = tile.load "x"
// CHECK-NEXT:   tile.store %{{.*}}, "a_recomputed"
// CHECK-NEXT: }
// CHECK-NEXT: tile.kernel "k3"
// CHECK-NEXT:   tile.load "a_recomputed"
tile.program "recompute" attributes {ge.memory = {alignment = 512 : i64, arena_size = 13824 : i64, no_reuse = 13824 : i64, strategy = "greedy-by-size", tensors = 3 : i64}} {
  tile.tensor {name = "x", kind = "input", offset = 13824 : i64, type = tensor<1024xf32>, layout = "ND"}
  tile.tensor {ge.stored_bytes = 4096 : i64, name = "a", kind = "internal", offset = 0 : i64, type = tensor<1024xf32>, layout = "ND"}
  tile.tensor {ge.stored_bytes = 4096 : i64, name = "b", kind = "internal", offset = 4608 : i64, type = tensor<1024xf32>, layout = "ND"}
  tile.tensor {ge.stored_bytes = 4096 : i64, name = "c", kind = "internal", offset = 9216 : i64, type = tensor<1024xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 18048 : i64, type = tensor<1024xf32>, layout = "ND"}
  tile.kernel "k0" attributes {block_dim = 1 : i64} {
    %x = tile.load "x" : tensor<1024xf32>
    tile.store %x, "a" : tensor<1024xf32>
  }
  tile.kernel "k1" attributes {block_dim = 1 : i64} {
    %a = tile.load "a" : tensor<1024xf32>
    tile.store %a, "b" : tensor<1024xf32>
  }
  tile.kernel "k2" attributes {block_dim = 1 : i64} {
    %b = tile.load "b" : tensor<1024xf32>
    tile.store %b, "c" : tensor<1024xf32>
  }
  tile.kernel "k3" attributes {block_dim = 1 : i64} {
    %a = tile.load "a" : tensor<1024xf32>
    %c = tile.load "c" : tensor<1024xf32>
    %s = tile.map ins(%a, %c : tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32> {
    ^bb0(%p : f32, %q : f32):
      %r = arith.addf %p, %q : f32
      tile.yield %r : f32
    }
    tile.store %s, "y" : tensor<1024xf32>
  }
}

// -----

// Nothing reads a before k3: its writer k0 moves down to k3 (cost 0, counted
// as recomputed).
// CHECK-LABEL: tile.program "move"
// CHECK-SAME:  arena_size = 9216 : i64
// CHECK-SAME:  offloaded = 0 : i64, recomputed = 1 : i64, host_bytes = 0 : i64, copy_cycles = 0 : i64
// CHECK:      tile.kernel "k1"
// CHECK:      tile.kernel "k2"
// CHECK:      tile.kernel "k0"
// CHECK-NEXT:   tile.load "x"
// CHECK-NEXT:   tile.store %{{.*}}, "a"
// CHECK-NEXT: }
// CHECK-NEXT: tile.kernel "k3"
// CHECK-NEXT:   tile.load "a"
tile.program "move" attributes {ge.memory = {alignment = 512 : i64, arena_size = 13824 : i64, no_reuse = 13824 : i64, strategy = "greedy-by-size", tensors = 3 : i64}} {
  tile.tensor {name = "x", kind = "input", offset = 13824 : i64, type = tensor<1024xf32>, layout = "ND"}
  tile.tensor {ge.stored_bytes = 4096 : i64, name = "a", kind = "internal", offset = 0 : i64, type = tensor<1024xf32>, layout = "ND"}
  tile.tensor {ge.stored_bytes = 4096 : i64, name = "b", kind = "internal", offset = 4608 : i64, type = tensor<1024xf32>, layout = "ND"}
  tile.tensor {ge.stored_bytes = 4096 : i64, name = "c", kind = "internal", offset = 9216 : i64, type = tensor<1024xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 18048 : i64, type = tensor<1024xf32>, layout = "ND"}
  tile.kernel "k0" attributes {block_dim = 1 : i64} {
    %x = tile.load "x" : tensor<1024xf32>
    tile.store %x, "a" : tensor<1024xf32>
  }
  tile.kernel "k1" attributes {block_dim = 1 : i64} {
    %x = tile.load "x" : tensor<1024xf32>
    tile.store %x, "b" : tensor<1024xf32>
  }
  tile.kernel "k2" attributes {block_dim = 1 : i64} {
    %b = tile.load "b" : tensor<1024xf32>
    tile.store %b, "c" : tensor<1024xf32>
  }
  tile.kernel "k3" attributes {block_dim = 1 : i64} {
    %a = tile.load "a" : tensor<1024xf32>
    %c = tile.load "c" : tensor<1024xf32>
    %s = tile.map ins(%a, %c : tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32> {
    ^bb0(%p : f32, %q : f32):
      %r = arith.addf %p, %q : f32
      tile.yield %r : f32
    }
    tile.store %s, "y" : tensor<1024xf32>
  }
}
