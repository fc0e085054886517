// --mlir-timing: mlir-opt's execution time report on stderr at the end, the
// stages of a named pipeline nested (indented) under it, then the total;
// --time-passes is the same flag. The IR on stdout is unchanged.
// RUN: ge-opt %s -p graph-canonicalize,ge-graph-opt --mlir-timing 2>&1 >/dev/null | filecheck %s
// RUN: ge-opt %s -p ge-graph-opt --time-passes 2>&1 >/dev/null | filecheck %s --check-prefix=ALIAS
// RUN: ge-opt %s -p ge-graph-opt --mlir-timing | filecheck %s --check-prefix=IR

func.func @main(%x: tensor<1x8xf32>) -> tensor<1x8xf32> {
  %0 = graph.relu %x : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %1 = graph.sigmoid %0 : (tensor<1x8xf32>) -> tensor<1x8xf32>
  func.return %1 : tensor<1x8xf32>
}

// CHECK:      ... Execution time report ...
// CHECK:      Total Execution Time: {{[0-9.]+}} seconds
// CHECK:      ----Wall Time----  ----Name----
// CHECK-NEXT: {{^}}  {{ *[0-9.]+}} ({{ *[0-9.]+}}%)  graph-canonicalize
// CHECK-NEXT: {{^}}  {{ *[0-9.]+}} ({{ *[0-9.]+}}%)  ge-graph-opt
// CHECK-NEXT: {{^}}  {{ *[0-9.]+}} ({{ *[0-9.]+}}%)    graph-canonicalize
// CHECK-NEXT: {{^}}  {{ *[0-9.]+}} ({{ *[0-9.]+}}%)    graph-decompose
// CHECK-NEXT: {{^}}  {{ *[0-9.]+}} ({{ *[0-9.]+}}%)    graph-fuse
// CHECK-NEXT: {{^}}  {{ *[0-9.]+}} ({{ *[0-9.]+}}%)    graph-plan-memory
// CHECK-NEXT: {{^}}  {{ *[0-9.]+}} (100.0%)  Total

// ALIAS:      Execution time report
// ALIAS:      ge-graph-opt
// ALIAS-NEXT: graph-canonicalize

// IR:         graph.fusion
// IR-NOT:     Execution time report
