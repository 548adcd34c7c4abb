"""One-call training of a learned sampler: ``jaxsamp.fit(method, target, num_steps=...)`` returns a :class:`Fitted`.

The one runner of learned samplers, for users, experiment kinds and benchmarks alike. The method is
built by its family's ``build(target, settings, *, batch_size, optimizer)`` from the registry of
learned methods (``jaxsamp list``), which returns a :class:`~jaxsamp.core.LearnedSampler`
(``init(key)``, ``step(key, state)``, ``sample(key, state, n)``, ``evaluate(key, state, n,
**options)``: key first everywhere); it is trained by the one driver (:func:`jaxsamp.run`, so
progress, checkpoints and resume are the driver's) and judged by the health rules
(:func:`jaxsamp.diagnostics.health.training_warnings`) as the method declares they apply
(its :class:`~jaxsamp.core.TrainingHealth`: whether its loss must fall, the stages judged
apart, its own checks). :class:`Fitted` holds the trained state and calls ``sample`` and
``evaluate`` with it, so the user never chooses between a method's raw and averaged parameters.

>>> import jax.numpy as jnp, jaxsamp
>>> fitted = jaxsamp.fit("pis", lambda x: -0.5 * jnp.sum(x**2), init=jnp.zeros(2), num_steps=50,
...                      batch_size=64, settings=jaxsamp.learned.diffusion.pis_dds.PisSettings(num_time_steps=20),
...                      progress=False)  # doctest: +SKIP
>>> fitted.sample(1, 1000).log_Z  # doctest: +SKIP

A method's settings dataclass may have a field of the same name as one of
``fit``'s own arguments (TPS-DPS's ``batch_size`` is the buffer paths per Adam step):
set such a field through ``settings=``; a keyword argument is always ``fit``'s.
``num_steps`` is always the training updates (the SDE's steps are ``num_time_steps``).
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import jax
import numpy as np
import optax

from jaxsamp.core.data_parallel import BATCH, data_parallel
from jaxsamp.core.driver import run
from jaxsamp.core.errors import InputError, RunHealthError, RunHealthWarning
from jaxsamp.core.protocols import LearnedSampler, SMCProposal, TrainingHealth, WeightedSamples
from jaxsamp.core.registry import LEARNED, validate_dataclass
from jaxsamp.core.target import Target
from jaxsamp.core.validation import as_key, check_int
from jaxsamp.diagnostics import health
from jaxsamp.learned.resampled import SMC_OPTIONS, smc_figures, smc_kernel, smc_options
from jaxsamp.learned.training_budget import TrainingBudget, compile_timer
from jaxsamp.smc.annealing import AnnealResult, run_smc


class Fitted:
    """What :func:`fit` returns: a trained learned sampler.

    Attributes
    ----------
    method : str
        The registered name (``"LearnedSampler"`` for a sampler passed as an object).
    sampler : LearnedSampler
        The method's ``(init, step, sample, evaluate)``.
    settings : dataclass or None
        The method's settings as checked (None for a sampler passed as an object).
    state : PyTree
        The train state after training (checkpointable, shardable).
    history : dict of numpy arrays
        The per-step metrics of training, each of shape ``(num_steps, ...)``; the
        keys are the method's (the metric glossary, ``docs/metrics.md``, lists each).
    seconds : float
        Wall-clock seconds of training, compilation included (a fit resumed from its checkpoint
        folder counts its earlier sessions' too: :data:`~jaxsamp.learned.training_budget.BUDGET_RECORD`).
    compile_seconds : float
        The part of ``seconds`` that JAX spent tracing, lowering and compiling (or
        loading compiled programs from its cache); ``seconds - compile_seconds`` is
        the training itself.
    warnings : list of str
        Health warnings of the training run (empty for a healthy one).
    target_name : str
        The target's name (``"data"`` for a method trained on data).
    curve : dict of numpy arrays
        The learning curve (``fit(..., evaluate_every=k)``): ``step``, ``train_seconds``
        (training so far, compilation included) and the evaluation's figures, one
        entry per evaluation; empty without ``evaluate_every``.
    """

    def __init__(self, method: str, sampler: LearnedSampler, settings, state, history: dict, seconds: float,
                 compile_seconds: float, warnings_: list[str], target_name: str = "data"):
        self.target_name = target_name
        self.curve: dict = {}
        self.method, self.sampler, self.settings, self.state = method, sampler, settings, state
        self.history, self.seconds, self.compile_seconds, self.warnings = history, seconds, compile_seconds, warnings_
        # compiled once per number of samples, so that a second call with the same n only samples; a method
        # whose sample runs chains through the driver (host loop, progress bar) declares it and runs as is
        self._sample = jax.jit(sampler.sample, static_argnums=2) if sampler.jit_sample else sampler.sample
        self._smc_built: tuple = ()  # (state, its smc_proposal, {options: kernel}): see _smc_kernel

    def sample(self, key, num_samples: int) -> WeightedSamples:
        """``num_samples`` weighted draws: ``WeightedSamples`` with ``.x``, ``.log_w``, ``.ess``, ``.log_Z``.

        ``.x`` is a PyTree with a leading axis of ``num_samples``: states for most
        methods (``(n, *event_shape)``), whole paths for a path sampler (TPS-DPS:
        a ``TransitionPaths``, whose ``.log_Z`` is the path measure's, not the
        target's); the method's ``sample`` docstring says which. Compiled once per
        ``num_samples``: a second call with the same number only samples (a method
        with ``jit_sample=False``, Bernoulli denoising, runs its chains through the
        driver, whose compiled chunks are reused).
        """
        num_samples = check_int("num_samples", num_samples, ge=1)
        return self._sample(as_key("key", key), self.state, num_samples)

    def evaluate(self, key, num_samples: int, *, smc=None, **options) -> dict:
        """The method's figures against the target's exact answers / references (floats).

        ``options`` go to the method's own ``evaluate`` (an option it does not take is an
        :class:`~jaxsamp.core.errors.InputError`): for the diffusion samplers (PIS, DDS,
        Adjoint Sampling, ASBS) ``sinkhorn=False`` skips the Sinkhorn divergence, the costliest
        figure (ε = 1e-3 on ``num_samples`` points; about half a minute at 2000 on 2 CPU cores;
        left out by default for particle systems, to which it is not invariant), and
        ``reference=`` scores against samples of your own; Adjoint Sampling and ASBS add the
        particle protocol's ``w2``, ``energy_w2`` and their noise floors
        (:mod:`jaxsamp.diagnostics.particles`), and take ``raw_network=True``.

        ``smc=True``, or a dict of :meth:`smc`'s options (``resample_threshold``, ``resampler``,
        ``moves``, ``num_moves``, ``segment_length``), scores a resampled SMC run of ``num_samples``
        particles along the method's path instead of the method's own sampling (a method with a
        path: LEAPS, the curves, SCLD, CMCD): the weight figures of its final particles, whose
        ``log_Z_hat`` is the SMC estimate, with ``log_Z_abs_err`` and the other errors where the
        target's ``log_Z`` is known, beside ``segment_ess_min``, ``num_resamplings`` and
        ``sample_target_evals`` (:func:`~jaxsamp.learned.resampled.smc_figures`). It takes no
        other options.

        >>> fitted.evaluate(0, 2000, smc={"moves": "checkerboard"})  # doctest: +SKIP
        """
        num_samples = check_int("num_samples", num_samples, ge=2)
        chosen = smc_options(smc)
        if chosen is not None:
            if options:
                raise InputError(f"evaluate(smc=...) takes no method options, got {', '.join(sorted(options))}",
                                 f"give the SMC run's options in the smc dict: {', '.join(SMC_OPTIONS)}")
            result = self.smc(key, num_samples, **chosen)
            return smc_figures(result, log_Z_exact=getattr(self.sampler.density, "log_Z", None),
                               segment_length=chosen.get("segment_length", 1))
        try:
            out = self.sampler.evaluate(as_key("key", key), self.state, num_samples, **options)
        except InputError as err:
            raise InputError(f"{self.method}: {err.message}", err.hint) from None
        return {k: float(v) for k, v in out.items()}

    def smc_proposal(self) -> SMCProposal:
        """The trained sampler's learned moves along its path: ``SMCProposal(path, transition, schedule)``.

        What :meth:`smc` runs; its ``path`` is where kernels for ``moves=`` are built
        (``path.log_prob(x, t)``, ``path.flip_log_ratios(x, t)`` on lattices).

        Raises
        ------
        InputError
            The method has no path to run SMC along; the message names the methods that have one.
        """
        if self.sampler.smc_proposal is None:
            import jaxsamp.learned.methods  # noqa: F401  (registers the methods)

            having = [name for name in LEARNED.names() if LEARNED.entry(name).meta.get("smc_proposal")]
            raise InputError(f"{self.method} has no learned path to run SMC along",
                             f"Fitted.smc runs the methods with one: {', '.join(having)}")
        return self.sampler.smc_proposal(self.state)

    def smc(self, key, num_particles: int, *, resample_threshold: float = 0.5, resampler: str = "systematic",
            moves=None, num_moves: int = 1, segment_length: int = 1) -> AnnealResult:
        """SMC with the trained sampler's own moves: resampled, corrected, unbiased estimates in one call.

        A sequential Monte Carlo sampler (Del Moral, Doucet & Jasra 2006, JRSS B 68, Sec. 3)
        along the method's path whose proposal from level ``t`` to ``t'`` is the trained
        sampler's step (:meth:`smc_proposal`), reweighted by its exact incremental weight
        ``pi_{t'}(x') B(x | x') / (pi_t(x) F(x' | x))``: LEAPS' Euler jumps (Holderrieth,
        Albergo & Jaakkola 2025, Algorithm 1 with resampling and MCMC), a Boltzmann curve's
        ODE flow with its change of variables (Máté & Fleuret 2023; annealed flow transport),
        SCLD's controlled Langevin steps (Chen et al., ICLR 2025). Resampling focuses the
        particles where a few bad paths would dominate the weights, the moves repair them;
        ``Z``-hat is unbiased in ``Z`` whatever training reached (for the curves, up to the
        ODE's integration error). :func:`jaxsamp.smc.run_smc` runs it (the driver's jitted scan),
        as :func:`jaxsamp.smc.anneal` would, bit for bit. Compiled once per number of particles
        and options: a second call with the same ones only samples (a ``moves`` function is one
        option: pass the same function object to reuse its compilation).

        Parameters
        ----------
        key : PRNG key or int
        num_particles : int
            At least 2.
        resample_threshold : float in [0, 1]
            Resample when the normalised ESS falls below it (0: never, importance sampling
            over whole paths; 1: at every level).
        resampler : str
            A blackjax resampler: ``systematic``, ``stratified``, ``multinomial``, ``residual``.
        moves : callable, str or None
            An MCMC kernel invariant for each intermediate target, run after every
            resampling check: ``make_kernel(t) -> Kernel`` as :func:`jaxsamp.smc.smc` takes it
            (built on ``self.smc_proposal().path``), or a registered sampler's name
            (``jaxsamp list``: ``"checkerboard"`` or ``"glauber"`` on lattices, ``"mala"`` on R^d),
            built with its default parameters on ``path.at(t)`` (:func:`jaxsamp.smc.path_member`).
            None (default): no moves.
        num_moves : int
            Kernel steps per level when ``moves`` is given.
        segment_length : int
            Resample and move only every this many levels (and at the last), the weights
            accumulating in between (SCLD's sub-trajectories).

        Returns
        -------
        AnnealResult
            ``samples`` (the final particles, their weights since the last resampling and
            ``.log_Z``, the SMC estimate of ``log Z``), ``num_target_evals`` (the run's, moves
            included), ``num_levels`` and ``trace`` (per level: ``ess``, ``resampled``,
            ``log_Z_increment``, ``acceptance_rate``, ``num_target_evals``).

        Raises
        ------
        InputError
            A method without a path (:meth:`smc_proposal`), or a bad argument.
        """
        num_particles = check_int("num_particles", num_particles, ge=2)
        num_moves = check_int("num_moves", num_moves, ge=1)
        if not (moves is None or isinstance(moves, str) or callable(moves)):
            raise InputError(f"moves must be None, a sampler's name or make_kernel(t) -> Kernel, got "
                             f"{type(moves).__name__}", "for example moves='checkerboard' on a lattice")
        proposal, kernel = self._smc_kernel(resample_threshold, resampler, moves, num_moves, segment_length)
        return run_smc(as_key("key", key), kernel, proposal.path, num_particles, len(proposal.schedule) - 1)

    def _smc_kernel(self, resample_threshold, resampler, moves, num_moves: int, segment_length: int):
        """``(proposal, kernel)``: the trained sampler's :meth:`smc_proposal` and :func:`jaxsamp.smc.smc`'s kernel
        along it, built once per train state and options, so that :meth:`smc` compiles once per number of particles.

        The train state's values are constants of the kernel (they are closed over), so a new
        ``state`` (assigned to this Fitted) builds them anew.
        """
        if not self._smc_built or self._smc_built[0] is not self.state:
            self._smc_built = (self.state, self.smc_proposal(), {})
        _, proposal, kernels = self._smc_built
        options = (resample_threshold, resampler, moves, num_moves, segment_length)  # in SMC_OPTIONS' order
        if options not in kernels:
            kernels[options] = smc_kernel(proposal, **dict(zip(SMC_OPTIONS, options)))
        return proposal, kernels[options]

    def summary(self) -> str:
        """A few lines: method, training length and time, loss, ESS and log Z at the start and end of training, warnings.

        The start is the first step's value; the end is the median over the last tenth of
        the steps (:func:`~jaxsamp.diagnostics.health.final_level`), since one step's value
        is one batch's and noisy. An evaluation of the trained sampler (``evaluate``, or
        ``sample(key, n).ess``) on more draws is the figure to report.
        """
        steps = len(next(iter(self.history.values()))) if self.history else 0
        lines = [f"{self.method} on {self.target_name}: {steps} training steps in {self.seconds:.1f} s "
                 f"({self.compile_seconds:.1f} s of it compiling)"]
        for name in ("loss", "ess", "log_Z_hat"):
            if name in self.history and steps:
                values = np.asarray(self.history[name], float).reshape(steps, -1).mean(axis=1)
                lines.append(f"  {name}: {values[0]:.4g} (first step) -> {health.final_level(values):.4g} "
                             f"(median of the last {max(1, steps // 10)} steps)")
        lines += [f"  warning: {w}" for w in self.warnings] or ["  no health warnings"]
        return "\n".join(lines)

    def print_summary(self) -> None:
        print(self.summary())

    def __repr__(self) -> str:
        return f"Fitted({self.method!r}, {len(self.warnings)} warnings)"


def _as_target(target, init, model_args: tuple, model_kwargs: dict | None) -> Target:
    """A Target, a numpyro model or a plain log-density function (with ``init``) as :func:`jaxsamp.sample` takes them."""
    from jaxsamp.mcmc.sample import as_model_target

    return as_model_target(target, init, model_args, model_kwargs)


def _method_target(name: str, meta: dict, target, init, model_args: tuple, model_kwargs: dict | None):
    """The target in the form the method takes: a density (the default), or what its registration's ``as_target``
    accepts (an environment, data), which then checks it with an InputError saying what is needed."""
    convert = meta.get("as_target")
    if convert is None:
        return _as_target(target, init, model_args, model_kwargs)
    if init is not None or model_args or model_kwargs:
        raise InputError(f"method {name!r} takes no init=, model_args= or model_kwargs= (they are for log densities)")
    try:
        return convert(target)
    except InputError as err:
        raise InputError(f"method {name!r}: {err.message}", err.hint) from None


#: Starting points at which :func:`fit` checks the log density (and its gradient) before training, as
#: :func:`jaxsamp.sample` checks its chains' (a few: training is refused only when it is NaN/inf at all of them).
START_CHECK_POINTS = 4


def _check_start(name: str, checked, init, key) -> None:
    """Refuse, before any training, a target whose log density is NaN/inf at every starting point.

    The Target checked is the one whose log density the method's training follows, the
    sampler's :attr:`~jaxsamp.core.LearnedSampler.density` (the target, or the end of
    LEAPS' path; None for a method that learns from samples only). Its starting points are
    :func:`~jaxsamp.mcmc.starting_points`' (``init`` when given, else the target's
    rule: ``N(0, I)``, numpyro's uniform initialisation, or uniform configurations of a
    discrete domain); on real-valued states the gradient is checked too
    (:func:`~jaxsamp.mcmc.check_starting_points`), on discrete ones only the
    energy at those valid configurations.
    """
    from jaxsamp.mcmc.sample import check_starting_points
    from jaxsamp.mcmc.warmup import starting_points

    if not isinstance(checked, Target):
        return
    per_point = init is not None and not isinstance(init, str) and not callable(init) and (
        np.ndim(init) == len(checked.event_shape) + 1)
    try:
        positions = starting_points(checked, key, len(init) if per_point else START_CHECK_POINTS, init)
    except InputError as err:
        raise InputError(f"method {name!r}, init= for {checked.name}: {err}", err.hint) from None
    try:
        check_starting_points(checked, positions, gradient=not checked.domain.is_discrete,
                              what="starting points checked before training are",
                              hint="check the log density (and its data) at states inside its support, or give init=")
    except InputError as err:
        raise InputError(f"method {name!r}: {err}", err.hint) from None


def _settings(name: str, settings, overrides: dict):
    """The method's settings dataclass: ``settings`` (or the defaults) with ``overrides`` checked and applied."""
    cls = LEARNED.entry(name).meta["settings"]
    if settings is not None and not isinstance(settings, cls):
        raise InputError(f"settings for {name!r} must be a {cls.__name__}, got {type(settings).__name__}")
    base = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)} if settings is not None else {}
    return validate_dataclass(f"method {name!r}", {**base, **overrides}, cls)


def _identity(name: str, settings, batch_size) -> dict:
    """The method and settings behind a fit's numbers: the driver's ``identity`` (a refusal names what differs)."""
    return {"method": name, "settings": dataclasses.asdict(settings) if dataclasses.is_dataclass(settings) else
            repr(settings), "batch_size": batch_size}


def _batch_axis(mesh) -> str:
    """The mesh axis the batch is split over: ``"batch"``, or the only axis of a 1-D mesh."""
    if not isinstance(mesh, jax.sharding.Mesh):
        raise InputError(f"mesh must be a jax.sharding.Mesh, got {type(mesh).__name__}",
                         "jaxsamp.batch_mesh() builds one over every device")
    if BATCH in mesh.shape:
        return BATCH
    if len(mesh.shape) == 1:
        return next(iter(mesh.shape))
    raise InputError(f"mesh has axes {tuple(mesh.shape)}: name the one to split the batch over {BATCH!r}")


def training_warnings(history: dict, health_rules: TrainingHealth, batch_size: int | None = None) -> list[str]:
    """The health warnings of a training history, the rules applied as the method declares (:class:`TrainingHealth`).

    The loss is judged per stage (``health_rules.stages``; default one stage of every
    step) by :func:`jaxsamp.diagnostics.health.training_warnings`, then the method's own
    ``checks`` are added. A method whose steps report the importance-sampling ``ess`` of
    their ``batch_size`` samples (PIS, DDS, the variational family) is also held to the
    ESS floor that the experiment kinds apply to their evaluation, on the training ESS at
    the end of training (:func:`~jaxsamp.diagnostics.health.final_level`: the median of
    the last tenth of the steps).
    """
    found = []
    if "loss" in history:
        stages = health_rules.stages(history) if health_rules.stages is not None else {None: None}
        for label, steps in stages.items():
            found += health.training_warnings(history["loss"], judge_progress=health_rules.judge_progress,
                                              steps=steps, label=label)
    if "ess" in history and batch_size is not None:
        found += health.training_warnings((), ess=health.final_level(history["ess"]), num_samples=batch_size,
                                          label="training batches (median ESS of the last tenth of the steps)")
    if health_rules.checks is not None:
        found += health_rules.checks(history)
    return found


def fit(
    method,
    target=None,
    *,
    num_steps: int,
    key=0,
    settings=None,
    batch_size: int | None = None,
    optimizer: optax.GradientTransformation | None = None,
    init=None,
    model_args: tuple = (),
    model_kwargs: dict | None = None,
    checkpoint: str | Path | None = None,
    checkpoint_every: int | None = None,
    progress: bool = True,
    chunk: int | None = None,
    strict: bool = False,
    mesh: jax.sharding.Mesh | None = None,
    max_seconds: float | None = None,
    max_target_evals: int | None = None,
    evaluate_every: int | None = None,
    evaluate_samples: int = 1000,
    evaluate_options: dict | None = None,
    **setting_values,
) -> Fitted:
    """Train learned sampler ``method`` on ``target`` for ``num_steps`` steps.

    Parameters
    ----------
    method : str or LearnedSampler
        A registered learned method (``jaxsamp list`` names them: ``"pis"``,
        ``"dds"``, ``"adjoint"``, ``"asbs"``, ...), or a
        :class:`~jaxsamp.core.LearnedSampler` built already (then ``target``,
        ``settings``, ``batch_size``, ``optimizer`` and keyword settings must not be
        given: they went to its ``build``).
    target : Target, numpyro model, or callable
        A plain callable is a log density of one flat state: give ``init`` (one
        state) for its shape, as in :func:`jaxsamp.sample`. A method that does not
        take a log density says what it takes: ``gflownet`` a DAG environment
        (``jaxsamp.targets.get("hypergrid", ...)``), ``bernoulli_denoising`` a +-1 target with
        exact samples, a data set or an array of +-1 samples.
    num_steps : int
        Training steps (the method's unit: an update, or an epoch for the
        adjoint-matching methods; the method's docstring says which).
    key : PRNG key or int
        Split into the initialisation key and the driver's key.
    settings : dataclass, optional
        The method's settings (e.g. :class:`~jaxsamp.learned.diffusion.pis_dds.PisSettings`);
        keyword ``setting_values`` override its fields, each checked by name, type and range.
    batch_size : int, optional
        Paths / walkers / trajectories / draws per step (default: the method's).
    optimizer : optax.GradientTransformation, optional
        The optimiser of the method's network, instead of the one its settings make
        (their learning rate and clipping then do not apply to it); the method still
        guards it (a non-finite update is skipped where the method does so).
    init, model_args, model_kwargs
        As in :func:`jaxsamp.sample`. Before any training the log density (and, on
        real-valued states, its gradient) is evaluated at :data:`START_CHECK_POINTS`
        starting points (``init`` when given, jittered if it is one state; else the
        target's own rule), and training is refused with an InputError when it is
        NaN/inf at all of them; an ``init`` whose shape is not the target's is refused too.
        The Target checked is the sampler's :attr:`~jaxsamp.core.LearnedSampler.density`,
        so a sampler passed built is checked as one built by name (``init`` is refused
        for one that declares no density).
    checkpoint, checkpoint_every, progress
        Passed to :func:`jaxsamp.run`: a killed ``fit`` resumes bit for bit.
    chunk : int, optional
        Updates per compiled chunk of the driver (default: the driver's, or about a
        fiftieth of ``num_steps`` under a budget, ``evaluate_every``'s divisor with a
        learning curve, which ``chunk`` must then divide). A budget is checked, and
        the progress bar moves, once per chunk.
    strict : bool
        Raise :class:`~jaxsamp.core.errors.RunHealthError` instead of warning when
        training is unhealthy (a NaN/inf loss; a loss that exploded, from the first step
        on; no improvement; the training batches' ESS at its 1/``batch_size`` floor, or
        NaN, at the end of training, for the methods that report one; or the method's own
        check: AISIVI's collapsed reverse model): the rules of the experiment kinds
        (:func:`training_warnings`).
    mesh : jax.sharding.Mesh, optional
        Train data-parallel over this mesh (:func:`~jaxsamp.core.data_parallel.data_parallel`):
        each step's batch is split over its ``"batch"`` axis (or its only axis, e.g. a
        :func:`~jaxsamp.core.chain_mesh`), parameters are replicated, and the numbers equal
        the one-device run's up to the order of float reductions. ``batch_size`` must be a
        multiple of the axis' size. ``jaxsamp.batch_mesh()`` spans every device.
    max_seconds : float, optional
        A budget in seconds of training, compilation left out: training stops at the
        end of the first chunk of updates (about a fiftieth of ``num_steps``) past it; 0 runs one chunk.
        ``num_steps`` stays the most updates made.
    max_target_evals : int, optional
        A budget in target evaluations (energy and gradient calls): training stops at
        the end of the first chunk at which the method's ``target_evals`` metric reaches
        it. An InputError, before training, for a method that does not count them.
    evaluate_every : int, optional
        The learning curve: every this many updates (and after the last one) the
        sampler is evaluated (``evaluate`` on ``evaluate_samples`` draws, with
        ``evaluate_options``, at ``fold_in(key, step)`` of a key of its own), into
        ``Fitted.curve``. Its time is kept out of ``seconds``.
    evaluate_samples : int
        Draws per learning-curve evaluation.
    evaluate_options : dict, optional
        Options of the method's ``evaluate`` for the learning curve.

    Returns
    -------
    Fitted
        ``Fitted.summary()`` reads the end of training as the median of the last
        tenth of the steps (one step's value is one batch's). A budget that stopped training early leaves ``len(history["loss"]) <
        num_steps``; with ``checkpoint``, the same call resumes from there. With a
        budget or a learning curve, the checkpoint folder also records the training
        seconds spent and the curve so far at each checkpointed step
        (:data:`~jaxsamp.learned.training_budget.BUDGET_RECORD`), so a resumed fit spends only what is left of its
        budget (a budget spent before the checkpoint trains no more), goes on with the
        curve, and reports the seconds of all its sessions.
    """
    num_steps = check_int("num_steps", num_steps, ge=1)
    key = as_key("key", key)
    if isinstance(method, str):
        import jaxsamp.learned.methods  # noqa: F401  (registers the methods)

        entry = LEARNED.entry(method)
        if target is None:
            raise InputError(f"fit({method!r}, ...) needs a target", "fit(method, target, num_steps=...)")
        target = _method_target(method, entry.meta, target, init, model_args, model_kwargs)
        checked = _settings(method, settings, setting_values)
        batch = check_int("batch_size", batch_size if batch_size is not None else entry.meta["batch_size"], ge=1)
        if optimizer is not None and not isinstance(optimizer, optax.GradientTransformation):
            raise InputError(f"optimizer must be an optax.GradientTransformation, got {type(optimizer).__name__}",
                             "for example optax.adam(1e-3)")
        try:
            sampler = entry.factory(target, checked, batch_size=batch, optimizer=optimizer)
        except InputError as err:
            raise InputError(f"method {method!r}: {err.message}", err.hint) from None
        name, identity, target_name = method, _identity(method, checked, batch), getattr(target, "name", "data")
    elif isinstance(method, LearnedSampler):
        given = [n for n, v in (("target", target), ("settings", settings), ("batch_size", batch_size),
                                ("optimizer", optimizer)) if v is not None] + sorted(setting_values)
        if given:
            raise InputError(f"fit(sampler, ...) takes no {', '.join(given)}: they go to the method's build()")
        sampler, name, identity, checked, batch, target_name = method, "LearnedSampler", None, None, None, "its target"
        if init is not None and not isinstance(sampler.density, Target):
            raise InputError("fit(sampler, init=...) checks init against the sampler's density, and this sampler "
                             "declares none (LearnedSampler.density)")
    else:
        raise InputError(
            f"method must be a registered name or a LearnedSampler, got {type(method).__name__}",
            f"registered methods: {', '.join(LEARNED.names())}",
        )
    _check_start(name, sampler.density, init, key)
    if mesh is not None:
        axis = _batch_axis(mesh)
        if batch is not None and batch % mesh.shape[axis]:
            raise InputError(f"batch_size={batch} is not divisible by the {mesh.shape[axis]} devices of the mesh's "
                             f"{axis!r} axis", "give a batch_size that is a multiple of the device count")
        sampler = data_parallel(sampler, mesh, axis)
    trainer = sampler.trainer
    k_init, k_train = jax.random.split(key)
    state = jax.jit(trainer.init)(k_init)
    budget = TrainingBudget(sampler, trainer, state, k_train, num_steps, max_seconds, max_target_evals, evaluate_every,
                     evaluate_samples, evaluate_options, checkpoint, checkpoint_every,
                     check_int("chunk", chunk, ge=1, optional=True))
    with compile_timer() as compiling:
        budget.start(compiling)
        state, history = run(
            trainer.step, state, k_train, budget.steps_to_run(), trace=lambda s, metrics: metrics,
            progress=progress, checkpoint=checkpoint, checkpoint_every=checkpoint_every, identity=identity,
            desc=f"fit {name}", chunk=budget.chunk,
            after_chunk=budget.hook,
        )
        jax.block_until_ready(state)
        if budget.resumed is None:  # no chunk ran: the checkpoint held the whole training
            budget.resume(len(next(iter(history.values()), ())))
        seconds, compile_seconds = budget.training_seconds()
    history = {k: np.asarray(v) for k, v in history.items()}
    found = training_warnings(history, sampler.health, batch)
    for w in found:
        if strict:
            raise RunHealthError(w, "lower the learning rate or train longer; fitted.history holds the metrics")
        warnings.warn(w, RunHealthWarning, stacklevel=2)
    fitted = Fitted(name, sampler, checked, state, history, seconds, compile_seconds, found, target_name)
    fitted.curve = budget.curve()
    return fitted


__all__ = ["Fitted", "fit", "training_warnings"]
