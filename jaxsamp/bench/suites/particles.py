"""Suite ``particles``: Adjoint Sampling and ASBS on the particle targets DW-4 and LJ-13 at the CPU configs, scored
by the particle protocol (geometric and energy W2 against the test split, with their noise floors)."""

from __future__ import annotations

from pathlib import Path

from jaxsamp.bench.protocol import Budget, Cell, Comparison, Goal, Protocol

CONFIGS = Path(__file__).resolve().parents[3] / "configs"
#: cell variant -> (the config of each system, ``{system}`` in its name; settings replacing the config's)
VARIANTS = {
    "adjoint": ("adjoint_{}_cpu.yaml", {}),
    "asbs": ("asbs_{}_cpu.yaml", {}),
    # the reference code's rules instead of the fixes: left-point Euler-Maruyama, a 10 000-sample buffer (78
    # rollouts of 128), no parameter average
    "adjoint-reference_rules": ("adjoint_{}_cpu.yaml", {"exact_variance": False, "buffer_epochs": 78, "ema_decay": 0.0}),
    "asbs-official_adam": ("asbs_{}_cpu_official.yaml", {}),
}
UNTIL_CAP_UPDATES = 100_000  # an epoch bound no 90-minute run reaches (LJ-13: about 2200 epochs)
LJ13_SECONDS = 90 * 60
#: the quick size: tiny networks, 3 epochs (ASBS: 2 adjoint-matching and 1 corrector epoch), 32 paths
QUICK_SETTINGS = {"hidden": 8, "num_layers": 1, "nfe": 10, "steps_per_epoch": 5, "train_batch_size": 32}
QUICK_ASBS = {"adjoint_epochs": 2, "corrector_epochs": 1}
QUICK_PATHS, QUICK_EPOCHS = 32, 3


def quick_settings(method: str) -> dict:
    """The settings a method's quick size replaces."""
    return {**QUICK_SETTINGS, **(QUICK_ASBS if method == "asbs" else {})}


def config_run(config: str, quick: bool = False) -> tuple[str, dict, dict, int, int]:
    """``(method, target spec, settings, paths per epoch, epochs)`` of ``configs/<config>`` (tiny when ``quick``)."""
    from jaxsamp.experiments.config import load_config

    cfg = load_config(CONFIGS / config)
    method, settings = cfg.sampler.name, dict(cfg.sampler.params)
    target = {"name": cfg.target.name, **cfg.target.params}
    if quick:
        return method, target, {**settings, **quick_settings(method)}, QUICK_PATHS, QUICK_EPOCHS
    return method, target, settings, cfg.run.num_chains, cfg.run.num_steps


def build(config: str, quick: bool = False):
    """The learned sampler of ``configs/<config>`` (registered method, its settings object), and its paths per
    epoch, for a suite that times a config (the overhead suite's fingerprint): ``(method, target, settings,
    batch_size, epochs)``."""
    import jaxsamp.learned.methods  # noqa: F401  (registers the methods)
    from jaxsamp.bench.cells import build_target
    from jaxsamp.core.registry import LEARNED

    method, target, settings, batch, epochs = config_run(config, quick)
    return method, build_target(target), LEARNED.entry(method).meta["settings"](**settings), batch, epochs


def particle_cell(variant: str, system: str, until_cap: bool = False) -> Cell:
    """One method (and rule variant) on DW-4 or LJ-13 at the CPU config's settings and 1000 epochs, or
    (``until_cap``) for 90 training minutes whatever the epochs."""
    config, overrides = VARIANTS[variant]
    method, target, settings, batch, epochs = config_run(config.format(system))
    budget = Budget(updates=UNTIL_CAP_UPDATES, seconds=LJ13_SECONDS) if until_cap else Budget(updates=epochs)
    name = f"{variant}{'-until_cap' if until_cap else ''}/{system}"
    return Cell(name, "fit", target,
                {"method": method, "settings": {**settings, **overrides}, "batch_size": batch, "chunk": 10},
                budget,
                quick={"settings": quick_settings(method), "batch_size": QUICK_PATHS, "budget_updates": QUICK_EPOCHS,
                       "chunk": 1})


CELLS = (
    *(particle_cell(v, "dw4") for v in VARIANTS),
    *(particle_cell(v, "lj13") for v in ("adjoint", "asbs", "adjoint-reference_rules")),
    *(particle_cell(v, "lj13", until_cap=True) for v in ("adjoint", "asbs")),
)
PAPERS = {
    "adjoint": "Havens et al. 2025 (Adjoint Sampling), Table 1: DW-4 geometric W2 0.62 ± 0.06, 3 GPU seeds at "
               "5000 epochs of 512 paths (2.56e6 energy gradients); issue 60",
    "asbs": "Liu et al. 2025 (ASBS), Table 2: DW-4 geometric W2 0.43 ± 0.05, 3 GPU seeds at the paper's budget "
            "(20 stages of 200-300 adjoint and 20 corrector epochs of 1000 samples); issue 60",
}

PROTOCOL = Protocol(
    suite="particles",
    summary="Adjoint Sampling and ASBS on DW-4 and LJ-13 at the CPU configs (about 5 % of the papers' budgets), "
            "geometric and energy W2 against the test split with their noise floors",
    cells=CELLS,
    seeds=(0, 1, 2, 3, 4),
    headline="w2",
    figures=("w2_floor", "energy_w2", "energy_w2_floor", "energy_median", "ess", "log_Z_hat", "nonfinite_samples",
             "target_evals", "train_steps", "train_seconds", "train_seconds_incl_compile"),
    evaluation={"num_samples": 2000},
    quick_evaluation={"num_samples": 64},
    goals=(
        Goal("adjoint/dw4", "w2", 0.62, source=PAPERS["adjoint"]),
        Goal("asbs/dw4", "w2", 0.43, source=PAPERS["asbs"]),
        Goal("asbs/dw4", "w2", 0.80, source="issue 44: ASBS on DW-4 at the CPU config's 1000 epochs"),
        Goal("asbs-official_adam/dw4", "w2", 0.80, source="issue 44: ASBS on DW-4 at the CPU config's 1000 epochs"),
    ),
    comparisons=(
        Comparison("asbs/dw4", "adjoint/dw4", "w2"),
        Comparison("adjoint/dw4", "adjoint-reference_rules/dw4", "w2"),
        Comparison("asbs-official_adam/dw4", "asbs/dw4", "w2"),
        Comparison("asbs/lj13", "adjoint/lj13", "w2"),
    ),
    notes="""\
Adjoint Sampling (``jaxsamp.learned.diffusion.adjoint``; Havens et al. 2025) and ASBS (``asbs``; Liu et al. 2025)
on DW-4 and LJ-13, trained through ``jaxsamp.fit`` at the CPU configs (settings read from
``configs/{adjoint,asbs}_{dw4,lj13}_cpu.yaml`` into each cell): the papers' methods and schedules (Adjoint
Sampling: exact-variance steps, a buffer of the last 20 rollouts, EMA 0.999 of the parameters for sampling; ASBS:
harmonic prior, stages of 90 adjoint-matching and 10 corrector epochs, buffers of the last 20 rollouts) with what a
2-core CPU affords: an EGNN of 3 x 32 instead of 5 x 128, 100 time points instead of 200 (DW-4) or 1000 (LJ-13),
128-path rollouts and batches of 128 (DW-4) / 64 (LJ-13) instead of 512, lr 1e-3 instead of 1e-4.

Budget: the config's 1000 epochs, counted (no clock, so a shared machine changes the minutes, not the figures).
On DW-4 that is 1.28e5 energy gradients for Adjoint Sampling, 5 % of its paper's 2.56e6 (5000 epochs of 512
paths), and 1.15e5 for ASBS (its corrector epochs call no energy): 1000 epochs of 128 paths, 5.7 % of the
official code's 4400 epochs of 512 and less of the paper's 20 stages of 1000-sample epochs. The papers' figures (the goals 0.62 and 0.43) are GPU runs at their full
budget; at this fraction the CPU cells are not expected to meet them, and the goal of issue 44 (ASBS W2 <= 0.80 at
these 1000 epochs) is the one this budget can decide. ``-until_cap`` cells (LJ-13) lift the epoch count and train
for 90 training minutes (compilation outside the clock, checked every 10 epochs), the issue's whole LJ-13 budget.

Variants: ``adjoint-reference_rules`` is Adjoint Sampling with the reference code's rules instead of the fixes
(left-point Euler-Maruyama, a 10 000-sample buffer of 78 rollouts, no parameter average): what the fixes buy.
``asbs-official_adam`` is the DW-4 CPU config with the official code's Adam (lr 1e-4, eps 1e-10) and a
corrector buffer emptied when each stage's corrector epochs begin (10 rollouts): same epochs, rollouts, network.

Evaluation (the iDEM / Adjoint Sampling protocol, ``jaxsamp.diagnostics.particles`` through the method's own
``evaluate``): 2000 samples of the averaged network against 2000 random samples of the test split: geometric W2
(``w2``, the headline) and energy W2, each beside its noise floor (the same W2 between test and validation
splits at the same size: a figure cannot meaningfully go below it), the energy median, the path-weight ESS and
log Z, non-finite draws. Paired comparisons and goals are per machine: at 1000 epochs one seed's W2 moves by up
to 0.27 between hosts with the same code and keys (XLA's CPU round-off), and ASBS on DW-4 gave 0.938 +- 0.006 on
one host and 0.804 +- 0.116 on another, so three seeds could not decide a goal within one seed sd. The decision
run is therefore DW-4, both methods, on ONE machine at the protocol's seeds 0-4 (more if the goal table says that
more would decide). LJ-13 cells are single draws at seed 0 (the issue's count; run them with ``--seeds 0``).

What the suite changes against ``scripts/bench_adjoint.py`` (whose results, converted, are the legacy seeds):
training is the same (``fit`` at ``key = seed``, each epoch's index folded into one training key), but the
evaluation draws at ``fold_in(key(seed), 2)`` where the script drew at ``key(seed + 1)``, so a re-run seed's
figures differ from the script's by the evaluation's sampling noise; config-epoch cells have no wall-clock cap
(the script capped DW-4 at 30 and LJ-13 at 90 minutes, DW-4 runs of 2026-12-06 at 240; every recorded run
finished its 1000 epochs under its cap); ``train_seconds`` leaves compilation out (the script's minutes,
converted to ``train_seconds_incl_compile``, included it); learning curves and the paper-config epoch timing are
not cells (the converted LJ-13 ``-until_cap`` seeds keep their curve in the record's ``curves``).

Legacy seeds: ``bench_adjoint.json`` kept one machine record for runs on several hosts. Each write of that file
recorded the machine of the command that wrote it, so its git history tells the host of most commands
(``legacy_machine``): the kernel build in the platform string, the only trace of the host the old records kept,
keeps them apart (``adjoint-reference_rules/dw4``: fc-v857, jax 0.10.2, 2026-12-02; ``adjoint/dw4`` and every
LJ-13 seed: fc-v1045, jax 0.10.1, 2026-12-03; ``asbs/dw4`` and ``asbs-official_adam/dw4``: fc-v1300, jax 0.10.1,
2026-12-06, an AMD EPYC with AVX-512). The 2026-12-03 host's ASBS DW-4 seeds (0.938 +- 0.006) were overwritten in
that file on 2026-12-06 and are only in its history (commit 4660588) and BENCHMARKS.md.
""",
)


LEGACY_FILE = "bench_adjoint.json"
#: the old file's method prefixes, longest first (``as_reference`` before ``as``)
_LEGACY_METHODS = {"as_reference": "adjoint-reference_rules", "asbs_official": "asbs-official_adam",
                   "asbs": "asbs", "as": "adjoint"}


def legacy_key(name: str):
    """``(cell, figure, budget scale)`` of a per-seed key of ``bench_adjoint.json`` (its ``_seed<k>`` cut off):
    ``{method}_{system}[_until_cap]_{figure}``."""
    for prefix, variant in _LEGACY_METHODS.items():
        for system in ("dw4", "lj13"):
            head = f"{prefix}_{system}_"
            if name.startswith(head):
                rest = name[len(head):]
                if rest.startswith("until_cap_"):
                    return f"{variant}-until_cap/{system}", rest[len("until_cap_"):], 1
                return f"{variant}/{system}", rest, 1
    return None


_SCRIPT = "python scripts/bench_adjoint.py"
_V857 = {"platform": "Linux-6.18.44-fc-v857-x86_64-with-glibc2.36", "jax": "0.10.2"}
_V1045 = {"platform": "Linux-6.18.44-fc-v1045-x86_64-with-glibc2.36", "jax": "0.10.1"}
_V1300 = {"platform": "Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36", "jax": "0.10.1"}
#: command -> (machine, how it is known): the machine record of bench_adjoint.json at the commit that recorded the
#: command's figures (``written by``), or of the two commits that bracket the run when another command wrote the file
LEGACY_HOSTS = {
    "--methods as_reference --systems dw4 --seeds 0 --no-speed": (_V857, "2026-12-02, written by it at bc20481"),
    "--methods as_reference --systems dw4 --seeds 1 --no-speed": (
        _V857, "2026-12-02, between bc20481 and 9c0a2f1, whose records (its seeds 0 and 2) both name this host"),
    "--methods as_reference --systems dw4 --seeds 2 --no-speed": (_V857, "2026-12-02, written by it at 9c0a2f1"),
    "--methods as --systems dw4 --seeds 0 --no-speed": (
        _V1045, "2026-12-03 at 578bb19, between b67967d and b979a89, whose records both name this host"),
    "--methods as --systems dw4 --seeds 1 2 --no-speed": (_V1045, "2026-12-03 at 6ad4a0d, written by it at 195d6cc"),
    "--methods asbs --systems lj13 --seeds 0 --no-speed": (
        _V1045, "2026-12-03 at 6ad4a0d, between 195d6cc and a673adc, whose records both name this host"),
    "--methods as --systems lj13 --seeds 0 --no-speed": (_V1045, "2026-12-03 at 6ad4a0d, written by it at a673adc"),
    "--methods as_reference --systems lj13 --seeds 0 --no-speed --keep /work/keep": (
        _V1045, "2026-12-03 at 4abd097, written by it at 6fecfb1 (figures re-scored from the run's saved state)"),
    "--methods as --systems lj13 --seeds 0 --no-speed --until-cap --curve-every 100 --keep /work/keep": (
        _V1045, "2026-12-03 at 7f57e9b, written by it at 524fd14"),
    "--methods asbs --systems lj13 --seeds 0 --no-speed --until-cap --curve-every 100 --keep /work/keep": (
        _V1045, "2026-12-03, written by it at 3d3c9db"),
    "--methods asbs asbs_official --systems dw4 --no-speed --cap-minutes 240": (
        _V1300, ("2026-12-06 at 4660588, written by it at ce3ffbe (the file's own record); an AMD EPYC with "
                 "AVX-512 (BENCHMARKS.md)")),
}


def legacy_machine(command: str) -> dict | None:
    """The machine record of the host that ran ``command`` of ``bench_adjoint.json`` (:data:`LEGACY_HOSTS`), or
    None where the file's history does not tell."""
    arguments = command.removeprefix(_SCRIPT).strip()
    if arguments not in LEGACY_HOSTS:
        return None
    machine, known = LEGACY_HOSTS[arguments]
    return {**machine, "processor": "x86_64", "cpu_count": 2, "python": "3.11.7", "devices": ["cpu:0"],
            "legacy": f"bench_adjoint.json's machine record for this command: {known}"}

