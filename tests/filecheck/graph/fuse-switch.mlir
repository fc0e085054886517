// Switching fusion rules off (ATC's --fusion-switch-file, both forms, and the
// pass's disable= option) and the JSON report (--fusion-report, like ATC's
// fusion_result.json). A switched-off candidate is a missed remark.
// RUN: ge-opt %s -p graph-fuse --fusion-switch-file=%inputs/fusion-switch.json --log=info 2>&1 | filecheck %s --check-prefix=JSON
// RUN: ge-opt %s --pass-pipeline='builtin.module(graph-fuse)' --fusion-switch-file=%inputs/fusion-switch.cfg --log=info 2>&1 | filecheck %s --check-prefix=LINES
// RUN: ge-opt %s -p 'graph-fuse{disable=ConvActivationFusionPass,ElementwiseLoopFusionPass}' --fusion-report=%t.json > /dev/null
// RUN: filecheck %s --check-prefix=REPORT < %t.json
// RUN: ge-opt %s --pass-pipeline='builtin.module(graph-fuse{report="%t2.json"})' > /dev/null
// RUN: filecheck %s --check-prefix=ALL-ON < %t2.json
// RUN: not ge-opt %s -p graph-fuse --fusion-switch-file=%inputs/fusion-switch-bad.cfg 2>&1 | filecheck %s --check-prefix=BAD
// RUN: not ge-opt %s -p graph-fuse --fusion-switch-file=%inputs/missing.cfg 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not ge-opt %s -p cse --fusion-report=%t3.json 2>&1 | filecheck %s --check-prefix=NO-FUSE
// RUN: not ge-opt %s -p 'graph-fuse{disable=NoSuchPass}' 2>&1 | filecheck %s --check-prefix=UNKNOWN

func.func @net(%x: tensor<1x3x4x4xf32>, %a: tensor<2x8xf32>, %b: tensor<8x4xf32>, %c: tensor<4xf32>) -> (tensor<1x2x4x4xf32>, tensor<2x4xf32>) {
  %w = graph.fill 0.5 : tensor<2x3x1x1xf32>
  %p = graph.fill 1.0 : tensor<2xf32>
  %conv = graph.conv %x, %w : tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32> -> tensor<1x2x4x4xf32> loc("conv")
  %bn = graph.batch_norm %conv, %p, %p, %p, %p : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32> loc("bn")
  %relu = graph.relu %bn : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("relu")
  %mm = graph.matmul %a, %b : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32> loc("mm")
  %add = graph.add %mm, %c : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32> loc("add")
  %e = graph.exp %add : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("exp")
  %n = graph.neg %e : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("neg")
  func.return %relu, %n : tensor<1x2x4x4xf32>, tensor<2x4xf32>
}

// The JSON file switches ConvBatchnormFusionPass off, and all UBFusion rules (loop fusion).
// JSON-DAG: 'graph.conv' op missed ConvBatchnormFusionPass at loc("conv"): rule switched off
// JSON-DAG: 'graph.matmul' op applied MatMulBiasAddFusionPass at loc("mm"): absorbed [mm, add]
// JSON-DAG: 'graph.gemm' op missed GemmActivationFusionPass at loc("mm"): unknown/custom op (graph.exp has no epilogue form)
// JSON-DAG: 'graph.exp' op missed ElementwiseLoopFusionPass at loc("exp"): rule switched off
// JSON-DAG: 'graph.batch_norm' op missed BatchnormLoopFusionPass at loc("bn"): rule switched off
// JSON:     graph.conv
// JSON-NEXT: graph.batch_norm
// JSON-NEXT: graph.relu

// The line form switches ConvActivationFusionPass off; everything else is on.
// LINES-DAG: 'graph.conv' op applied ConvBatchnormFusionPass at loc("conv"): absorbed [conv, bn]
// LINES-DAG: 'graph.conv' op missed ConvActivationFusionPass at loc("conv"): rule switched off
// LINES-DAG: 'graph.exp' op applied ElementwiseLoopFusionPass at loc("exp"): absorbed [exp, neg]
// LINES:     graph.conv {{.*}}{absorbed = ["conv", "bn"]}
// LINES-NEXT: graph.relu

// REPORT:      "graph_fusion": {
// REPORT:        "ConvBatchnormFusionPass": {
// REPORT-NEXT:     "match_times": 1,
// REPORT-NEXT:     "effect_times": 1,
// REPORT-NEXT:     "switch": "on",
// REPORT-NEXT:     "missed": {}
// REPORT:        "ConvActivationFusionPass": {
// REPORT-NEXT:     "match_times": 1,
// REPORT-NEXT:     "effect_times": 0,
// REPORT-NEXT:     "switch": "off",
// REPORT-NEXT:     "missed": {
// REPORT-NEXT:       "rule switched off": 1
// REPORT:        "GemmActivationFusionPass": {
// REPORT-NEXT:     "match_times": 1,
// REPORT-NEXT:     "effect_times": 0,
// REPORT-NEXT:     "switch": "on",
// REPORT-NEXT:     "missed": {
// REPORT-NEXT:       "unknown/custom op": 1
// REPORT:      "ub_fusion": {
// REPORT-NEXT:   "BatchnormLoopFusionPass": {
// REPORT:        "MaskWhereFusionPass": {
// REPORT:        "ElementwiseLoopFusionPass": {
// REPORT-NEXT:     "match_times": 1,
// REPORT-NEXT:     "effect_times": 0,
// REPORT-NEXT:     "switch": "off",

// ALL-ON:      "ConvActivationFusionPass": {
// ALL-ON-NEXT:   "match_times": 1,
// ALL-ON-NEXT:   "effect_times": 1,
// ALL-ON:      "ElementwiseLoopFusionPass": {
// ALL-ON-NEXT:   "match_times": 1,
// ALL-ON-NEXT:   "effect_times": 1,

// BAD: error: graph-fuse: {{.*}}fusion-switch-bad.cfg:1: expected 'on' or 'off', got 'maybe'
// MISSING: error: graph-fuse: cannot read fusion switch file '{{.*}}missing.cfg': No such file or directory
// NO-FUSE: ge-opt: error: --fusion-switch-file/--fusion-report need graph-fuse in the pass pipeline
// UNKNOWN: error: graph-fuse: unknown fusion rule 'NoSuchPass' (known: {{.*}}ConvBatchnormFusionPass{{.*}})
