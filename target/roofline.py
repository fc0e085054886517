"""Roofline bounds of a simulated run: what no program for this target can
beat, per kernel and in total, from the target config and what each kernel
computes (its `Kernel.info`: op type and logical operand shapes).

- Compute: the kernel's multiply-accumulates (conv: output elements x
  Cin/group x kh x kw; matmul/gemm: output elements x K; attention: query
  rows x keys x (head + value widths)) over the cube's
  peak rate on every cube core (16 x 16 x k0 MACs per fractal, k0 = 32 B /
  element size, at `cube_fractals_per_cycle` fractals per cycle per core).
  Vector-only kernels have no compute bound here (their work is not a MAC).
- Traffic: the bytes that must move -- every operand read once, the result
  written once, in the stored element size (a fused attention's scores are
  not an operand: they need not move) -- over the GM rates: loads at
  min(HBM, cores x min(gm_l1, gm_ub)), stores at min(HBM, cores x ub_gm),
  and both together within HBM.

A kernel's bound is the larger of the two; an op split over K
(tile-split-reduction) has its bound on its partial products' launch, none
on the launch that adds them (its cycles are all above the roofline: the
workspace is the code's, not the op's). The model's bound is the sum over
its launches (they run one after another on one stream). The ratio of
simulated cycles to the bound is how far the code is from the roofline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gedialects.npu.ops import SPLIT_K_SUM_KIND
from target.config import TargetConfig
from target.profile import AI_CORE, KernelProfile, Profile, gm_bytes, op_name

CUBE_OP_TYPES = ("conv", "matmul", "gemm", "attention")


@dataclass(frozen=True)
class KernelBound:
    name: str
    op_type: str
    op_name: str
    cycles: int
    macs: int
    min_bytes: int
    gm_bytes: int
    compute_cycles: float
    traffic_cycles: float
    cube_busy: int

    @property
    def bound(self) -> float:
        return max(self.compute_cycles, self.traffic_cycles, 1.0)

    @property
    def ratio(self) -> float:
        return self.cycles / self.bound

    @property
    def lost(self) -> float:
        """Cycles above the bound."""
        return self.cycles - self.bound

    @property
    def limit(self) -> str:
        return "compute" if self.compute_cycles >= self.traffic_cycles else "traffic"


def parse_shapes(text: str) -> list[list[int]]:
    return [[int(d) for d in s.split(",") if d] for s in text.split(";")] if text else []


def kernel_macs(op_type: str, in_shapes: list[list[int]], out_shapes: list[list[int]]) -> int:
    """Multiply-accumulates of a cube kernel (0 for others)."""
    if op_type not in CUBE_OP_TYPES or not in_shapes or not out_shapes:
        return 0
    out = math.prod(out_shapes[0])
    if op_type == "attention" and len(in_shapes) >= 3:  # q [.., Sq, d], k [.., Sk, d]: q k^T, then p v
        sk, d, dv = in_shapes[1][-2], in_shapes[0][-1], out_shapes[0][-1]
        return out // dv * sk * (d + dv)
    if op_type == "conv" and len(in_shapes) > 1 and len(in_shapes[1]) == 4:
        return out * math.prod(in_shapes[1][1:])  # [Cout, Cin/group, kh, kw]
    return out * (in_shapes[0][-1] if in_shapes[0] else 1)  # [..., M, K] x [..., K, N]


def cube_macs_per_cycle(config: TargetConfig, element_bytes: int) -> float:
    dtype = "f16" if element_bytes == 2 else "f32"
    k0 = 32 // element_bytes
    return 16 * 16 * k0 * config.cube_fractals_per_cycle[dtype] * config.cube_cores


def traffic_cycles(config: TargetConfig, read: int, written: int) -> float:
    cores = config.cube_cores
    load = min(config.hbm_bytes_per_cycle, cores * min(config.dma_bytes_per_cycle["gm_l1"], config.dma_bytes_per_cycle["gm_ub"]))
    store = min(config.hbm_bytes_per_cycle, cores * config.dma_bytes_per_cycle["ub_gm"])
    return max(read / load, written / store, (read + written) / config.hbm_bytes_per_cycle)


def kernel_bound(k: KernelProfile, config: TargetConfig, element_bytes: int) -> KernelBound:
    op_type = k.info.get("op_type", k.info.get("kind", ""))
    ins, outs = parse_shapes(k.info.get("in_shapes", "")), parse_shapes(k.info.get("out_shapes", ""))
    if k.info.get("kind") == SPLIT_K_SUM_KIND:
        ins, outs = [], []
    macs = kernel_macs(op_type, ins, outs)
    read = sum(math.prod(s) for s in ins) * element_bytes
    written = sum(math.prod(s) for s in outs) * element_bytes
    return KernelBound(
        name=k.name, op_type=op_type, op_name=op_name(k), cycles=k.cycles, macs=macs,
        min_bytes=read + written, gm_bytes=gm_bytes(k),
        compute_cycles=macs / cube_macs_per_cycle(config, element_bytes),
        traffic_cycles=traffic_cycles(config, read, written),
        cube_busy=k.busy.get("cube", 0),
    )


@dataclass(frozen=True)
class RunBound:
    kernels: list[KernelBound]
    cycles: int
    cube_cores: int

    @property
    def bound(self) -> float:
        return sum(k.bound for k in self.kernels)

    @property
    def macs(self) -> int:
        return sum(k.macs for k in self.kernels)

    @property
    def min_bytes(self) -> int:
        return sum(k.min_bytes for k in self.kernels)

    @property
    def gm_bytes(self) -> int:
        return sum(k.gm_bytes for k in self.kernels)

    @property
    def cube_utilisation(self) -> float:
        return sum(k.cube_busy for k in self.kernels) / max(1, self.cycles * self.cube_cores)

    def by_loss(self) -> list[KernelBound]:
        return sorted(self.kernels, key=lambda k: -k.lost)


def run_bound(profile: Profile, config: TargetConfig, element_bytes: int) -> RunBound:
    """The bounds of every AI-core launch of a run (AI-CPU tasks have no roofline here)."""
    kernels = [kernel_bound(k, config, element_bytes) for k in profile.kernels if k.task_type == AI_CORE]
    return RunBound(kernels, profile.total_cycles, config.cube_cores)
