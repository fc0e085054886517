// tile-allocate: each buffer's address in its space, aligned (32 bytes in
// UB, 512 in L0A), a double buffer taking two consecutive copies.
// RUN: ge-opt %s -p tile-allocate | filecheck %s
// RUN: not ge-opt %s -p 'tile-allocate{target="%S/Inputs/tiny-ub.json"}' 2>&1 | filecheck %s --check-prefix=OVERFLOW

// CHECK-LABEL: tile.kernel "k"
// CHECK-NEXT: %a = tile.alloc {shape = array<i64: 10>, layout = "ND", buffers = 1 : i64, offset = 0 : i64} : !tile.ref<ub, f32>
// CHECK-NEXT: %b = tile.alloc {shape = array<i64: 64>, layout = "ND", buffers = 2 : i64, offset = 64 : i64} : !tile.ref<ub, f32>
// CHECK-NEXT: %c = tile.alloc {shape = array<i64: 8>, layout = "ND", buffers = 1 : i64, offset = 576 : i64} : !tile.ref<ub, f32>
// CHECK-NEXT: %d = tile.alloc {shape = array<i64: 256>, layout = "ZZ", buffers = 1 : i64, offset = 0 : i64} : !tile.ref<l0a, f16>
// CHECK-NEXT: %e = tile.alloc {shape = array<i64: 16>, layout = "ZZ", buffers = 1 : i64, offset = 512 : i64} : !tile.ref<l0a, f16>
// OVERFLOW: error: tile.kernel @k: on-chip buffers need 608 bytes of ub, the target has 512 (choose smaller tiles)
tile.program "p" {
  tile.kernel "k" attributes {block_dim = 1 : i64} {
    %a = tile.alloc {shape = array<i64: 10>, layout = "ND", buffers = 1 : i64} : !tile.ref<ub, f32>
    %b = tile.alloc {shape = array<i64: 64>, layout = "ND", buffers = 2 : i64} : !tile.ref<ub, f32>
    %c = tile.alloc {shape = array<i64: 8>, layout = "ND", buffers = 1 : i64} : !tile.ref<ub, f32>
    %d = tile.alloc {shape = array<i64: 256>, layout = "ZZ", buffers = 1 : i64} : !tile.ref<l0a, f16>
    %e = tile.alloc {shape = array<i64: 16>, layout = "ZZ", buffers = 1 : i64} : !tile.ref<l0a, f16>
  }
}
