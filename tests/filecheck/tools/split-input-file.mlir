// Each `// -----` chunk is parsed and transformed on its own; the outputs are
// separated by the same marker. Only a line holding just the marker splits.
// RUN: ge-opt %s --split-input-file -p cse | filecheck %s

func.func @first(%a: i32) -> i32 {
  %x = arith.addi %a, %a : i32
  %y = arith.addi %a, %a : i32
  %s = arith.muli %x, %y : i32
  func.return %s : i32
}

// CHECK-LABEL: func.func @first
// CHECK:         %[[X:.*]] = arith.addi
// CHECK-NEXT:    arith.muli %[[X]], %[[X]] : i32
// CHECK:       {{^//}} -----

// -----

// The same SSA names and resource keys again: chunks do not share a scope.
func.func @second(%a: i64) -> i64 {
  %x = arith.addi %a, %a : i64
  %w = "test.op"() {w = dense_resource<w> : tensor<2xf32>} : () -> tensor<2xf32>
  func.return %x : i64
}
{-#
  dialect_resources: {
    builtin: {
      w: "0x040000000000803F00000040"
    }
  }
#-}

// CHECK-LABEL: func.func @second
// CHECK:         %[[X:.*]] = arith.addi %{{.*}}, %{{.*}} : i64
// CHECK:         dense_resource<[[KEY2:w[_0-9]*]]>
// CHECK-NEXT:    func.return %[[X]] : i64
// CHECK:         [[KEY2]]: "0x040000000000803F00000040"
// CHECK:       {{^//}} -----

// -----

// Blobs of every chunk survive though the key repeats (xDSL renames the
// second `w` in the same process; the blob must follow the new name).
func.func @third() -> tensor<2xf32> {
  %0 = "test.op"() {w = dense_resource<w> : tensor<2xf32>} : () -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      w: "0x040000000000404000008040"
    }
  }
#-}

// CHECK-LABEL: func.func @third
// CHECK:         dense_resource<[[KEY:w[_0-9]*]]>
// CHECK:         [[KEY]]: "0x040000000000404000008040"
// CHECK-NOT:   {{^//}} -----
