"""jaxsamp.fit: every registered learned method on a 2-D Gaussian with a known log Z, the target forms, errors,
health, and kill-and-resume through fit's checkpoint."""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from _resume_checks import assert_kill_resume_bit_identical

import jaxsamp
from jaxsamp.core.errors import ConfigError, InputError, RunHealthError, RunHealthWarning
from jaxsamp.core.registry import LEARNED
from jaxsamp.learned.diffusion.adjoint import AdjointSettings
from jaxsamp.learned.diffusion.asbs import AsbsSettings
from jaxsamp.core.protocols import LearnedSampler, TrainingHealth
from jaxsamp.learned.diffusion.pis_dds import DdsSettings, PisSettings, build_pis
from jaxsamp.learned.fit import Fitted
from jaxsamp.learned.vi import aisivi, bsivi
from jaxsamp.targets.gaussian import Gaussian

HERE = Path(__file__).resolve().parent
TARGET = Gaussian(np.array([1.0, -0.5]), np.diag([0.25, 0.64]))
PATHS = PisSettings(num_time_steps=16, hidden=16, num_layers=1, learning_rate=1e-3)
ADJOINT = dict(network="mlp", hidden=16, num_layers=2, sigma_min=1e-2, sigma_max=3.0, nfe=16, steps_per_epoch=10,
               learning_rate=2e-3, buffer_epochs=2)
#: method -> (settings, batch size, training steps): seconds each on 2 CPU cores
SMALL = {
    "pis": (PATHS, 64, 40),
    "dds": (DdsSettings(num_time_steps=16, hidden=16, num_layers=1, learning_rate=3e-3), 64, 80),
    "adjoint": (AdjointSettings(**ADJOINT), 64, 6),
    "asbs": (AsbsSettings(**ADJOINT, prior="gaussian", prior_scale=1.0, adjoint_epochs=3, corrector_epochs=1), 64, 8),
}
N = 2000


#: registered methods whose fit test lives beside their family's tests (targets other than this Gaussian)
TESTED_IN_FAMILY: set[str] = {"softcvi", "elbo", "snis_forward_kl", "aisivi", "bsivi",  # tests/learned/vi/test_fit_vi.py
                              "gflownet", "bernoulli_denoising",  # tests/learned/gflownet, tests/learned/binary
                              "curves",  # tests/learned/curves/test_fit_curves.py
                              "leaps", "tps_dps",  # tests/learned/leaps, tests/learned/diffusion/test_fit_tps_dps.py
                              "scld", "cmcd"}  # tests/learned/diffusion/test_scld.py (SMC estimates, not plain IS)


def test_every_registered_method_is_tested():
    import jaxsamp.learned.methods  # noqa: F401

    assert sorted(set(SMALL) | TESTED_IN_FAMILY) == LEARNED.names()


@pytest.mark.parametrize("method", sorted(SMALL))
def test_fit_gives_unbiased_weights_on_a_gaussian(method, compilations):
    """The weights are exact whatever the training reached, so log Z-hat is within its error budget.

    The budget: log Z-hat's standard deviation is about sqrt((1/ESS - 1) / n) for n samples (delta method);
    5 of them plus 0.02, at a fixed seed. The delta method needs the weights to be resolved, so the budgets
    are set for an ESS above 0.05 (untrained, DDS's control is far off and its ESS is 5e-4) and that is asserted.
    """
    settings, batch, steps = SMALL[method]
    fitted = jaxsamp.fit(method, TARGET, num_steps=steps, key=0, settings=settings, batch_size=batch, progress=False)
    assert fitted.warnings == [] and set(fitted.history) >= {"loss"}
    assert all(len(v) == steps for v in fitted.history.values())
    samples = fitted.sample(1, N)
    assert samples.x.shape == (N, 2)
    del compilations[:]
    again = fitted.sample(1, N)  # compiled once per number of samples
    assert compilations == [] and np.array_equal(np.asarray(again.log_w), np.asarray(samples.log_w))
    ess, log_z = float(samples.ess), float(samples.log_Z)
    assert 0.05 < ess <= 1.0 and np.isfinite(log_z)
    assert abs(log_z - TARGET.log_Z) < 5 * np.sqrt((1 / ess - 1) / N) + 0.02
    figures = fitted.evaluate(2, 500)
    assert figures["log_Z_exact"] == pytest.approx(TARGET.log_Z) and np.isfinite(figures["eubo"])
    assert method in fitted.summary() and "no health warnings" in fitted.summary()


def test_a_plain_function_and_a_target_give_the_same_numbers():
    common = dict(num_steps=10, key=3, settings=PATHS, batch_size=32, progress=False)
    from_target = jaxsamp.fit("pis", TARGET, **common)
    from_function = jaxsamp.fit("pis", TARGET.log_prob, init=jnp.zeros(2), **common)
    np.testing.assert_array_equal(from_target.history["loss"], from_function.history["loss"])
    np.testing.assert_array_equal(from_target.sample(0, 100).x, from_function.sample(0, 100).x)


def test_keyword_settings_override_and_are_checked():
    fitted = jaxsamp.fit("dds", TARGET, num_steps=2, settings=SMALL["dds"][0], batch_size=8, learning_rate=1e-2,
                         progress=False)
    assert fitted.settings.learning_rate == 1e-2 and fitted.settings.hidden == 16
    with pytest.raises(ConfigError, match="unknown parameter 'hiden'"):
        jaxsamp.fit("dds", TARGET, num_steps=2, hiden=3)
    with pytest.raises(ConfigError, match="learning_rate"):
        jaxsamp.fit("dds", TARGET, num_steps=2, learning_rate=-1.0)
    with pytest.raises(InputError, match="must be a AdjointSettings"):
        jaxsamp.fit("adjoint", TARGET, num_steps=2, settings=PATHS)
    with pytest.raises(InputError, match="must be a DdsSettings, got PisSettings"):
        jaxsamp.fit("dds", TARGET, num_steps=2, settings=PATHS)
    with pytest.raises(ConfigError, match=r"unknown learned method 'pisx'; known: adjoint, .*\bpis\b"):
        jaxsamp.fit("pisx", TARGET, num_steps=2)
    with pytest.raises(InputError, match="needs init="):
        jaxsamp.fit("pis", lambda x: -jnp.sum(x**2), num_steps=2)
    with pytest.raises(InputError, match="num_steps"):
        jaxsamp.fit("pis", TARGET, num_steps=0)


def test_a_learned_sampler_is_fitted_as_it_is():
    sampler = build_pis(TARGET, PATHS, batch_size=16)
    fitted = jaxsamp.fit(sampler, num_steps=3, progress=False)
    assert fitted.sampler is sampler and fitted.method == "LearnedSampler" and fitted.settings is None
    np.testing.assert_array_equal(fitted.history["loss"], jaxsamp.fit("pis", TARGET, num_steps=3, settings=PATHS,
                                                                      batch_size=16, progress=False).history["loss"])
    with pytest.raises(InputError, match="takes no target, batch_size: they go to the method's build"):
        jaxsamp.fit(sampler, TARGET, num_steps=3, batch_size=8)
    with pytest.raises(InputError, match="must be a registered name or a LearnedSampler, got object"):
        jaxsamp.fit(object(), TARGET, num_steps=3)
    with pytest.raises(InputError, match="needs a target"):
        jaxsamp.fit("pis", num_steps=3)


def test_an_optimizer_replaces_the_settings_one():
    """``optimizer=`` trains the network with the given optax transformation: plain SGD at rate 0 leaves it as built."""
    fitted = jaxsamp.fit("pis", TARGET, num_steps=3, settings=PATHS, batch_size=16, optimizer=optax.sgd(0.0),
                         progress=False)
    untouched = jax.jit(fitted.sampler.init)(jax.random.split(jax.random.key(0))[0])
    for a, b in zip(jax.tree.leaves(fitted.state.params), jax.tree.leaves(untouched.params)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(InputError, match="optimizer must be an optax.GradientTransformation"):
        jaxsamp.fit("pis", TARGET, num_steps=3, optimizer="adam")


def test_compile_time_is_reported_apart():
    fitted = jaxsamp.fit("pis", TARGET, num_steps=3, settings=PATHS, batch_size=16, progress=False)
    assert 0.0 < fitted.compile_seconds <= fitted.seconds
    assert "compiling" in fitted.summary()


def test_a_diverged_fit_warns_and_fails_under_strict():
    common = dict(num_steps=5, settings=PATHS, batch_size=16, learning_rate=1e4, progress=False)
    with pytest.warns(RunHealthWarning, match="training diverged"):
        fitted = jaxsamp.fit("pis", TARGET, **common)
    assert fitted.warnings
    with pytest.raises(RunHealthError, match="training diverged"):
        jaxsamp.fit("pis", TARGET, strict=True, **common)


def test_a_fit_that_explodes_at_its_first_update_fails_under_strict():
    """Issue 61: a divergence at the first update, then a plateau (Adam at 1e2 for one update, then frozen): the loss
    goes from -0.08 to 6.7e16 and stays. The first tenth of 20 steps holds both, so its median (3.4e16) is no start
    level; the loss of the first step, the untrained sampler's, is."""
    diverge_once = optax.adam(optax.piecewise_constant_schedule(1e2, {1: 0.0}))
    with pytest.raises(RunHealthError, match=r"exploded from -0.08\d* \(first step\) to 6.7\d*e\+16"):
        jaxsamp.fit("pis", TARGET, num_steps=20, settings=PATHS, batch_size=16, optimizer=diverge_once, progress=False,
                    strict=True)


def test_fit_holds_the_training_ess_to_the_floor_the_experiment_kinds_apply():
    """A density 30 standard deviations of the base away: one path of 16 carries all the weight in every batch."""
    def far(x):
        return -0.5 * jnp.sum((x - 30.0) ** 2) / 0.01

    with pytest.warns(RunHealthWarning, match="at its floor 1/16"):
        fitted = jaxsamp.fit("pis", far, init=jnp.zeros(2), num_steps=3, settings=PATHS, batch_size=16, progress=False)
    (w,) = fitted.warnings
    assert w.startswith("training batches (median ESS of the last tenth of the steps): the ESS is 0.0625")


def test_the_summary_reads_the_end_of_training_on_the_last_tenth_of_the_steps():
    """One batch's ESS is noisy (the README's run: 0.35 at the last step, 0.80 over the last 30, 0.78 by .sample)."""
    history = {"loss": np.linspace(2.0, 1.0, 300), "ess": np.r_[np.full(299, 0.8), 0.35]}
    stub = LearnedSampler(None, None, None, None, jit_sample=False)
    summary = Fitted("pis", stub, None, None, history, 1.0, 0.5, []).summary()
    assert "ess: 0.8 (first step) -> 0.8 (median of the last 30 steps)" in summary, summary


def test_bad_input_is_refused_before_training():
    """A log density that is NaN everywhere, or whose gradient is, and an init that contradicts the target's shape are
    one-line InputErrors naming them, before any training (issue 61); a discrete target's energy is checked at valid
    configurations, without a gradient."""
    common = dict(num_steps=2, settings=PATHS, batch_size=8, progress=False)
    with pytest.raises(InputError, match=r"all 4 starting points checked before training are where "
                                         r"nowhere\.log_prob is NaN/inf"):
        jaxsamp.fit("pis", jaxsamp.targets.from_function(lambda x: jnp.nan * jnp.sum(x), jnp.zeros(2), name="nowhere"),
                    **common)
    with pytest.raises(InputError, match="where the gradient of .*log_prob is NaN/inf"):
        jaxsamp.fit("pis", lambda x: -jnp.sum(jnp.sqrt(0.0 * x)), init=jnp.ones(2), **common)
    with pytest.raises(InputError, match=r"init= for gaussian: starting points must have shape .* got \(3,\)"):
        jaxsamp.fit("pis", TARGET, init=jnp.zeros(3), **common)
    grid = jaxsamp.targets.get("hypergrid", dim=2, side=4)
    grid._log_prob = lambda x: jnp.float32(jnp.nan) * jnp.sum(x)  # an integer state: no gradient is taken
    with pytest.raises(InputError, match="all 4 starting points checked before training are where hypergrid"):
        jaxsamp.fit("gflownet", grid, num_steps=2, hidden=(8,), progress=False)


def test_a_sampler_passed_built_is_checked_before_training_as_one_built_by_name():
    """``fit(sampler)`` checks the sampler's declared density at its starting points as ``fit(name)`` does: a NaN
    log density is refused before the first update (the training step, replaced, would say if it ran); ``init=`` is
    checked against that density, and refused for a sampler that declares none."""
    nowhere = jaxsamp.targets.from_function(lambda x: jnp.nan * jnp.sum(x), jnp.zeros(2), name="nowhere")
    built = build_pis(nowhere, PATHS, batch_size=8)
    assert built.density is nowhere

    def never(key, state):
        raise AssertionError("a training step ran")

    with pytest.raises(InputError, match=r"method 'LearnedSampler': all 4 starting points .* nowhere\.log_prob is NaN"):
        jaxsamp.fit(built._replace(step=never), num_steps=2, progress=False)
    with pytest.raises(InputError, match=r"init= for gaussian: starting points must have shape"):
        jaxsamp.fit(build_pis(TARGET, PATHS, batch_size=8), init=jnp.zeros(3), num_steps=2, progress=False)
    with pytest.raises(InputError, match="declares none"):
        jaxsamp.fit(built._replace(density=None), init=jnp.zeros(2), num_steps=2, progress=False)


def test_a_methods_stages_are_judged_apart():
    """A loss judged per declared stage: an explosion inside one stage is seen, and each warning names its stage."""
    from jaxsamp.learned.fit import training_warnings

    loss = np.concatenate([np.full(20, 1e2), np.full(20, 1e-3), np.full(20, 1e4)])  # stage b explodes from 1e-3 to 1e4
    stage = np.repeat([0, 1, 1], 20)
    health = TrainingHealth(stages=lambda history: {"a": stage == 0, "b": stage == 1})
    (w,) = training_warnings({"loss": loss}, health)
    assert w.startswith("b: the training loss exploded")
    assert training_warnings({"loss": loss}, TrainingHealth()) == []  # judged as one run, 1e2 -> 1e4 is no explosion


def test_a_samplers_own_health_check_joins_fits():
    """A sampler with its own ``checks`` (AISIVI: a collapsed reverse model) has its warnings reported by
    ``fit`` beside the generic ones, and raised under ``strict``; AISIVI's reads the per-step ``inner_ess``."""

    def collapsed(history):
        assert history["loss"].shape == (3,)  # the driver's per-step metrics, as numpy arrays
        return ["the reverse model collapsed (a test)"]

    sampler = build_pis(TARGET, PATHS, batch_size=16)._replace(health=TrainingHealth(checks=collapsed))
    with pytest.warns(RunHealthWarning, match="collapsed"):
        fitted = jaxsamp.fit(sampler, num_steps=3, progress=False)
    assert fitted.warnings == ["the reverse model collapsed (a test)"]
    with pytest.raises(RunHealthError, match="collapsed"):
        jaxsamp.fit(sampler, num_steps=3, progress=False, strict=True)
    gaussian = Gaussian(jnp.zeros(2), jnp.eye(2))
    checks = aisivi.build(gaussian, aisivi.AISIVISettings(latent_dim=2, hidden_width=8, num_inner=16, tau_layers=2,
                                                          tau_hidden_width=8)).health.checks
    assert checks({"inner_ess": np.full(50, 1 / 16)}) and not checks({"inner_ess": np.full(50, 0.5)})
    baseline = bsivi.build(gaussian, bsivi.BSIVISettings(latent_dim=2, hidden_width=8, num_inner=16))
    assert baseline.health.checks is None  # its own eps dominates its inner weights by design


def test_killed_fit_resumes_bit_identically(tmp_path):
    assert_kill_resume_bit_identical(HERE / "_fit_resume_child.py", tmp_path, min_arrays=10)


def test_evaluate_passes_the_methods_options_and_refuses_others():
    fitted = jaxsamp.fit("pis", TARGET, num_steps=2, settings=PATHS, batch_size=8, progress=False)
    assert "sinkhorn" in fitted.evaluate(0, 64) and "sinkhorn" not in fitted.evaluate(0, 64, sinkhorn=False)
    grid = jaxsamp.targets.get("hypergrid", dim=2, side=4)
    gfn = jaxsamp.fit("gflownet", grid, num_steps=2, hidden=(8,), progress=False)
    with pytest.raises(InputError, match="gflownet: evaluate takes no option sinkhorn"):
        gfn.evaluate(0, 16, sinkhorn=False)


def test_a_budget_in_target_evaluations_or_seconds_stops_training_at_a_chunk_end():
    """PIS counts (16 paths x (8 scores + 1 density)) = 144 target evaluations an update; 50 updates run in chunks of
    1, so a budget of 1000 stops after the 7th (1008); the history is that of a 7-update run in the same chunks
    (another chunking compiles another program, equal to float32 round-off)."""
    settings = PisSettings(num_time_steps=8, hidden=8, num_layers=1)
    common = dict(settings=settings, batch_size=16, progress=False, key=4)
    stopped = jaxsamp.fit("pis", TARGET, num_steps=50, max_target_evals=1000, **common)
    assert len(stopped.history["loss"]) == 7 and stopped.history["target_evals"][-1] == 1008
    seven = jaxsamp.fit("pis", TARGET, num_steps=7, max_target_evals=10**9, **common)  # the same chunks of 1 update
    np.testing.assert_array_equal(stopped.history["loss"], seven.history["loss"])
    quick = jaxsamp.fit("pis", TARGET, num_steps=50, max_seconds=0, **common)
    assert len(quick.history["loss"]) == 1  # the first chunk always runs
    with pytest.raises(InputError, match="max_seconds must be a number >= 0"):
        jaxsamp.fit("pis", TARGET, num_steps=5, max_seconds=-1.0, **common)


def test_the_learning_curve_evaluates_every_k_updates_apart_from_the_training_time():
    settings = PisSettings(num_time_steps=8, hidden=8, num_layers=1)
    fitted = jaxsamp.fit("pis", TARGET, num_steps=10, settings=settings, batch_size=16, progress=False, key=4,
                         evaluate_every=4, evaluate_samples=64, evaluate_options={"sinkhorn": False})
    np.testing.assert_array_equal(fitted.curve["step"], [4, 8, 10])
    assert np.all(np.diff(fitted.curve["train_seconds"]) > 0) and np.all(np.isfinite(fitted.curve["ess"]))
    plain = jaxsamp.fit("pis", TARGET, num_steps=10, settings=settings, batch_size=16, progress=False, key=4)
    np.testing.assert_array_equal(fitted.history["loss"], plain.history["loss"])  # evaluating changes no update
    assert plain.curve == {}
    chunked = jaxsamp.fit("pis", TARGET, num_steps=10, settings=settings, batch_size=16, progress=False, key=4,
                          evaluate_every=4, evaluate_samples=64, evaluate_options={"sinkhorn": False}, chunk=2)
    np.testing.assert_array_equal(chunked.curve["step"], [4, 8, 10])
    with pytest.raises(InputError, match="chunk=3 does not divide evaluate_every=4"):
        jaxsamp.fit("pis", TARGET, num_steps=10, settings=settings, evaluate_every=4, chunk=3)
    with pytest.raises(InputError, match="evaluate_options without evaluate_every"):
        jaxsamp.fit("pis", TARGET, num_steps=2, settings=settings, evaluate_options={"sinkhorn": False})


def test_a_resumed_fit_counts_on_from_its_checkpoint_with_its_seconds_and_learning_curve(tmp_path):
    """A fit cut at 8 updates and resumed to 12 ends with the curve of an uncut 12-update fit (the same states at
    the same keys, so the same figures) and its seconds counted over both sessions, also when called once more
    after its end; a resumed fit whose record says the budget was spent at its checkpoint trains no more."""
    import json

    from jaxsamp.learned.training_budget import BUDGET_RECORD

    settings = PisSettings(num_time_steps=8, hidden=8, num_layers=1)
    common = dict(settings=settings, batch_size=16, progress=False, key=4, evaluate_every=4, evaluate_samples=64,
                  evaluate_options={"sinkhorn": False}, checkpoint_every=4)
    whole = jaxsamp.fit("pis", TARGET, num_steps=12, checkpoint=tmp_path / "whole", **common)
    cut = jaxsamp.fit("pis", TARGET, num_steps=8, checkpoint=tmp_path / "cut", **common)
    record = json.loads((tmp_path / "cut" / BUDGET_RECORD).read_text())
    assert set(record) == {"4", "8"} and [p["step"] for p in record["8"]["points"]] == [4, 8]
    resumed = jaxsamp.fit("pis", TARGET, num_steps=12, checkpoint=tmp_path / "cut", **common)
    assert len(resumed.history["loss"]) == 12 and resumed.seconds > record["8"]["seconds"]
    assert 0 < record["8"]["seconds"] <= cut.seconds  # recorded before the driver wrote its last checkpoint
    for name in ("step", "ess", "log_Z_hat"):
        np.testing.assert_array_equal(resumed.curve[name], whole.curve[name])
    assert {"8", "12"} <= set(json.loads((tmp_path / "cut" / BUDGET_RECORD).read_text()))
    again = jaxsamp.fit("pis", TARGET, num_steps=12, checkpoint=tmp_path / "cut", **common)  # nothing left to train
    np.testing.assert_array_equal(again.curve["ess"], whole.curve["ess"])
    assert again.seconds >= resumed.seconds - 0.5  # the sessions recorded at the end, not this one's nothing

    record["8"]["seconds"] = 1e6  # as if the budget had been spent at the cut
    (tmp_path / "cut" / BUDGET_RECORD).write_text(json.dumps(record))
    (tmp_path / "cut" / "step_0000000012").rename(tmp_path / "elsewhere")
    spent = jaxsamp.fit("pis", TARGET, num_steps=20, checkpoint=tmp_path / "cut", max_seconds=100, **common)
    assert len(spent.history["loss"]) == 8 and spent.seconds > 1e6 and list(spent.curve["step"]) == [4, 8]


def test_a_checkpointed_fit_without_a_budget_counts_the_seconds_of_every_session(tmp_path):
    """The seconds record is kept by any checkpointed fit, not only a budgeted one: a plain fit cut at 8 updates and
    resumed to 12 reports the seconds of both sessions, and trains as an uncut checkpointed fit does."""
    import json

    from jaxsamp.learned.training_budget import BUDGET_RECORD

    common = dict(settings=PisSettings(num_time_steps=8, hidden=8, num_layers=1), batch_size=16, progress=False,
                  key=5, checkpoint_every=4)
    whole = jaxsamp.fit("pis", TARGET, num_steps=12, checkpoint=tmp_path / "whole", **common)
    jaxsamp.fit("pis", TARGET, num_steps=8, checkpoint=tmp_path / "cut", **common)
    record = json.loads((tmp_path / "cut" / BUDGET_RECORD).read_text())
    assert set(record) == {"4", "8"} and record["8"]["points"] == []
    record["8"]["seconds"] = 1000.0  # as if the first session had been long
    (tmp_path / "cut" / BUDGET_RECORD).write_text(json.dumps(record))
    resumed = jaxsamp.fit("pis", TARGET, num_steps=12, checkpoint=tmp_path / "cut", **common)
    assert 1000.0 < resumed.seconds < 1000.0 + whole.seconds + 60
    np.testing.assert_array_equal(resumed.history["loss"], whole.history["loss"])


def test_smc_needs_a_method_with_a_path_and_names_those_that_have_one():
    """``Fitted.smc`` of a method without a learned path (PIS) is an InputError naming the registered methods whose
    ``build`` gives one, and the registry's mark agrees with the builds (LEAPS and the curves are tested running in
    their families' ``test_*_transition.py``)."""
    fitted = Fitted("pis", build_pis(TARGET, PATHS, batch_size=8), PATHS, None, {}, 0.0, 0.0, [])
    with pytest.raises(InputError, match="pis has no learned path to run SMC along") as refused:
        fitted.smc(0, 100)
    assert refused.value.hint == "Fitted.smc runs the methods with one: cmcd, curves, leaps, scld"
    marked = [name for name in LEARNED.names() if LEARNED.entry(name).meta.get("smc_proposal")]
    for name in LEARNED.names():
        entry = LEARNED.entry(name)
        if name in marked or name in ("pis", "dds"):  # a path sampler without a path of intermediate targets
            target = jaxsamp.targets.get("ising", L=3, beta=0.4) if name == "leaps" else TARGET
            sampler = entry.factory(entry.meta.get("as_target", lambda t: t)(target), entry.meta["settings"](),
                                    batch_size=8, optimizer=None)
            assert (sampler.smc_proposal is not None) == (name in marked), name
