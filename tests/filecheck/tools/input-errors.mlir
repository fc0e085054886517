// Bad input gives `file:line:col: error:` (plus a caret excerpt for parse
// errors) or `ge-opt: error:`, exit code 1, and no traceback. With
// --split-input-file every chunk is still processed and reported.
// RUN: not ge-opt %s --split-input-file -o %t 2>&1 | filecheck %s
// RUN: not ge-opt %t.does-not-exist.mlir 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not ge-opt %S/../lit.cfg.py 2>&1 | filecheck %s --check-prefix=EXTENSION
// RUN: not ge-opt %s --input-shape 'x:1,3' 2>&1 | filecheck %s --check-prefix=SHAPE

func.func @verifier(%a: i32, %b: i64) -> i32 {
  func.return %b : i64
}

// CHECK:      {{^}}{{.*}}input-errors.mlir:10:3: error: 'func.return' op Expected arguments to have the same types as the function output types: expected [i32], got [i64]

// -----

func.func @parser(%a: i32) -> i32 {
  %x = arith.addi %a, %a : i64
  func.return %a : i32
}

// CHECK-NEXT: {{^}}{{.*}}input-errors.mlir:18:19: error: operand is used with type i64, but has been previously used or defined with type i32
// CHECK-NEXT: {{^}}  %x = arith.addi %a, %a : i64
// CHECK-NEXT: {{^}}                  ^^
// CHECK-NEXT: {{^}}{{.*}}input-errors.mlir:30:3: error: loc("ret1"): 'func.return' op Expected arguments

// -----

func.func @named(%a: i32, %b: i64) -> i32 {
  func.return %b : i64 loc("ret1")
}

// CHECK-NOT:  {{^.}}

// MISSING:     {{^}}ge-opt: error: cannot open input file '{{.*}}does-not-exist.mlir': No such file or directory
// MISSING-NOT: {{^.}}

// EXTENSION:     {{^}}ge-opt: error: unknown input file extension 'py'; pick a frontend with -f
// EXTENSION-NOT: {{^.}}

// SHAPE:       {{^}}ge-opt: error: --input-shape applies to ONNX input only (input is 'mlir')
// SHAPE-NOT:   {{^.}}
