// graph.offload / graph.reload (device <-> host copies made by
// graph-plan-memory under a limit): custom form, and their verifier errors.
// (plan-memory-limit.mlir checks that they print and parse back.)
// RUN: ge-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @copies(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %h = graph.offload %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %y = graph.reload %h : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %z = graph.reload %h {ge.offsets = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %s = graph.add %y, %z : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %s : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @copies
// CHECK-NEXT:    %[[H:.*]] = graph.offload %{{.*}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.reload %[[H]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[Z:.*]] = graph.reload %[[H]] {ge.offsets = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    graph.add %[[Y]], %[[Z]]

// -----

func.func @host_read_by_compute(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{graph.offload: its result is in host memory and can only be read by graph.reload, not by graph.relu}}
  %h = graph.offload %x : (tensor<4xf32>) -> tensor<4xf32>
  %y = graph.relu %h : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @reload_of_device_tensor(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{graph.reload: its operand must be a host tensor made by graph.offload}}
  %y = graph.reload %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @type_change(%x: tensor<4xf32>) -> tensor<2x2xf32> {
  // expected-error@+1 {{graph.offload: result type tensor<2x2xf32> differs from operand type tensor<4xf32>}}
  %h = "graph.offload"(%x) : (tensor<4xf32>) -> tensor<2x2xf32>
  func.return %h : tensor<2x2xf32>
}

// CHECK-NOT: func.func
