// The two pipeline syntaxes: xDSL's `-p` and MLIR's `--pass-pipeline`, with the
// `builtin.module(...)` anchor or without, with spaces and with pass options.
// RUN: ge-opt %s -p cse,dce | filecheck %s
// RUN: ge-opt %s --pass-pipeline='builtin.module(cse, dce)' | filecheck %s
// RUN: ge-opt %s --pass-pipeline=' cse , dce ' | filecheck %s
// RUN: ge-opt %s --pass-pipeline='builtin.module(apply-individual-rewrite{matched-operation-index=6 operation-name="arith.addi" pattern-name="SignlessIntegerBinaryOperationZeroOrUnitRight"}, cse, dce)' | filecheck %s --check-prefix=OPTS

func.func @twice(%a: i32) -> i32 {
  %zero = arith.constant 0 : i32
  %x = arith.addi %a, %a : i32
  %y = arith.addi %a, %a : i32
  %s = arith.addi %x, %y : i32
  %r = arith.addi %s, %zero : i32
  func.return %r : i32
}

// cse merges %x and %y; dce then has nothing dead to remove but the constant stays used.
// CHECK-LABEL: func.func @twice
// CHECK-SAME:  (%[[A:.*]]: i32)
// CHECK:         %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    %[[X:.*]] = arith.addi %[[A]], %[[A]] : i32
// CHECK-NEXT:    %[[S:.*]] = arith.addi %[[X]], %[[X]] : i32
// CHECK-NEXT:    %[[R:.*]] = arith.addi %[[S]], %[[ZERO]] : i32
// CHECK-NEXT:    func.return %[[R]] : i32

// The option-carrying pass folds `+ 0` (the 6th op in walk order); dce then
// erases the unused constant.
// OPTS-LABEL: func.func @twice
// OPTS-SAME:  (%[[A:.*]]: i32)
// OPTS-NOT:     arith.constant
// OPTS:         %[[X:.*]] = arith.addi %[[A]], %[[A]] : i32
// OPTS-NEXT:    %[[S:.*]] = arith.addi %[[X]], %[[X]] : i32
// OPTS-NEXT:    func.return %[[S]] : i32
