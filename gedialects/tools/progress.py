"""Progress bars on stderr for the long parts of ge-compile and ge-run
(the compile stages, the simulated launches): tqdm's, only when stderr is
a terminal and the log level is below error, so pipes, files and CI logs
get nothing; without tqdm installed (`pip install 'gedialects[progress]'`)
nothing either."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Progress = Callable[[int, int, str], None]
"""progress(done, total, what just finished)."""


def wanted(log_level: str) -> bool:
    """Bars on stderr: a terminal, and more than errors asked for."""
    return sys.stderr.isatty() and log_level != "error"


@contextmanager
def progress_bar(desc: str, enabled: bool) -> Iterator[Progress | None]:
    """A `Progress` that draws one tqdm bar (its total from the first call),
    or None when bars are off or tqdm is missing; the bar goes when done."""
    if not enabled:
        yield None
        return
    try:
        from tqdm import tqdm
    except ImportError:
        yield None
        return
    bar = None

    def step(done: int, total: int, what: str) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, desc=desc, file=sys.stderr, leave=False, dynamic_ncols=True)
        bar.set_postfix_str(what, refresh=False)
        bar.update(done - bar.n)

    try:
        yield step
    finally:
        if bar is not None:
            bar.close()
