"""What a long run shows while it works: the driver's bar and a live line for phases without steps.

Two pieces, both on stderr and both silent when ``enabled`` is false:

- :class:`StepBar`, the driver's bar. The first chunk of a run compiles the step, which can take
  longer than every later chunk together, so a bar timed from the start shows a rate and an ETA that
  are wrong by that much (a 30-second run announced as an hour and a half). The bar therefore says
  ``compiling the step`` until the first chunk is done, then restarts its clock, so the rate and the ETA
  count compiled steps only.
- :func:`phase`, for work that has no steps to count (evaluating a trained sampler, building an index,
  computing a reference, loading data): one line with the phase's name and a clock that ticks every
  second while it runs, then ``done in ...``.

In a terminal or a notebook both are tqdm bars. Where stderr is neither (a batch job's log file, a pipe)
a bar redrawn in place would write one endless line of carriage returns, so both write plain lines
instead: the bar a line at each tenth of the run and at least every :data:`LOG_EVERY` seconds (steps done,
time, rate and time left), the phase a line when it starts and one when it is done.
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator

__all__ = ["StepBar", "phase"]

#: in a log (stderr not a terminal), the longest the bar stays silent, in seconds
LOG_EVERY = 600.0


def _interactive() -> bool:
    """Whether stderr shows a bar redrawn in place: a terminal, or a Jupyter kernel's output area."""
    return sys.stderr.isatty() or "ipykernel" in sys.modules


def _clock(seconds: float) -> str:
    from tqdm import tqdm

    return tqdm.format_interval(seconds)


def _line(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


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
    bar whose clock starts then, so its rate and ETA exclude the compilation. In a log (stderr neither a
    terminal nor a notebook) it writes plain lines instead, with the same clock.
    """

    def __init__(self, total: int, initial: int, desc: str | None, enabled: bool = True):
        self.total, self.desc, self.enabled = total, desc, enabled
        self.compiled = False
        self.bar = self.ticker = None
        self.lines = enabled and not _interactive()
        if self.lines:  # the clock of the plain lines: compilation first, then the compiled steps
            now = time.monotonic()
            self.done, self.t0, self.n0, self.said = initial, now, initial, (initial, now)
            _line(f"{desc}: compiling the step ({initial}/{total} done)")
        elif enabled:
            self.bar = _tqdm(total=total, initial=initial, desc=desc, leave=False,
                             bar_format="{desc}: compiling the step ({n_fmt}/{total_fmt} done) {elapsed}")
            self.ticker = _Ticker(self.bar)

    def update(self, steps: int) -> None:
        """Count ``steps`` more as done."""
        if self.lines:
            self._log(steps)
            return
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

    def _log(self, steps: int) -> None:
        """A plain line when the compilation ends, at each tenth of the run, and at least every ``LOG_EVERY`` s."""
        now = time.monotonic()
        self.done += steps
        if not self.compiled:
            _line(f"{self.desc}: compiled and ran the first {self.done - self.n0} steps in {_clock(now - self.t0)}")
            self.compiled, self.t0, self.n0, self.said = True, now, self.done, (self.done, now)
            return
        tenth = max(1, self.total // 10)
        if self.done // tenth == self.said[0] // tenth and now - self.said[1] < LOG_EVERY and self.done < self.total:
            return
        rate = (self.done - self.n0) / max(now - self.t0, 1e-9)
        left = f", about {_clock((self.total - self.done) / rate)} left" if self.done < self.total and rate > 0 else ""
        _line(f"{self.desc}: {self.done}/{self.total} steps ({100 * self.done // max(self.total, 1)}%) in "
              f"{_clock(now - self.t0)} at {rate:.3g} steps/s{left}")
        self.said = (self.done, now)

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
    if not _interactive():
        start = time.monotonic()
        _line(f"{label} ...")
        try:
            yield
        finally:
            _line(f"{label}: done in {_clock(time.monotonic() - start)}")
        return
    bar = _tqdm(total=None, desc=label, bar_format="{desc}: {elapsed}")
    ticker = _Ticker(bar)
    try:
        yield
    finally:
        ticker.close()
        bar.bar_format = "{desc}: done in {elapsed}"
        bar.close()
