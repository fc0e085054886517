"""tile_cost.predicted_cycles: a core's double-buffered tile loop is paced by
its busiest stage; before the first tile reaches that stage and after the
last leaves it, the other stages of one tile run alone."""

from __future__ import annotations

import pytest

from gedialects.tile.transforms.tile_cost import TileWork, predicted_cycles
from target.config import load_target

CONFIG = load_target("davinci-910")


def _stages(work: TileWork, cores: int) -> tuple[int, int, int]:
    """(load, vector, store) cycles of one tile, as predicted_cycles prices them."""
    latency = CONFIG.latency_cycles["dma_gm"]
    load = CONFIG.dma_cycles("gm_ub", work.bytes_in, cores) + (work.dmas_in - 1) * latency
    store = CONFIG.dma_cycles("ub_gm", work.bytes_out, cores) + (work.dmas_out - 1) * latency
    return load, work.vector_cycles, store


@pytest.mark.parametrize("vector", [50, 5_000])  # load-bound, vector-bound
def test_a_pipelined_loop_pays_its_busiest_stage_per_tile(vector):
    work = TileWork(bytes_in=12_544, bytes_out=12_544, vector_cycles=vector, cube_cycles=0, instructions=5)
    cores = CONFIG.vector_cores
    load, vec, store = _stages(work, cores)
    busiest = max(load, vec, store)
    four_per_core = predicted_cycles(work, 4 * cores, CONFIG)
    assert four_per_core == 4 * busiest + load + vec + store - busiest


def test_one_tile_runs_its_stages_one_after_another():
    work = TileWork(bytes_in=12_544, bytes_out=12_544, vector_cycles=50, cube_cycles=0, instructions=5)
    load, vec, store = _stages(work, 1)
    assert predicted_cycles(work, 1, CONFIG) == load + vec + store
