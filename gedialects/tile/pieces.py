"""Runs of equal pieces along one dim of a kernel's iteration space, and the
loops that spread them over the cores: a dim of `width` cut into chunks of
`size` is one run of whole chunks and one of the shorter last chunk, each
a loop of its own since the pieces' sizes are static in the code
(transdata, the map transposes)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Run:
    """`count` pieces of `size` (pixels or channels) along one dim;
    `at(kernel, i)`: where the i-th begins (its row and column, or its
    16-channel block)."""

    count: int
    size: int
    at: Callable


def row_runs(rows: int, width: int, size: int) -> list[Run]:
    """Every row of `width` columns in chunks of `size` ((row, first column)
    each): the whole chunks, then each row's shorter last one."""
    nfull, tail = divmod(width, size)
    runs = [Run(rows * nfull, size, lambda k, i: (k.div(i, nfull), k.mul(k.rem(i, nfull), size)))] if nfull else []
    return runs + ([Run(rows, tail, lambda k, i: (i, nfull * size))] if tail else [])


def channel_runs(channels: int) -> list[Run]:
    """The 16-channel blocks of `channels` (block index each): the whole
    blocks, then the shorter last one."""
    whole, part = divmod(channels, 16)
    return ([Run(whole, 16, lambda k, i: i)] if whole else []) + ([Run(1, part, lambda k, i: whole)] if part else [])


def chunk_runs(length: int, size: int) -> list[Run]:
    """`length` in chunks of `size` (first element each): the whole chunks,
    then the shorter last one."""
    full, tail = divmod(length, size)
    return (([Run(full, size, lambda k, i: k.mul(i, size))] if full else [])
            + ([Run(1, tail, lambda k, i: full * size)] if tail else []))


def pieces(outer: list[Run], inner: list[Run]) -> int:
    """Pairs of an outer and an inner piece."""
    return sum(a.count for a in outer) * sum(b.count for b in inner)


def for_pieces(kernel, block_dim: int, outer: list[Run], inner: list[Run], body, pipeline: bool = False) -> None:
    """body(at, size, at, size) for every pair of an outer and an inner piece,
    the pairs spread over the blocks (so a small map's channel blocks go to
    several cores instead of one after another on one); one loop per pair
    of runs."""
    for a in outer:
        for b in inner:
            with kernel.tiles(a.count * b.count, block_dim, pipeline) as tile:
                body(a.at(kernel, kernel.div(tile, b.count)), a.size, b.at(kernel, kernel.rem(tile, b.count)), b.size)


def row_chunks(kernel, rows: int, width: int, size: int, block_dim: int, chunk) -> None:
    """chunk(row, first column, columns) over every row of `width` columns
    in chunks of `size`, spread over the blocks."""
    for run in row_runs(rows, width, size):
        with kernel.tiles(run.count, block_dim) as tile:
            chunk(*run.at(kernel, tile), run.size)


__all__ = ["Run", "channel_runs", "chunk_runs", "for_pieces", "pieces", "row_chunks", "row_runs"]
