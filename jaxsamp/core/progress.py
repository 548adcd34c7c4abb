"""What a long run shows while it works: the driver's bar and a live line for phases without steps.

Two pieces, both on stderr through tqdm and both silent when ``enabled`` is false:

- :class:`StepBar`, the driver's bar. The first chunk of a run compiles the step, which can take
  longer than every later chunk together, so a bar timed from the start shows a rate and an ETA that
  are wrong by that much (a 30-second run announced as an hour and a half). The bar therefore says
  ``compiling`` until the first chunk is done, then restarts its clock, so the rate and the ETA count
  compiled steps only.
- :func:`phase`, for work that has no steps to count (evaluating a trained sampler, building an index,
  computing a reference, loading data): one line with the phase's name and a clock that ticks every
  second while it runs, then ``done in ...``.
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from typing import Iterator

__all__ = ["StepBar", "phase"]


def _tqdm(**kwargs):
    """A tqdm bar on stderr: a notebook widget where ipywidgets is installed, text otherwise (no TqdmWarning)."""
    try:
        import ipywidgets  # noqa: F401

        from tqdm.auto import tqdm
    except ImportError:
        from tqdm import tqdm

    return tqdm(file=sys.stderr, dynamic_ncols=True, **kwargs)


class _Ticker:
    """Refreshes a tqdm bar every second from a daemon thread, so its clock moves while nothing is counted."""

    def __init__(self, bar):
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._tick, args=(bar,), daemon=True)
        self.thread.start()

    def _tick(self, bar) -> None:
        while not self.stop.wait(1.0):
            bar.refresh()

    def close(self) -> None:
        self.stop.set()
        self.thread.join()


class StepBar:
    """The driver's progress bar over ``total`` steps, ``initial`` of them already done (a resume).

    Until the first :meth:`update` the bar reads ``compiling the step``; that update replaces it with a
    bar whose clock starts then, so its rate and ETA exclude the compilation.
    """

    def __init__(self, total: int, initial: int, desc: str | None, enabled: bool = True):
        self.total, self.desc, self.enabled = total, desc, enabled
        self.compiled = False
        self.bar = self.ticker = None
        if enabled:
            self.bar = _tqdm(total=total, initial=initial, desc=desc, leave=False,
                             bar_format="{desc}: compiling the step ({n_fmt}/{total_fmt} done) {elapsed}")
            self.ticker = _Ticker(self.bar)

    def update(self, steps: int) -> None:
        """Count ``steps`` more as done."""
        if self.bar is None:
            return
        if not self.compiled:
            done = self.bar.n + steps
            self.ticker.close()
            self.bar.close()
            self.bar = _tqdm(total=self.total, initial=done, desc=self.desc)
            self.compiled = True
        else:
            self.bar.update(steps)

    def close(self) -> None:
        if self.bar is not None:
            if not self.compiled:
                self.ticker.close()
            self.bar.close()


@contextmanager
def phase(label: str, enabled: bool = True) -> Iterator[None]:
    """Show ``label`` with a clock ticking every second while the block runs, then ``done in ...``.

    Parameters
    ----------
    label : str
        What the block does, e.g. ``"evaluating 10000 walkers"``.
    enabled : bool
        ``False`` prints nothing (a run with ``progress=False``).
    """
    if not enabled:
        yield
        return
    bar = _tqdm(total=None, desc=label, bar_format="{desc}: {elapsed}")
    ticker = _Ticker(bar)
    try:
        yield
    finally:
        ticker.close()
        bar.bar_format = "{desc}: done in {elapsed}"
        bar.close()
