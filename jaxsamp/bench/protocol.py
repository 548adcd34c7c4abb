"""A benchmark's protocol as data: what runs, on what budget, how it is scored and how its goals are decided.

A :class:`Protocol` is fixed before the first run and stored with every results file, so that a recorded
figure can be reproduced from the file alone (``jaxsamp bench run SUITE --cells CELL --seeds K``). It holds a
grid of :class:`Cell` s (one method, one target, its settings and its :class:`Budget`), the seeds, the headline
estimator, the baselines at an equal number of target evaluations (a cell whose budget matches other cells'
training evaluations) and the :class:`Goal` s with their decision rule.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from jaxsamp.core.errors import ConfigError

BETTER = ("below", "above")


@dataclasses.dataclass(frozen=True)
class Budget:
    """What a cell may spend.

    Parameters
    ----------
    updates : int, optional
        Training updates (``jaxsamp.fit``'s ``num_steps``), scaled by ``--budget-scale``.
    target_evals : int, optional
        Target evaluations (energy and gradient calls, summed over particles).
    seconds : float, optional
        Wall-clock seconds of training, compilation kept outside the clock.
    match_target_evals : tuple of str
        Cells whose mean training target evaluations, at the same seed and budget scale, are this cell's
        budget: a baseline at an equal count (tempered SMC beside the learned samplers). With ``target_evals``
        too, that count is added to the matched mean (the learned samplers' sampling evaluations beside their
        training's).
    match_figure : str
        The figure of the matched cells that is matched: ``"target_evals"`` (their training's), or another
        count they record (``"sample_target_evals"``: a baseline at the evaluations of one sampling run).
    match_scale : float
        Multiplies the matched count: a baseline at ``k`` times the matched cells' evaluations (how many times
        a sampling run's evaluations tempered SMC needs to be as accurate, for a break-even count).
    """

    updates: int | None = None
    target_evals: int | None = None
    seconds: float | None = None
    match_target_evals: tuple[str, ...] = ()
    match_figure: str = "target_evals"
    match_scale: float = 1.0


@dataclasses.dataclass(frozen=True)
class Cell:
    """One method on one target with its settings: a row of a suite's grid.

    Parameters
    ----------
    name : str
        ``"method-variant/target"``, unique in its suite (``pis-kl/funnel``).
    runner : str
        How the cell runs: ``"fit"`` (a learned method through :func:`jaxsamp.fit`), ``"tempered_smc"`` (the
        equal-budget baseline), or a runner its suite declares (:data:`jaxsamp.bench.cells.RUNNERS`).
    target : mapping
        The target's registry name and parameters (``{"name": "funnel", "dim": 10}``).
    params : mapping
        The runner's parameters (for ``"fit"``: ``method``, ``settings``, ``batch_size``, ``evaluate``).
    budget : Budget
    quick : mapping
        Overrides of ``params`` (and ``budget_updates``, and ``target``: a smaller instance) at the suite's quick
        size, which a test runs.
    """

    name: str
    runner: str
    target: Mapping[str, Any]
    params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    budget: Budget = Budget()
    quick: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping) -> Cell:
        """The cell stored in a results file (its budget's tuple restored)."""
        budget = dict(data["budget"])
        budget["match_target_evals"] = tuple(budget["match_target_evals"])
        return cls(**{**data, "budget": Budget(**budget)})

    def sized(self, quick: bool) -> Cell:
        """The cell at the quick size (``params``, the update budget and the target overridden) or as declared."""
        if not quick:
            return self
        overrides = dict(self.quick)
        target = overrides.pop("target", self.target)
        budget = self.budget
        if "budget_updates" in overrides:
            budget = dataclasses.replace(budget, updates=overrides.pop("budget_updates"))
        params = dict(self.params)
        for key, value in overrides.items():
            params[key] = {**params[key], **value} if isinstance(value, Mapping) and key in params else value
        return dataclasses.replace(self, target=target, params=params, budget=budget, quick={})


@dataclasses.dataclass(frozen=True)
class Goal:
    """A target figure for one cell and the rule that decides it.

    The rule: over the seeds recorded on one machine, the two-sided ``level`` t-interval of the mean of
    ``figure`` is formed; the goal is **met** when the interval lies on the ``better`` side of ``threshold``,
    **missed** when it lies wholly on the other side, and **undecided** otherwise (with the number of seeds that
    would decide it at the observed spread). With a ``baseline`` cell the goal is on the per-seed ratio
    ``figure(cell) / figure(baseline)`` over the seeds both have on that machine ("within 2x of the exact score":
    ``threshold=2``).

    Parameters
    ----------
    cell : str
        The cell's name (with ``" xK"`` for a budget-scaled cell).
    figure : str
        A figure of the glossary (``log_Z_abs_err``).
    threshold : float
    better : {"below", "above"}
    level : float
        The interval's coverage (0.95).
    source : str
        Where the goal comes from (the paper's table, an issue).
    baseline : str
        A cell whose figure, seed by seed, divides the cell's ("" for a goal on the figure itself).
    """

    cell: str
    figure: str
    threshold: float
    better: str = "below"
    level: float = 0.95
    source: str = ""
    baseline: str = ""

    def __post_init__(self):
        if self.better not in BETTER:
            raise ConfigError(f"goal on {self.cell}: better must be one of {BETTER}, got {self.better!r}")
        if not 0.5 < self.level < 1:
            raise ConfigError(f"goal on {self.cell}: level must lie in (0.5, 1), got {self.level}")

    @property
    def name(self) -> str:
        figure = f"{self.figure} / {self.baseline}'s" if self.baseline else self.figure
        return f"{self.cell}: {figure} {'<' if self.better == 'below' else '>'} {self.threshold:g}"


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Two cells compared seed by seed on one figure (paired differences; per-seed ratios and their median)."""

    cell: str
    baseline: str
    figure: str


@dataclasses.dataclass(frozen=True)
class Protocol:
    """A benchmark suite's protocol, fixed before its first run and stored with its results.

    Parameters
    ----------
    suite : str
        The suite's name; results go to ``benchmarks/results/<suite>.json``.
    summary : str
        One line for ``jaxsamp bench list``.
    cells : tuple of Cell
        The grid, in the order it runs (a baseline after the cells whose evaluations it matches).
    seeds : tuple of int
        The seeds a plain ``jaxsamp bench run SUITE`` runs.
    headline : str
        The headline estimator (a figure of the glossary), first in every table.
    figures : tuple of str
        The figures the report shows after the headline.
    evaluation : mapping
        ``num_samples`` (and ``num_sets``, ...) scored per run; ``quick_evaluation`` at the quick size.
    goals : tuple of Goal
    comparisons : tuple of Comparison
    device : mapping
        The cells an accelerator runs under ``jaxsamp bench run SUITE --device-budget SECONDS``, most valuable
        first, each with its expected wall seconds per seed on the reference accelerator (one H200: start-up,
        compilation, training and evaluation). A recorded seed of the cell on the same device kind replaces the
        estimate with its measured seconds (:func:`jaxsamp.bench.runner.device_queue`).
    notes : str
        The protocol in words: why these settings, what the paper used, what changed and when.
    """

    suite: str
    summary: str
    cells: tuple[Cell, ...]
    seeds: tuple[int, ...] = (0, 1, 2)
    headline: str = "log_Z_abs_err"
    figures: tuple[str, ...] = ()
    evaluation: Mapping[str, Any] = dataclasses.field(default_factory=lambda: {"num_samples": 10_000})
    quick_evaluation: Mapping[str, Any] = dataclasses.field(default_factory=lambda: {"num_samples": 128})
    goals: tuple[Goal, ...] = ()
    comparisons: tuple[Comparison, ...] = ()
    device: Mapping[str, float] = dataclasses.field(default_factory=dict)
    notes: str = ""

    def __post_init__(self):
        names = [cell.name for cell in self.cells]
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise ConfigError(f"suite {self.suite!r}: cells named twice: {', '.join(duplicated)}")
        for cell in self.cells:
            unknown = [c for c in cell.budget.match_target_evals if c not in names]
            if unknown:
                raise ConfigError(f"suite {self.suite!r}: cell {cell.name!r} matches unknown cells {unknown}")
        unknown = [c for c in self.device if c not in names]
        if unknown:
            raise ConfigError(f"suite {self.suite!r}: device cells {unknown} are not cells of the suite")
        slow = {c: s for c, s in self.device.items() if not s > 0}
        if slow:
            raise ConfigError(f"suite {self.suite!r}: device seconds must be positive, got {slow}")
        for goal in self.goals:
            if goal.baseline and goal.baseline not in names:
                raise ConfigError(f"suite {self.suite!r}: goal {goal.name!r} has an unknown baseline {goal.baseline!r}")

    def cell(self, name: str) -> Cell:
        """The cell called ``name`` (a ConfigError listing the suite's cells otherwise)."""
        for cell in self.cells:
            if cell.name == name:
                return cell
        raise ConfigError(f"suite {self.suite!r} has no cell {name!r}; its cells: {', '.join(c.name for c in self.cells)}")

    def select(self, patterns=None) -> tuple[Cell, ...]:
        """The cells whose names match any of the shell-style ``patterns`` (every cell when None)."""
        import fnmatch

        if not patterns:
            return self.cells
        chosen = tuple(c for c in self.cells if any(fnmatch.fnmatchcase(c.name, p) for p in patterns))
        unmatched = [p for p in patterns if not any(fnmatch.fnmatchcase(c.name, p) for c in self.cells)]
        if unmatched:
            raise ConfigError(f"suite {self.suite!r}: no cell matches {unmatched}; its cells: "
                              f"{', '.join(c.name for c in self.cells)}")
        return chosen

    def to_dict(self) -> dict:
        """The protocol as JSON-ready data (tuples as lists)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> Protocol:
        """The protocol stored in a results file."""
        data = dict(data)
        cells = tuple(Cell.from_dict(c) for c in data.pop("cells"))
        goals = tuple(Goal(**g) for g in data.pop("goals", ()))
        comparisons = tuple(Comparison(**c) for c in data.pop("comparisons", ()))
        return cls(cells=cells, goals=goals, comparisons=comparisons, seeds=tuple(data.pop("seeds")),
                   figures=tuple(data.pop("figures", ())), **data)


def scaled_name(cell: str, budget_scale: int) -> str:
    """A cell's name in the results: ``"pis-kl/funnel"`` at scale 1, ``"pis-kl/funnel x5"`` at scale 5."""
    return cell if budget_scale == 1 else f"{cell} x{budget_scale}"
