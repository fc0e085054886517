// --mlir-pass-statistics on GE's passes: after the op counts, what each pass
// itself counted (`(S) value name - description`), the stages of a named
// pipeline indented under it.
// RUN: ge-opt %s -p graph-canonicalize,ge-graph-opt --mlir-pass-statistics 2>&1 >/dev/null | filecheck %s
// RUN: ge-opt %s -p ge-compile --mlir-pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=LOWER

// The loop fusion of three elementwise ops, after a transpose chain that
// canonicalize merges away.
func.func @main(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %t = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x8xf32>) -> tensor<8x2xf32>
  %u = graph.transpose %t {perm = array<i64: 1, 0>} : (tensor<8x2xf32>) -> tensor<2x8xf32>
  %0 = graph.sigmoid %u : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %1 = graph.mul %u, %0 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %2 = graph.tanh %1 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %2 : tensor<2x8xf32>
}

// CHECK-LABEL: Pass statistics report
// CHECK-NEXT:  graph-canonicalize
// CHECK-NEXT:    (S) 6 ops (was 8)
// CHECK-NEXT:    (S) graph.transpose -2
// CHECK-NEXT:    (S) 1 transpose-chains-merged - transposes of transposes made one
// CHECK-NEXT:    (S) 1 no-ops-removed - ops that do not change their operand
// CHECK-NEXT:  ge-graph-opt
// CHECK-NEXT:    (S) 8 ops (was 6)
// CHECK-NEXT:    (S) graph.fusion +1, graph.yield +1
// CHECK-NEXT:    graph-fuse
// CHECK-NEXT:      (S) 1 fusions-applied - fusion rules applied
// CHECK-NEXT:      (S) 0 fusions-missed - candidates a rule found but could not fuse
// CHECK-NEXT:    graph-plan-memory
// CHECK-NEXT:      (S) 512 arena-bytes - bytes of the planned arena
// CHECK-NEXT:      (S) 512 lower-bound-bytes - the most bytes live at one step
// CHECK-NEXT:      (S) 512 no-reuse-bytes - bytes without reuse

// LOWER:       ge-compile
// LOWER:         ge-lower
// LOWER-NEXT:      map-unbatch
// LOWER-NEXT:        (S) 0 ops-unbatched - batched map ops rewritten as one op per image
// LOWER:           graph-partition
// LOWER-NEXT:        (S) {{[0-9]+}} ops-on-ai-core - ops placed on the AI core (views included)
// LOWER-NEXT:        (S) 0 ops-on-ai-cpu - ops without an AI-core kernel (AI-CPU tasks)
// LOWER-NEXT:      assign-layouts
// LOWER-NEXT:        (S) 0 transdata-inserted - graph.transdata inserted where formats meet
// LOWER:           convert-graph-to-tile
// LOWER-NEXT:        (S) {{[0-9]+}} gm-arena-bytes - GM arena of the stored intermediates
// LOWER-NEXT:        (S) {{[0-9]+}} kernels - kernels (AI-CPU tasks included)
// LOWER-NEXT:        (S) 0 transdata-kernels - transdata kernels
