// --verify-diagnostics with MLIR's expected-* comments: every chunk below
// produces exactly the error it announces, so ge-opt succeeds and prints only
// the chunks without errors.
// RUN: ge-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @wrong_return(%a: i32, %b: i64) -> i32 {
  // expected-error@+1 {{'func.return' op Expected arguments to have the same types}}
  func.return %b : i64
}

// -----

// A chunk without errors is printed.
func.func @fine(%a: i32) -> i32 {
  func.return %a : i32
}

// CHECK-LABEL: func.func @fine
// CHECK-NEXT:    func.return
// CHECK-NOT:   func.func @wrong_return

// -----

// A parse error, on the same line as its comment.
func.func @parse(%a: i32) -> i32 {
  %x = arith.addi %a, %a : i64 // expected-error {{operand is used with type i64, but has been previously used or defined with type i32}}
  func.return %a : i32
}

// -----

func.func @relative_up(%a: i32, %b: i64) -> i32 {
  func.return %b : i64
  // expected-error@-1 {{function output types}}
}

// -----

func.func @above(%a: i32, %b: i64) -> i32 {
  func.return %b : i64
  // expected-error@above {{function output types}}
}

// -----

// expected-error@below {{contains empty block in single-block region}}
"func.func"() ({
^bb0(%a: i32):
}) {sym_name = "empty", function_type = (i32) -> ()} : () -> ()

// -----

// An op with a name location (as imported from ONNX): the message names it,
// and the error still matches the line the op was parsed from.
func.func @named(%a: i32, %b: i64) -> i32 {
  // expected-error-re@+1 {{loc("{{ret[0-9]}}"): 'func.return' op}}
  func.return %b : i64 loc("ret1")
}

// CHECK-NOT:   func.func
