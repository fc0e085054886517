// Malformed graph IR: every chunk gives one `file:line:col: error:` line with
// a caret excerpt, no traceback, and ge-opt exits non-zero (checked by `not`).
// RUN: not ge-opt %s --split-input-file -o %t 2>&1 | filecheck %s

func.func @unknown_op(%x: tensor<2x6xf32>) {
  %y = graph.frobnicate %x : (tensor<2x6xf32>) -> tensor<2x6xf32>
  func.return
}

// CHECK-NOT:  {{Traceback|internal error}}
// CHECK:      {{^}}{{.*}}parse-errors.mlir:6:25: error: Operation graph.frobnicate is not registered
// CHECK-NEXT: {{^}}  %y = graph.frobnicate %x : (tensor<2x6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT: {{^}}                        ^^

// -----

func.func @bad_type(%x: tensor<2x6xf32>) {
  %y = graph.relu %x : (tensor<2x6xf32>) -> tensor<2x6xf32
  func.return
}

// The parser notices the missing `>` at the next token.
// CHECK-NEXT: {{^}}{{.*}}parse-errors.mlir:19:3: error: Expected '>' after builtin parameter list
// CHECK-NEXT: {{^}}  func.return
// CHECK-NEXT: {{^}}  ^^^^^^^^^^^

// -----

func.func @bad_element_type(%x: tensor<2x6xfloat>) {
  func.return
}

// CHECK-NEXT: {{^}}{{.*}}parse-errors.mlir:29:44: error: Expected shape type.
// CHECK-NEXT: {{^}}func.func @bad_element_type(%x: tensor<2x6xfloat>) {
// CHECK-NEXT: {{^}}                                           ^^^^^

// -----

func.func @missing_arrow(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %y = graph.conv %x, %w : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> tensor<1x4x6x6xf32>
  func.return
}

// CHECK-NEXT: {{^}}{{.*}}parse-errors.mlir:40:69: error: Expected '->'
// CHECK-NEXT: {{^}}  %y = graph.conv %x, %w : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> tensor<1x4x6x6xf32>
// CHECK-NEXT: {{^}}                                                                    ^^^^^^

// -----

func.func @bad_attribute(%x: tensor<2x6xf32>) {
  %y = graph.softmax %x {axis = } : (tensor<2x6xf32>) -> tensor<2x6xf32>
  func.return
}

// CHECK-NEXT: {{^}}{{.*}}parse-errors.mlir:51:33: error: attribute expected
// CHECK-NEXT: {{^}}  %y = graph.softmax %x {axis = } : (tensor<2x6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT: {{^}}                                ^

// -----

func.func @wrong_operand_count(%x: tensor<2x6xf32>) {
  %y = graph.relu %x, %x : (tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<2x6xf32>
  func.return
}

// CHECK-NEXT: {{^}}{{.*}}parse-errors.mlir:62:19: error: Expected 1 operand, but got 2
// CHECK-NEXT: {{^}}  %y = graph.relu %x, %x : (tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT: {{^}}                  ^^^^^^^

// -----

func.func @bad_constant() -> tensor<f32> {
  %c = graph.constant 1.0 : f32
  func.return %c : tensor<f32>
}

// CHECK-NEXT: {{^}}{{.*}}parse-errors.mlir:73:23: error: graph.constant expects a dense or dense_resource value
// CHECK-NEXT: {{^}}  %c = graph.constant 1.0 : f32
// CHECK-NEXT: {{^}}                      ^

// -----

func.func @unknown_dialect(%x: tensor<2x6xf32>) {
  %y = "foo.bar"(%x) : (tensor<2x6xf32>) -> tensor<2x6xf32>
  func.return
}

// CHECK-NEXT: {{^}}{{.*}}parse-errors.mlir:84:17: error: Operation foo.bar is not registered
// CHECK-NEXT: {{^}}  %y = "foo.bar"(%x) : (tensor<2x6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT: {{^}}                ^

// -----

// A string literal that never ends (a truncated file, a resource blob cut
// short) is one error, found in linear time (xDSL 0.75's own pattern
// backtracks exponentially here: gedialects/textual.py); the excerpt of a
// long line is clipped around the column.
func.func @unterminated(%x: tensor<2xf32>) {
  %y = graph.relu %x {note = "0x0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef} : (tensor<2xf32>) -> tensor<2xf32>
}

// CHECK-NEXT: {{^}}{{.*}}parse-errors.mlir:99:30: error: End of file reached before closing string literal.
// CHECK-NEXT: {{^}}  %y = graph.relu %x {{.*}}...
// CHECK-NEXT: {{^}}                             ^
// CHECK-NOT:  {{^.}}
