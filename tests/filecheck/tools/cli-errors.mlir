// Mistakes on the command line give one clean `ge-opt: error:` line (no usage
// text, no traceback) and exit code 1, which `not` checks.
// RUN: not ge-opt %s -p no-such-pass 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not ge-opt %s --pass-pipeline='builtin.module(cse{no-such-option=1})' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not ge-opt %s -p 'apply-individual-rewrite{matched-operation-index=one operation-name="arith.addi" pattern-name="P"}' 2>&1 | filecheck %s --check-prefix=VALUE
// RUN: not ge-opt %s -p 'cse,,dce' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not ge-opt %s --pass-pipeline='func.func(cse)' 2>&1 | filecheck %s --check-prefix=ANCHOR
// RUN: not ge-opt %s -p cse --pass-pipeline='builtin.module(cse)' 2>&1 | filecheck %s --check-prefix=BOTH
// RUN: not ge-opt %s --no-such-flag 2>&1 | filecheck %s --check-prefix=FLAG

func.func @ok(%a: i32) -> i32 {
  func.return %a : i32
}

// UNKNOWN:     {{^}}ge-opt: error: unknown pass 'no-such-pass'
// UNKNOWN-NOT: {{^.}}

// OPTION:      {{^}}ge-opt: error: invalid pass options in 'cse{no-such-option=1}': {{.*}}no_such_option
// OPTION-NOT:  {{^.}}

// VALUE:       {{^}}ge-opt: error: invalid pass options in {{.*}}: Incompatible types: given ('one',), expected <class 'int'>
// VALUE-NOT:   {{^.}}

// A pipeline syntax error points at the spot with a caret.
// SYNTAX:      {{^}}ge-opt: error: invalid pass pipeline: Expected pass name here
// SYNTAX-NEXT: {{^}}cse,,dce
// SYNTAX-NEXT: {{^}}    ^
// SYNTAX-NOT:  {{^.}}

// ANCHOR:      {{^}}ge-opt: error: unsupported pass pipeline anchor 'func.func'
// ANCHOR-NOT:  {{^.}}

// BOTH:        {{^}}ge-opt: error: use either -p or --pass-pipeline, not both
// BOTH-NOT:    {{^.}}

// FLAG:        {{^}}ge-opt: error: unrecognized arguments: --no-such-flag
// FLAG-NOT:    {{^.}}

// An unknown pass names the closest one; --mlir-print-ir-after names passes
// of the pipeline; --mlir-timing (alias --time-passes) prints mlir-opt's
// execution time report (nested: tools/timing.mlir).
// RUN: not ge-opt %s -p graph-canonicalise 2>&1 | filecheck %s --check-prefix=MEAN
// RUN: not ge-opt %s -p cse --mlir-print-ir-after=dce 2>&1 | filecheck %s --check-prefix=AFTER
// RUN: ge-opt %s -p cse,dce --mlir-print-ir-after=dce 2>&1 >/dev/null | filecheck %s --check-prefix=DUMPED
// RUN: ge-opt %s -p cse --mlir-timing 2>&1 >/dev/null | filecheck %s --check-prefix=TIMING
// RUN: printf 'func.func @f(%%%%x: tensor<2xf32>) -> tensor<2xf32> {\n  %%%%0 = graph.reul %%%%x : (tensor<2xf32>) -> tensor<2xf32>\n  func.return %%%%0 : tensor<2xf32>\n}\n' > %t.op.mlir
// RUN: not ge-opt %t.op.mlir 2>&1 | filecheck %s --check-prefix=OP
// OP:          op.mlir:2:19: error: Operation graph.reul is not registered; did you mean 'graph.relu'?
// MEAN:        {{^}}ge-opt: error: unknown pass 'graph-canonicalise'; did you mean 'graph-canonicalize'? (`ge-opt --list-passes` lists the passes)
// AFTER:       {{^}}ge-opt: error: --mlir-print-ir-after: 'dce' is not in the pass pipeline
// DUMPED:      IR Dump After dce
// DUMPED-NOT:  IR Dump After cse
// TIMING:      Execution time report
// TIMING:      {{^}}  {{ *[0-9.]+}} ({{ *[0-9.]+}}%)  cse
// TIMING-NEXT: {{^}}  {{ *[0-9.]+}} (100.0%)  Total
