// graph-plan-memory records an arena offset and a lifetime per result on each
// step op, and the arena numbers on the function; the plan prints and parses
// back unchanged. Each chunk shows one storage rule; the summary is a remark.
// RUN: ge-opt %s --split-input-file -p 'graph-plan-memory{alignment=64}' --verify-diagnostics | filecheck %s
// RUN: ge-opt %s --split-input-file -p 'graph-plan-memory{alignment=64}' | ge-opt --split-input-file | filecheck %s
// RUN: ge-opt %s --split-input-file -p 'graph-plan-memory{alignment=64 strategy=greedy-by-breadth}' | filecheck %s --check-prefix=BREADTH
// RUN: ge-opt %s --split-input-file -p 'graph-plan-memory{alignment=64}' --memory-report=%t.json -o %t.mlir
// RUN: filecheck %s --check-prefix=JSON --input-file=%t.json

// Every tensor<1x4x8xf32> is 128 bytes. The relu overwrites %b, which dies
// there; the reshape is a view of it; %c, %r and %a are written straight
// into the concat (pieces side by side: only a unit dim before the axis).
// %c cannot overwrite %a: the concat reads %a later.
// expected-remark@+1 {{@chain: arena 384 bytes by greedy-by-size, lower bound 384, no reuse 896, planned/lower_bound 1.0000}}
func.func @chain(%x: tensor<1x4x8xf32>) -> tensor<1x12x8xf32> {
  %a = graph.exp %x : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %b = graph.sigmoid %x : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %c = graph.add %a, %b : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %d = graph.relu %b : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %r = graph.reshape %d {shape = array<i64: 1, 4, 8>} : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %e = graph.concat %c, %r, %a {axis = 1 : i64} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x12x8xf32>
  func.return %e : tensor<1x12x8xf32>
}

// CHECK-LABEL: func.func @chain
// CHECK-SAME:    attributes {ge.memory = {alignment = 64 : i64, arena_size = 384 : i64, lower_bound = 384 : i64, no_reuse = 896 : i64, strategy = "greedy-by-size"}}
// CHECK-NEXT:    graph.exp %{{.*}} {ge.offsets = array<i64: 256>, ge.lifetime = array<i64: 0, 5>}
// CHECK-NEXT:    graph.sigmoid %{{.*}} {ge.offsets = array<i64: 128>, ge.lifetime = array<i64: 1, 3>}
// CHECK-NEXT:    graph.add %{{.*}} {ge.offsets = array<i64: 0>, ge.lifetime = array<i64: 2, 5>}
// CHECK-NEXT:    graph.relu %{{.*}} {ge.offsets = array<i64: 128>, ge.lifetime = array<i64: 3, 4>}
// CHECK-NEXT:    graph.reshape %{{.*}} {ge.offsets = array<i64: 128>, ge.lifetime = array<i64: 4, 5>, shape = array<i64: 1, 4, 8>}
// CHECK-NEXT:    graph.concat %{{.*}} {ge.offsets = array<i64: 0>, ge.lifetime = array<i64: 5, 6>, axis = 1 : i64}
// CHECK-NEXT:    func.return

// BREADTH-LABEL: func.func @chain
// BREADTH-SAME:    arena_size = 384 : i64, lower_bound = 384 : i64, no_reuse = 896 : i64, strategy = "greedy-by-breadth"

// JSON:      "chain": {
// JSON-NEXT:   "no_reuse": 896,
// JSON-NEXT:   "lower_bound": 384,
// JSON-NEXT:   "planned": 384,
// JSON-NEXT:   "planned/lower_bound": 1.0
// JSON-NEXT: },

// -----

// Offsets stay multiples of the alignment: the second piece would start at
// byte 48, so it gets a slot of its own and the concat copies it.
// expected-remark@+1 {{@unaligned: arena 192 bytes}}
func.func @unaligned(%x: tensor<1x3x4xf32>) -> tensor<1x6x4xf32> {
  %a = graph.relu %x : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %b = graph.tanh %x : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %c = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x3x4xf32>, tensor<1x3x4xf32>) -> tensor<1x6x4xf32>
  func.return %c : tensor<1x6x4xf32>
}

// CHECK-LABEL: func.func @unaligned
// CHECK-SAME:    arena_size = 192 : i64
// CHECK-NEXT:    graph.relu %{{.*}} {ge.offsets = array<i64: 0>,
// CHECK-NEXT:    graph.tanh %{{.*}} {ge.offsets = array<i64: 128>,
// CHECK-NEXT:    graph.concat %{{.*}} {ge.offsets = array<i64: 0>,

// JSON:      "unaligned": {

// -----

// Graph inputs and weights are not in the arena, nor is a view of one
// (offset -1); graph outputs live to func.return (step 4); an unused result
// still needs a slot at its step; a graph.fusion is one step and may
// overwrite an operand that dies there.
// expected-remark@+1 {{@boundary: arena 128 bytes}}
func.func @boundary(%x: tensor<2x8xf32>, %w: tensor<8x8xf32>) -> (tensor<16xf32>, tensor<2x8xf32>) {
  %v = graph.reshape %x {shape = array<i64: 16>} : (tensor<2x8xf32>) -> tensor<16xf32>
  %m = graph.matmul %x, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %u = graph.neg %m : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %f = graph.fusion %m, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32> {
  ^bb0(%p: tensor<2x8xf32>, %q: tensor<8x8xf32>):
    %s = graph.sigmoid %p : (tensor<2x8xf32>) -> tensor<2x8xf32>
    graph.yield %s : tensor<2x8xf32>
  }
  func.return %v, %f : tensor<16xf32>, tensor<2x8xf32>
}

// CHECK-LABEL: func.func @boundary
// CHECK-SAME:    arena_size = 128 : i64, lower_bound = 128 : i64, no_reuse = 192 : i64
// CHECK-NEXT:    graph.reshape %{{.*}} {ge.offsets = array<i64: -1>, ge.lifetime = array<i64: 0, 4>,
// CHECK-NEXT:    graph.matmul %{{.*}} {ge.offsets = array<i64: 0>, ge.lifetime = array<i64: 1, 3>}
// CHECK-NEXT:    graph.neg %{{.*}} {ge.offsets = array<i64: 64>, ge.lifetime = array<i64: 2, 2>}
// CHECK-NEXT:    graph.fusion %{{.*}} {ge.offsets = array<i64: 0>, ge.lifetime = array<i64: 3, 4>}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      graph.sigmoid
// CHECK-NOT:       ge.offsets
// CHECK-NEXT:      graph.yield

// JSON:      "boundary": {

// -----

// Dynamic shapes: the function is skipped with a remark.
// expected-remark@+1 {{not planned: graph.relu: result #0 tensor<?x4xf32> has a dynamic shape}}
func.func @dynamic(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %a = graph.relu %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
  func.return %a : tensor<?x4xf32>
}

// CHECK-LABEL: func.func @dynamic
// CHECK-NOT:     ge.
// CHECK:         func.return

// JSON-NOT: "dynamic"
