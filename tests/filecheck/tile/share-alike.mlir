// tile-share-alike-kernels: a kernel whose code would be an earlier kernel's
// but for the GM tensors it accesses is marked `alike` (each earlier tensor:
// its own and the origin shift of its views); tile-expand-structured leaves
// it structured and convert-tile-to-npu makes it run the earlier kernel's
// npu code with every GM pointer moved by its tensor's difference of address
// and origin (`npu.kernel @b alike @a moves {tensor = bytes}`).
// RUN: ge-opt %s -p tile-select-tiling,tile-distribute,tile-share-alike-kernels | filecheck %s --check-prefix=MARK
// RUN: ge-opt %s -p tile-select-tiling,tile-distribute,tile-share-alike-kernels --mlir-pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS
// RUN: ge-opt %s -p ge-tile-opt | filecheck %s --check-prefix=TILE
// RUN: ge-opt %s -p ge-tile-opt,convert-tile-to-npu | filecheck %s --check-prefix=NPU
// RUN: ge-opt %s -p ge-tile-opt,convert-tile-to-npu | ge-opt | filecheck %s --check-prefix=NPU

// "second" is "first" on another input (x2 for x, origins alike) writing the
// other half of the channels of y (its output view 2,048 elements on);
// "third" computes another body.
// MARK:      tile.kernel "first" attributes {kind = "elementwise", tiling = #tile.elementwise_tiling<{{.*}}>, block_dim = 16 : i64}
// MARK:      tile.kernel "second" attributes {kind = "elementwise", tiling = #tile.elementwise_tiling<{{.*}}>, alike = "first", alike_tensors = {x = ["x2", 0 : i64], y = ["y", 2048 : i64]}, block_dim = 16 : i64}
// MARK:      tile.kernel "third" attributes {kind = "elementwise", tiling = #tile.elementwise_tiling<{{.*}}>, block_dim = 16 : i64}
// STATS:      tile-share-alike-kernels
// STATS-NEXT:   (S) 26 ops (was 26)
// STATS-NEXT:   (S) 1 kernels-alike - kernels that take an earlier kernel's code
// The expansion writes the loops of "first" and "third" only.
// TILE-LABEL: tile.kernel "first"
// TILE:         scf.for
// TILE-LABEL: tile.kernel "second"
// TILE-NOT:     scf.for
// TILE:         tile.elementwise
// TILE-LABEL: tile.kernel "third"
// TILE:         scf.for
// "second" runs "first"'s npu code (whose GM pointers name their tensors)
// with its loads 4,096 bytes on (x2 for x) and its stores 2 x 2,048 bytes
// on in y; the assembler builds its code so (tests/unit/test_share_alike.py).
// NPU-LABEL: npu.kernel @first
// NPU:         npu.ptr gm 0 + %{{.*}} {ge.tensor = "x"}
// NPU-NEXT:    npu.dma mte2
// NPU-NEXT:    npu.vrelu f16
// NPU-NEXT:    npu.ptr gm 8192 + %{{.*}} {ge.tensor = "y"}
// NPU-NEXT:    npu.dma mte3
// NPU:       npu.kernel @second alike @first moves {x = 4096 : i64, y = 4096 : i64} attributes {ge.kind = "elementwise", ge.writes = "8192+8192:float16"}{{$}}
// NPU-NEXT:  npu.launch @second
// NPU-LABEL: npu.kernel @third
// NPU:         npu.ptr gm 0 + %{{.*}}{{$}}
// NPU-NEXT:    npu.dma mte2
// NPU-NEXT:    npu.vexp f16
tile.program "two_halves" {
  tile.tensor {name = "x", kind = "input", offset = 0 : i64, type = tensor<1x2x8x8x16xf16>, layout = "NC1HWC0"}
  tile.tensor {name = "x2", kind = "input", offset = 4096 : i64, type = tensor<1x2x8x8x16xf16>, layout = "NC1HWC0"}
  tile.tensor {name = "y", kind = "output", offset = 8192 : i64, type = tensor<1x4x8x8x16xf16>, layout = "NC1HWC0"}
  tile.tensor {name = "z", kind = "output", offset = 16384 : i64, type = tensor<1x2x8x8x16xf16>, layout = "NC1HWC0"}
  tile.kernel "first" attributes {kind = "elementwise", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f16>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f16>
    tile.elementwise ins(%x : !tile.ref<gm, f16>) outs(%y : !tile.ref<gm, f16>) attributes {
        input_views = [#tile.map_view<shape = [1, 32, 8, 8], origin = 0, slice_stride = 1024, padded_w = 8>],
        output_views = [#tile.map_view<shape = [1, 32, 8, 8], origin = 0, slice_stride = 1024, padded_w = 8>]} {
    ^bb0(%a: f16):
      %zero = arith.constant 0.0 : f16
      %r = arith.maximumf %a, %zero : f16
      tile.yield %r : f16
    }
  }
  tile.kernel "second" attributes {kind = "elementwise", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x2"} : !tile.ref<gm, f16>
    %y = tile.gm {tensor = "y"} : !tile.ref<gm, f16>
    tile.elementwise ins(%x : !tile.ref<gm, f16>) outs(%y : !tile.ref<gm, f16>) attributes {
        input_views = [#tile.map_view<shape = [1, 32, 8, 8], origin = 0, slice_stride = 1024, padded_w = 8>],
        output_views = [#tile.map_view<shape = [1, 32, 8, 8], origin = 2048, slice_stride = 1024, padded_w = 8>]} {
    ^bb0(%a: f16):
      %zero = arith.constant 0.0 : f16
      %r = arith.maximumf %a, %zero : f16
      tile.yield %r : f16
    }
  }
  tile.kernel "third" attributes {kind = "elementwise", block_dim = 1 : i64} {
    %x = tile.gm {tensor = "x"} : !tile.ref<gm, f16>
    %z = tile.gm {tensor = "z"} : !tile.ref<gm, f16>
    tile.elementwise ins(%x : !tile.ref<gm, f16>) outs(%z : !tile.ref<gm, f16>) attributes {
        input_views = [#tile.map_view<shape = [1, 32, 8, 8], origin = 0, slice_stride = 1024, padded_w = 8>],
        output_views = [#tile.map_view<shape = [1, 32, 8, 8], origin = 0, slice_stride = 1024, padded_w = 8>]} {
    ^bb0(%a: f16):
      %r = math.exp %a : f16
      tile.yield %r : f16
    }
  }
}
