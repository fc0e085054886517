// --mlir-pass-statistics: after the pipeline, each pass's op count before and
// after and the op kinds it added or removed, on stderr.
// RUN: ge-opt %s -p cse,dce --mlir-pass-statistics 2>&1 >/dev/null | filecheck %s

func.func @twice(%a: i32) -> i32 {
  %x = arith.addi %a, %a : i32
  %y = arith.addi %a, %a : i32
  %unused = arith.muli %a, %a : i32
  %z = arith.addi %x, %y : i32
  func.return %z : i32
}

// (xDSL's cse also erases the dead muli, so dce finds nothing left to do.)
// CHECK:      Pass statistics report
// CHECK-NEXT: cse
// CHECK-NEXT:   (S) 5 ops (was 7)
// CHECK-NEXT:   (S) arith.addi -1, arith.muli -1
// CHECK-NEXT: dce
// CHECK-NEXT:   (S) 5 ops (was 5)
// CHECK-NOT:  (S)
