// Every kind of mismatch --verify-diagnostics reports, one per chunk; ge-opt
// then exits 1. Chunks keep being checked after a failing one.
// RUN: not ge-opt %s --split-input-file --verify-diagnostics -o %t 2>&1 | filecheck %s

func.func @wrong_text(%a: i32, %b: i64) -> i32 {
  // expected-error@+1 {{this is not the message}}
  func.return %b : i64
}

// The real error is unexpected, and the expected one missing.
// CHECK:      verify-diagnostics-mismatch.mlir:7:3: error: unexpected error: 'func.return' op Expected arguments to have the same types
// CHECK-NEXT: verify-diagnostics-mismatch.mlir:6:6: error: expected error "this is not the message" was not produced

// -----

func.func @wrong_line(%a: i32, %b: i64) -> i32 {
  // expected-error@+2 {{function output types}}
  func.return %b : i64
}

// CHECK-NEXT: verify-diagnostics-mismatch.mlir:18:3: error: unexpected error: {{.*}}function output types
// CHECK-NEXT: verify-diagnostics-mismatch.mlir:17:6: error: expected error "function output types" was not produced

// -----

func.func @no_error(%a: i32) -> i32 {
  // expected-error@+1 {{anything}}
  func.return %a : i32
}

// CHECK-NEXT: verify-diagnostics-mismatch.mlir:27:6: error: expected error "anything" was not produced

// -----

func.func @unannounced(%a: i32) -> i32 {
  %x = arith.addi %a, %a : i64
  func.return %a : i32
}

// CHECK-NEXT: verify-diagnostics-mismatch.mlir:36:19: error: unexpected error: operand is used with type i64

// -----

func.func @malformed(%a: i32) -> i32 {
  // expected-error@+1 no braces
  // expected-error@sideways {{bad designator}}
  func.return %a : i32
}

// CHECK-NEXT: verify-diagnostics-mismatch.mlir:45:6: error: expected '{{[{][{]}}' after 'expected-{{error}}@+1'
// CHECK-NEXT: verify-diagnostics-mismatch.mlir:46:6: error: bad line designator '@sideways'
// CHECK-NOT:  error
