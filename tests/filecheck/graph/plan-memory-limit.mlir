// Under device-memory-limit the pass frees bytes at the peak step, cheapest
// first: a cheap producer is recomputed (or just moved down to its reader),
// an expensive one is offloaded to host and reloaded; each is a remark.
// RUN: ge-opt %s --split-input-file -p 'graph-plan-memory{alignment=64 device-memory-limit=3072}' --verify-diagnostics | filecheck %s
// RUN: ge-opt %s --split-input-file -p 'graph-plan-memory{alignment=64 device-memory-limit=3072}' | ge-opt --split-input-file | filecheck %s

// Without a limit the arena is 5120 bytes (peak at %d: %a, %m, %b, %c, %d).
// expected-remark@+1 {{@limited: arena 3072 bytes by greedy-by-size, lower bound 3072, no reuse 9216, planned/lower_bound 1.0000; limit 3072: 1 recomputed, 1 offloaded, 1024 bytes on host}}
func.func @limited(%x: tensor<16x16xf32>, %w: tensor<16x16xf32>) -> tensor<16x16xf32> {
  // expected-remark@+1 {{recomputed a before graph.add at loc("e") (1024 bytes, cost 2048)}}
  %a = graph.exp %x : (tensor<16x16xf32>) -> tensor<16x16xf32> loc("a")
  // expected-remark@+1 {{offloaded m to host until graph.add at loc("f") (1024 bytes, cost 32768)}}
  %m = graph.matmul %a, %w : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("m")
  %b = graph.sigmoid %x : (tensor<16x16xf32>) -> tensor<16x16xf32> loc("b")
  %c = graph.matmul %b, %w : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("c")
  %d = graph.matmul %c, %b : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("d")
  %e = graph.add %d, %a : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("e")
  %f = graph.add %e, %m : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("f")
  func.return %f : tensor<16x16xf32>
}

// CHECK-LABEL: func.func @limited
// CHECK-SAME:    arena_size = 3072 : i64, lower_bound = 3072 : i64, no_reuse = 9216 : i64, strategy = "greedy-by-size", device_memory_limit = 3072 : i64, host_bytes = 1024 : i64, recomputed = 1 : i64, offloaded = 1 : i64
// CHECK-NEXT:    %[[A:.*]] = graph.exp %[[X:[^ ]*]] {ge.offsets = array<i64: 0>, ge.lifetime = array<i64: 0, 1>}
// CHECK-NEXT:    %[[M:.*]] = graph.matmul %[[A]], %{{.*}} {ge.offsets = array<i64: 1024>, ge.lifetime = array<i64: 1, 2>}
// CHECK-NEXT:    %[[H:.*]] = graph.offload %[[M]] {ge.offsets = array<i64: -1>, ge.lifetime = array<i64: 2, 8>}
// CHECK-NEXT:    %[[B:.*]] = graph.sigmoid
// CHECK-NEXT:    %[[C:.*]] = graph.matmul %[[B]]
// CHECK-NEXT:    %[[D:.*]] = graph.matmul %[[C]], %[[B]]
// CHECK-NEXT:    %[[A2:.*]] = graph.exp %[[X]] {ge.offsets = array<i64: 0>, ge.lifetime = array<i64: 6, 7>}
// CHECK-NEXT:    %[[E:.*]] = graph.add %[[D]], %[[A2]]
// CHECK-NEXT:    %[[M2:.*]] = graph.reload %[[H]] {ge.offsets = array<i64: 0>, ge.lifetime = array<i64: 8, 9>}
// CHECK-NEXT:    %[[F:.*]] = graph.add %[[E]], %[[M2]]
// CHECK-NEXT:    func.return %[[F]]

// -----

// Nothing reads %a before the peak: its producer is moved down, for free.
// expected-remark@+1 {{@moved: arena 3072 bytes}}
func.func @moved(%x: tensor<16x16xf32>, %w: tensor<16x16xf32>) -> tensor<16x16xf32> {
  // expected-remark@+1 {{moved a down to its reader graph.add at loc("e") (1024 bytes, cost 0)}}
  %a = graph.exp %x : (tensor<16x16xf32>) -> tensor<16x16xf32> loc("a")
  %b = graph.sigmoid %x : (tensor<16x16xf32>) -> tensor<16x16xf32> loc("b")
  %c = graph.matmul %b, %w : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("c")
  %d = graph.matmul %c, %b : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("d")
  %e = graph.add %d, %a : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("e")
  func.return %e : tensor<16x16xf32>
}

// CHECK-LABEL: func.func @moved
// CHECK-SAME:    recomputed = 1 : i64, offloaded = 0 : i64
// CHECK-NEXT:    graph.sigmoid
// CHECK-NEXT:    graph.matmul
// CHECK-NEXT:    graph.matmul
// CHECK-NEXT:    graph.exp
// CHECK-NEXT:    graph.add
