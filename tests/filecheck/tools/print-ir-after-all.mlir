// --print-ir-after-all dumps the module to stderr after every pass, with
// MLIR's header; xDSL's --print-between-passes keeps printing to stdout.
// RUN: ge-opt %s --pass-pipeline='builtin.module(cse, canonicalize)' --print-ir-after-all 2>&1 | filecheck %s
// RUN: ge-opt %s -p cse,canonicalize --print-between-passes | filecheck %s --check-prefix=BETWEEN

func.func @fold(%a: i32) -> i32 {
  %zero = arith.constant 0 : i32
  %x = arith.addi %a, %zero : i32
  %y = arith.addi %a, %zero : i32
  %s = arith.muli %x, %y : i32
  func.return %s : i32
}

// The dumps come first (stderr, unbuffered), then the output. After cse the
// two additions are one; after canonicalize the `+ 0` is gone.
// CHECK-LABEL: // -----// IR Dump After cse //----- //
// CHECK:         %[[X:.*]] = arith.addi %[[A:.*]], %{{.*}} : i32
// CHECK-NEXT:    %[[S:.*]] = arith.muli %[[X]], %[[X]] : i32
// CHECK-NEXT:    func.return %[[S]] : i32
// CHECK-LABEL: // -----// IR Dump After canonicalize //----- //
// CHECK-NEXT:  builtin.module {
// CHECK-NEXT:    func.func @fold(%[[A2:.*]]: i32) -> i32 {
// CHECK-NEXT:      %[[S2:.*]] = arith.muli %[[A2]], %[[A2]] : i32
// CHECK-NEXT:      func.return %[[S2]] : i32
// The output on stdout follows the last dump.
// CHECK:       func.func @fold
// CHECK-NOT:   IR Dump After

// BETWEEN-NOT:   IR Dump After
// BETWEEN-LABEL: IR after cse:
// BETWEEN:         arith.addi
// BETWEEN-NOT:   IR after canonicalize:
// BETWEEN:       func.func @fold
// BETWEEN-NOT:     arith.addi
