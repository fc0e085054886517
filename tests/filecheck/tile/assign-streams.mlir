// tile-assign-streams: independent kernels on parallel streams, events at the
// joins, and the GM arena planned again for tasks that now run concurrently.
// RUN: ge-opt %s --split-input-file -p tile-assign-streams | filecheck %s
// RUN: ge-opt %s --split-input-file -p 'tile-assign-streams{max-streams=1}' | filecheck %s --check-prefix=ONE
// RUN: ge-opt %s --split-input-file -p tile-assign-streams,tile-assign-streams | filecheck %s

// A diamond: k1 continues k0's stream, k2 takes a new one and waits for k0;
// the join k3 continues k2's stream and waits for k1.
// CHECK-LABEL: tile.program "diamond"
// CHECK:      tile.kernel "k0" attributes {block_dim = 1 : i64, stream = 0 : i64}
// CHECK:      tile.stream_record stream 0 event 0
// CHECK-NEXT: tile.kernel "k1" attributes {block_dim = 1 : i64, stream = 0 : i64}
// CHECK:      tile.stream_record stream 0 event 1
// CHECK-NEXT: tile.stream_wait stream 1 event 0
// CHECK-NEXT: tile.kernel "k2" attributes {block_dim = 1 : i64, stream = 1 : i64}
// CHECK:      tile.stream_wait stream 1 event 1
// CHECK-NEXT: tile.kernel "k3" attributes {block_dim = 1 : i64, stream = 1 : i64}
// With one stream the program stays as it was.
// ONE-LABEL: tile.program "diamond"
// ONE-NOT:   stream
// ONE:       tile.kernel "k3" attributes {block_dim = 1 : i64} {
tile.program "diamond" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<64xf32>, layout = "ND"}
  tile.tensor {name = "a", kind = "internal", offset = 512 : i64, type = tensor<64xf32>, layout = "ND"}
  tile.tensor {name = "b", kind = "internal", offset = 1024 : i64, type = tensor<64xf32>, layout = "ND"}
  tile.tensor {name = "c", kind = "internal", offset = 1536 : i64, type = tensor<64xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 2048 : i64, type = tensor<64xf32>, layout = "ND"}
  tile.kernel "k0" attributes {block_dim = 1 : i64} {
    %x = tile.load "x" : tensor<64xf32>
    tile.store %x, "a" : tensor<64xf32>
  }
  tile.kernel "k1" attributes {block_dim = 1 : i64} {
    %a = tile.load "a" : tensor<64xf32>
    tile.store %a, "b" : tensor<64xf32>
  }
  tile.kernel "k2" attributes {block_dim = 1 : i64} {
    %a = tile.load "a" : tensor<64xf32>
    tile.store %a, "c" : tensor<64xf32>
  }
  tile.kernel "k3" attributes {block_dim = 1 : i64} {
    %b = tile.load "b" : tensor<64xf32>
    %c = tile.load "c" : tensor<64xf32>
    %s = tile.map ins(%b, %c : tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> {
    ^bb0(%p : f32, %q : f32):
      %r = arith.addf %p, %q : f32
      tile.yield %r : f32
    }
    tile.store %s, "y" : tensor<64xf32>
  }
}

// -----

// Two branches from x: the sequential plan put c in a's storage (a is dead
// after k1). Run concurrently, k2 may write c before k1 has read a, so the
// arena is planned again: a and c apart, the arena 4608 -> 6144 bytes, the
// input and output moved up by the growth (1536).
// CHECK-LABEL: tile.program "branches"
// CHECK-SAME:  arena_size = 6144 : i64
// CHECK-SAME:  ge.arena_live_bytes = "1536;3072;4608;6144;3072"
// CHECK:       name = "x", kind = "input", offset = 6144 : i64
// CHECK:       name = "a", kind = "internal", offset = 0 : i64
// CHECK:       name = "b", kind = "internal", offset = 1536 : i64
// CHECK:       name = "c", kind = "internal", offset = 3072 : i64
// CHECK:       name = "d", kind = "internal", offset = 4608 : i64
// CHECK:       name = "y", kind = "output", offset = 7232 : i64
// CHECK:       tile.kernel "k1" attributes {block_dim = 1 : i64, stream = 0 : i64}
// CHECK:       tile.stream_record stream 0 event 0
// CHECK-NEXT:  tile.kernel "k2" attributes {block_dim = 1 : i64, stream = 1 : i64}
// CHECK:       tile.stream_wait stream 1 event 0
// CHECK-NEXT:  tile.kernel "k4" attributes {block_dim = 1 : i64, stream = 1 : i64}
// ONE-LABEL:   tile.program "branches"
// ONE-SAME:    arena_size = 4608 : i64
// ONE:         name = "a", kind = "internal", offset = 0 : i64
// ONE:         name = "c", kind = "internal", offset = 0 : i64
tile.program "branches" attributes {ge.memory = {alignment = 512 : i64, arena_size = 4608 : i64, no_reuse = 6144 : i64, strategy = "greedy-by-size", tensors = 4 : i64}} {
  tile.tensor {name = "x", kind = "input", offset = 4608 : i64, type = tensor<250xf32>, layout = "ND"}
  tile.tensor {name = "a", kind = "internal", offset = 0 : i64, type = tensor<250xf32>, layout = "ND", ge.stored_bytes = 1000 : i64}
  tile.tensor {name = "b", kind = "internal", offset = 1536 : i64, type = tensor<250xf32>, layout = "ND", ge.stored_bytes = 1000 : i64}
  tile.tensor {name = "c", kind = "internal", offset = 0 : i64, type = tensor<250xf32>, layout = "ND", ge.stored_bytes = 1000 : i64}
  tile.tensor {name = "d", kind = "internal", offset = 3072 : i64, type = tensor<250xf32>, layout = "ND", ge.stored_bytes = 1000 : i64}
  tile.tensor {name = "y", kind = "output", offset = 5696 : i64, type = tensor<250xf32>, layout = "ND"}
  tile.kernel "k0" attributes {block_dim = 1 : i64} {
    %x = tile.load "x" : tensor<250xf32>
    tile.store %x, "a" : tensor<250xf32>
  }
  tile.kernel "k1" attributes {block_dim = 1 : i64} {
    %a = tile.load "a" : tensor<250xf32>
    tile.store %a, "b" : tensor<250xf32>
  }
  tile.kernel "k2" attributes {block_dim = 1 : i64} {
    %x = tile.load "x" : tensor<250xf32>
    tile.store %x, "c" : tensor<250xf32>
  }
  tile.kernel "k3" attributes {block_dim = 1 : i64} {
    %c = tile.load "c" : tensor<250xf32>
    tile.store %c, "d" : tensor<250xf32>
  }
  tile.kernel "k4" attributes {block_dim = 1 : i64} {
    %b = tile.load "b" : tensor<250xf32>
    %d = tile.load "d" : tensor<250xf32>
    %s = tile.map ins(%b, %d : tensor<250xf32>, tensor<250xf32>) -> tensor<250xf32> {
    ^bb0(%p : f32, %q : f32):
      %r = arith.addf %p, %q : f32
      tile.yield %r : f32
    }
    tile.store %s, "y" : tensor<250xf32>
  }
}

// -----

// Kernels that only write one tensor (the pieces of an in-place concat) are
// not ordered: both run at once; the reader of the whole waits for both.
// CHECK-LABEL: tile.program "pieces"
// CHECK:       tile.kernel "left" attributes {block_dim = 1 : i64, stream = 0 : i64}
// CHECK:       tile.stream_record stream 0 event 0
// CHECK-NEXT:  tile.kernel "right" attributes {block_dim = 1 : i64, stream = 1 : i64}
// CHECK:       tile.stream_wait stream 1 event 0
// CHECK-NEXT:  tile.kernel "whole" attributes {block_dim = 1 : i64, stream = 1 : i64}
tile.program "pieces" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<2x64xf32>, layout = "ND"}
  tile.tensor {name = "cat", kind = "internal", offset = 1024 : i64, type = tensor<4x64xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 2048 : i64, type = tensor<4x64xf32>, layout = "ND"}
  tile.kernel "left" attributes {block_dim = 1 : i64} {
    %x = tile.load "x" : tensor<2x64xf32>
    tile.store %x, "cat" {dest = array<i64: 4, 64>, offsets = array<i64: 0, 0>} : tensor<2x64xf32>
  }
  tile.kernel "right" attributes {block_dim = 1 : i64} {
    %x = tile.load "x" : tensor<2x64xf32>
    tile.store %x, "cat" {dest = array<i64: 4, 64>, offsets = array<i64: 2, 0>} : tensor<2x64xf32>
  }
  tile.kernel "whole" attributes {block_dim = 1 : i64} {
    %c = tile.load "cat" : tensor<4x64xf32>
    tile.store %c, "y" : tensor<4x64xf32>
  }
}

// -----

// A chain has nothing to run concurrently: one stream, no events, as it was.
// CHECK-LABEL: tile.program "chain"
// CHECK-NOT:   stream
// CHECK:       tile.kernel "k1" attributes {block_dim = 1 : i64} {
tile.program "chain" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<64xf32>, layout = "ND"}
  tile.tensor {name = "a", kind = "internal", offset = 512 : i64, type = tensor<64xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 1024 : i64, type = tensor<64xf32>, layout = "ND"}
  tile.kernel "k0" attributes {block_dim = 1 : i64} {
    %x = tile.load "x" : tensor<64xf32>
    tile.store %x, "a" : tensor<64xf32>
  }
  tile.kernel "k1" attributes {block_dim = 1 : i64} {
    %a = tile.load "a" : tensor<64xf32>
    tile.store %a, "y" : tensor<64xf32>
  }
}

// -----

// A memset (kind = "memset") clears bytes its tensor's writer then fills: it
// is ordered before the writer, not run beside it as a piece of a concat.
// CHECK-LABEL: tile.program "cleared"
// CHECK-NOT:   stream
// CHECK:       tile.kernel "read" attributes {block_dim = 1 : i64} {
tile.program "cleared" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<64xf32>, layout = "ND"}
  tile.tensor {name = "t", kind = "internal", offset = 512 : i64, type = tensor<64xf32>, layout = "ND"}
  tile.tensor {name = "y", kind = "output", offset = 1024 : i64, type = tensor<64xf32>, layout = "ND"}
  tile.kernel "clear" attributes {kind = "memset", block_dim = 1 : i64} {
    %z = tile.map ins(:) -> tensor<64xf32> {
      %c = arith.constant 0.000000e+00 : f32
      tile.yield %c : f32
    }
    tile.store %z, "t" : tensor<64xf32>
  }
  tile.kernel "write" attributes {block_dim = 1 : i64} {
    %x = tile.load "x" : tensor<64xf32>
    tile.store %x, "t" : tensor<64xf32>
  }
  tile.kernel "read" attributes {block_dim = 1 : i64} {
    %t = tile.load "t" : tensor<64xf32>
    tile.store %t, "y" : tensor<64xf32>
  }
}
