"""Hypothesis settings shared by the differential fuzzers of the lowering
(test_lowering_fuzz.py, test_npu_fuzz_transformer.py).

CI runs `ci_examples` examples per fuzzer; `GE_FUZZ_EXAMPLES=N` raises the
count (`GE_FUZZ_EXAMPLES=1000 pytest tests/unit/test_npu_fuzz_transformer.py`
to look harder). The search is derandomized (a fixed seed derived from the
test) and keeps no example database, so every run of the same count sees the
same examples: CI is deterministic, and a failure found locally reproduces
anywhere. No deadline: one example compiles and simulates whole programs.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings


def fuzz_examples(ci_examples: int) -> int:
    """The example count: GE_FUZZ_EXAMPLES if set, else `ci_examples`."""
    return int(os.environ.get("GE_FUZZ_EXAMPLES", str(ci_examples)))


def fuzz_settings(ci_examples: int, **overrides) -> settings:
    """Settings for a fuzzer that runs `ci_examples` examples in CI."""
    kwargs = dict(
        max_examples=fuzz_examples(ci_examples),
        deadline=None,
        derandomize=True,
        database=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )
    kwargs.update(overrides)
    return settings(**kwargs)
