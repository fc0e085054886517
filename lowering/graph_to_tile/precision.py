"""The precision modes of the lowering (ATC's `--precision_mode`)."""

from __future__ import annotations

from xdsl.utils.exceptions import PassFailedException

PRECISION_MODES = ("force_fp16", "must_keep_origin_dtype")
DEFAULT_PRECISION = "force_fp16"
"""ATC's default on inference parts: the cube reads fp16 and accumulates fp32."""


def check_precision_mode(precision: str) -> None:
    if precision not in PRECISION_MODES:
        raise PassFailedException(f"unknown precision mode '{precision}' (expected {', '.join(PRECISION_MODES)})")
