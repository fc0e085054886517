// Graph outputs (lowering/graph_to_tile/outputs.py): what writes each one.
// A structured kernel whose result is an fp32 graph output that only the
// return reads writes it itself, in fp32 and its true range, also in
// force_fp16 (no cast kernel after it). Anything else is copied by a
// structured kernel that the tile passes tile: an fp16 result widened to fp32
// (row-major in its shape; a [1, C, 1, 1] map's C contiguous values as one
// row), a value in the output's own type copied as 32-bit words.
// RUN: ge-opt %s --split-input-file -p 'graph-partition,convert-graph-to-tile,tile-select-tiling,tile-distribute' | filecheck %s --check-prefix=F16
// RUN: ge-opt %s --split-input-file -p 'graph-partition{precision_mode=must_keep_origin_dtype},convert-graph-to-tile{precision_mode=must_keep_origin_dtype},tile-select-tiling,tile-distribute' | filecheck %s --check-prefix=F32

// A pooled map as the output: in force_fp16 a cast kernel widens its 32
// fp16 channels, viewed as one row; in fp32 the pool writes the output in place.
// F16-LABEL: tile.program "pooled"
// F16:       tile.kernel "k{{[0-9]+}}_cast" attributes {kind = "cast", source = "output 'p' f16 -> f32", tiling = #tile.tiling<tile = [{{[0-9]+}}]
// F16-NEXT:    %[[H:.*]] = tile.load "gap" : tensor<32xf16>
// F16-NEXT:    %[[W:.*]] = tile.map ins(%[[H]] : tensor<32xf16>) -> tensor<32xf32> {
// F16-NEXT:    ^{{.*}}(%[[A:.*]]: f16):
// F16-NEXT:      %[[E:.*]] = arith.extf %[[A]] : f16 to f32
// F16-NEXT:      tile.yield %[[E]] : f32
// F16:         tile.store %[[W]], "p" : tensor<32xf32>
// F32-LABEL: tile.program "pooled"
// F32-NOT:   tile.kernel "k{{[0-9]+}}_{{cast|copy}}"
// F32:       tile.kernel "k{{[0-9]+}}_global_avg_pool"
// F32-NOT:   tile.kernel
func.func @pooled(%x: tensor<1x32x4x4xf32> {ge.name = "x"}) -> (tensor<1x32x1x1xf32> {ge.name = "p"}) {
  %p = graph.global_avg_pool %x : (tensor<1x32x4x4xf32>) -> tensor<1x32x1x1xf32> loc("gap")
  func.return %p : tensor<1x32x1x1xf32>
}

// -----

// A view of an int64 graph input as the output: 56 bytes copied as 14
// 32-bit words, in both modes (on two cores, 7 words each: the scalar unit
// issues beside the copies, and the cost model finds two half copies a
// little sooner done than one).
// F16-LABEL: tile.program "ids"
// F16:       tile.kernel "k0_copy" attributes {kind = "copy", source = "output 'j'", tiling = #tile.tiling<tile = [7], grid = [2]
// F16-NEXT:    %[[L:.*]] = tile.load "i" : tensor<14xi32>
// F16-NEXT:    tile.store %[[L]], "j" : tensor<14xi32>
// F32-LABEL: tile.program "ids"
// F32:       tile.kernel "k0_copy" attributes {kind = "copy", source = "output 'j'"
// F32-NEXT:    %[[L:.*]] = tile.load "i" : tensor<14xi32>
// F32-NEXT:    tile.store %[[L]], "j" : tensor<14xi32>
func.func @ids(%i: tensor<1x7xi64> {ge.name = "i"}) -> (tensor<7xi64> {ge.name = "j"}) {
  %j = graph.reshape %i {shape = array<i64: 7>} : (tensor<1x7xi64>) -> tensor<7xi64> loc("flat")
  func.return %j : tensor<7xi64>
}

// -----

// A softmax whose result is the output and also read by a relu: the
// softmax stores fp16 (the relu reads it) and a cast kernel copies it out;
// the relu, read only by the return, writes its fp32 output itself.
// F16-LABEL: tile.program "shared"
// F16:       tile.tensor {name = "[[S:softmax]]", kind = "internal", {{.*}}type = tensor<160xf16>
// F16:       tile.kernel "k0_softmax"
// F16:         tile.store %{{.*}}, "[[S]]" : tensor<4x40xf16>
// F16:       tile.kernel "k1_vector" attributes {kind = "vector", source = "graph.relu at loc(\22relu\22)"
// F16-NOT:       arith.truncf
// F16:         tile.store %{{.*}}, "r" : tensor<160xf32>
// F16:       tile.kernel "k2_cast" attributes {kind = "cast", source = "output 's' f16 -> f32"
// F16-NEXT:    tile.load "[[S]]" : tensor<4x40xf16>
// F16:         tile.store %{{.*}}, "s" : tensor<4x40xf32>
// F32-LABEL: tile.program "shared"
// F32:       tile.kernel "k0_softmax"
// F32:         tile.store %{{.*}}, "s" : tensor<4x40xf32>
// F32:       tile.kernel "k1_vector"
// F32:         tile.store %{{.*}}, "r" : tensor<160xf32>
// F32-NOT:   tile.kernel
func.func @shared(%x: tensor<4x40xf32> {ge.name = "x"}) -> (tensor<4x40xf32> {ge.name = "s"}, tensor<4x40xf32> {ge.name = "r"}) {
  %s = graph.softmax %x {axis = -1 : i64} : (tensor<4x40xf32>) -> tensor<4x40xf32> loc("sm")
  %r = graph.relu %s : (tensor<4x40xf32>) -> tensor<4x40xf32> loc("relu")
  func.return %s, %r : tensor<4x40xf32>, tensor<4x40xf32>
}
