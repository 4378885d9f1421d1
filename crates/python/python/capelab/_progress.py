"""Progress for long work: `progress=None` (silent), `True` (a bar on stderr, as the `cape` CLI
draws one whatever stdout is) or a callable `progress(done, total)`. The native core calls it
from time to time (at most ten times a second, and at the end) with the GIL held."""

from __future__ import annotations

import sys
import time
from typing import Callable, Optional, Union

ProgressArg = Union[None, bool, Callable[[int, int], object]]


class StderrBar:
    """`label done/total [#####     ] 42% 3.1 s` on one stderr line, ended by a newline."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.start = time.monotonic()
        self.done = False

    def __call__(self, done: int, total: int) -> None:
        if self.done:
            return
        width = 30
        share = done / total if total else 1.0
        filled = int(width * share)
        elapsed = time.monotonic() - self.start
        sys.stderr.write(
            f"\r{self.label} {done}/{total} [{'#' * filled}{' ' * (width - filled)}] "
            f"{100 * share:3.0f}% {elapsed:.1f} s"
        )
        if done >= total:
            sys.stderr.write("\n")
            self.done = True
        sys.stderr.flush()


def callback(progress: ProgressArg, label: str) -> Optional[Callable[[int, int], object]]:
    """The callable the native core should call, or None."""
    if progress is None or progress is False:
        return None
    if progress is True:
        return StderrBar(label)
    if callable(progress):
        return progress
    raise ValueError(
        f"progress: expected None, True or a callable progress(done, total), got {progress!r}"
    )
