// Every error of graph-plan-memory: bad options (one `ge-opt: error:` line,
// exit code 1) and a device-memory limit that cannot be met (an error at the
// peak step's op, naming the tensors live there).
// RUN: not ge-opt %s -p 'graph-plan-memory{strategy=best-fit}' 2>&1 | filecheck %s --check-prefix=STRATEGY
// RUN: not ge-opt %s -p 'graph-plan-memory{alignment=48}' 2>&1 | filecheck %s --check-prefix=ALIGN
// RUN: not ge-opt %s -p 'graph-plan-memory{alignment=0}' 2>&1 | filecheck %s --check-prefix=ALIGN0
// RUN: not ge-opt %s -p 'graph-plan-memory{device-memory-limit=-1}' 2>&1 | filecheck %s --check-prefix=NEGATIVE
// RUN: not ge-opt %s -p 'graph-plan-memory{alignment=64 device-memory-limit=2048}' 2>&1 | filecheck %s --check-prefix=LIMIT
// RUN: ge-opt %s -p 'graph-plan-memory{alignment=64 device-memory-limit=2048}' --verify-diagnostics

// STRATEGY:     {{^}}ge-opt: error: graph-plan-memory: unknown strategy 'best-fit' (expected one of auto, greedy-by-size, greedy-by-breadth, greedy-by-conflict, greedy-by-lifetime)
// STRATEGY-NOT: {{^.}}
// ALIGN:        {{^}}ge-opt: error: graph-plan-memory: alignment must be a positive power of two, got 48
// ALIGN-NOT:    {{^.}}
// ALIGN0:       {{^}}ge-opt: error: graph-plan-memory: alignment must be a positive power of two, got 0
// NEGATIVE:     {{^}}ge-opt: error: graph-plan-memory: device-memory-limit must be >= 0 bytes (0 = none), got -1
// NEGATIVE-NOT: {{^.}}

// After recomputing %a and offloading %m, 3072 bytes remain live at %d:
// %d reads %c and %b, and neither can leave.
// LIMIT:        {{^}}{{.*}}plan-memory-errors.mlir:32:3: error: graph-plan-memory: device-memory-limit=2048 cannot be met: 3072 bytes are live at step 5 (graph.matmul at loc("d")), and recomputing or offloading a tensor does not lower it; live there: b (1024 B), c (1024 B), d (1024 B)
// LIMIT-NOT:    {{^.}}

func.func @main(%x: tensor<16x16xf32>, %w: tensor<16x16xf32>) -> tensor<16x16xf32> {
  // expected-remark@+1 {{recomputed a}}
  %a = graph.exp %x : (tensor<16x16xf32>) -> tensor<16x16xf32> loc("a")
  // expected-remark@+1 {{offloaded m}}
  %m = graph.matmul %a, %w : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("m")
  %b = graph.sigmoid %x : (tensor<16x16xf32>) -> tensor<16x16xf32> loc("b")
  %c = graph.matmul %b, %w : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("c")
  // expected-error@+1 {{device-memory-limit=2048 cannot be met: 3072 bytes are live at step 5 (graph.matmul at loc("d"))}}
  %d = graph.matmul %c, %b : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("d")
  %e = graph.add %d, %a : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("e")
  %f = graph.add %e, %m : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("f")
  func.return %f : tensor<16x16xf32>
}
