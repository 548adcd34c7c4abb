"""Fitted.smc compiles once per number of particles and options; Fitted.evaluate(smc=...) scores an SMC run."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsamp
from jaxsamp.core.errors import InputError
from jaxsamp.core.registry import LEARNED
from jaxsamp.learned import resampled
from jaxsamp.smc import anneal
from jaxsamp.targets.mixture import GaussianMixture

MIXTURE = GaussianMixture([[1.5, 0.5], [-1.5, -0.5]], 0.6, [0.3, 0.7])  # log Z = 0
LEVELS = 8


def _counting_curve():
    """A briefly trained Boltzmann curve whose learned transition counts its traces (a Python side effect)."""
    import jaxsamp.learned.methods  # noqa: F401  (registers the methods)

    entry = LEARNED.entry("curves")
    settings = entry.meta["settings"](hidden=(8,), rate_hidden=(4,), num_frequencies=2, box=4.0, ode_steps=LEVELS)
    sampler = entry.factory(MIXTURE, settings, batch_size=16, optimizer=None)
    traces = []

    def counting_proposal(state):
        proposal = sampler.smc_proposal(state)

        def transition(key, positions, t, t_next):
            traces.append(1)
            return proposal.transition(key, positions, t, t_next)

        return proposal._replace(transition=transition)

    fitted = jaxsamp.fit(sampler._replace(smc_proposal=counting_proposal), num_steps=2, key=0, progress=False)
    return fitted, traces


@pytest.fixture(scope="module")
def counting_curve():
    return _counting_curve()


def _same(a, b) -> bool:
    return all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in
               ((a.samples.x, b.samples.x), (a.samples.log_w, b.samples.log_w), (a.samples.log_Z, b.samples.log_Z)))


def test_a_second_smc_call_only_samples(counting_curve):
    """The same number of particles and options: no trace of the learned transition at the second call (nor at a
    call with another key), and the same draws for the same key; a new train state (assigned to the Fitted)
    builds the run anew, with the same draws for the same values."""
    fitted, traces = counting_curve
    first = fitted.smc(1, 64, moves="mala")
    traced = len(traces)
    assert traced > 0
    again = fitted.smc(1, 64, moves="mala")
    other_key = fitted.smc(2, 64, moves="mala")
    assert len(traces) == traced
    assert _same(first, again) and not _same(first, other_key)
    fitted.state = jax.tree.map(jnp.array, fitted.state)  # a copy: another object, the same values
    rebuilt = fitted.smc(1, 64, moves="mala")
    assert len(traces) > traced and _same(first, rebuilt)


def test_other_particles_or_options_run_their_own_correct_smc(counting_curve):
    """Another number of particles or another threshold traces again, and each run is :func:`jaxsamp.smc.anneal`'s
    along the trained proposal, bit for bit (so the cache never hands one option's kernel to another)."""
    fitted, traces = counting_curve
    proposal = fitted.smc_proposal()
    runs = {}
    for n, threshold in ((64, 0.5), (32, 0.5), (64, 1.0), (64, 0.0)):
        before = len(traces)
        runs[n, threshold] = fitted.smc(3, n, resample_threshold=threshold)
        assert len(traces) > before, (n, threshold)
        direct = anneal(jax.random.key(3), proposal.path, None, n, schedule=proposal.schedule,
                        transition=proposal.transition, ess_threshold=threshold, num_mcmc_steps=0)
        assert _same(runs[n, threshold], direct), (n, threshold)
    assert runs[32, 0.5].samples.x.shape == (32, 2)
    resamplings = [int(np.sum(runs[64, t].trace.resampled)) for t in (1.0, 0.5, 0.0)]
    assert resamplings[0] == LEVELS and resamplings[2] == 0 and not _same(runs[64, 1.0], runs[64, 0.5])


def test_evaluate_with_smc_scores_the_smc_run(counting_curve):
    """``evaluate(key, n, smc={...})`` is the weight figures of ``smc(key, n, ...)``'s final particles (its log Z,
    the exact log Z's error) with the run's segment ESS, resamplings and target evaluations; ``smc=True`` uses
    ``smc``'s defaults."""
    fitted, _ = counting_curve
    options = {"moves": "mala", "segment_length": 3, "resample_threshold": 0.9}
    figures = fitted.evaluate(5, 64, smc=options)
    run = fitted.smc(5, 64, **options)
    assert figures["log_Z_hat"] == pytest.approx(float(run.samples.log_Z), abs=1e-5)
    assert figures["log_Z_exact"] == 0.0 and figures["log_Z_abs_err"] == pytest.approx(abs(figures["log_Z_hat"]))
    assert figures["ess"] == pytest.approx(float(run.samples.ess), rel=1e-5)
    assert figures["sample_target_evals"] == run.num_target_evals
    assert figures["num_resamplings"] == np.sum(run.trace.resampled) > 0
    # resampling is checked at levels 3, 6 and the last (8): the smallest ESS there, before resampling
    ess = np.asarray(run.trace.ess)
    assert figures["segment_ess_min"] == pytest.approx(min(ess[2], ess[5], ess[7]))
    defaults = fitted.evaluate(5, 64, smc=True)
    assert defaults["log_Z_hat"] == pytest.approx(float(fitted.smc(5, 64).samples.log_Z), abs=1e-5)


def test_evaluate_smc_refuses_unknown_options_and_methods_without_a_path(counting_curve):
    fitted, _ = counting_curve
    with pytest.raises(InputError, match="smc takes no option movs") as refused:
        fitted.evaluate(0, 16, smc={"movs": "mala"})
    assert refused.value.hint.endswith(", ".join(resampled.SMC_OPTIONS))
    with pytest.raises(InputError, match="smc must be True or a dict"):
        fitted.evaluate(0, 16, smc="mala")
    with pytest.raises(InputError, match="takes no method options, got num_sets"):
        fitted.evaluate(0, 16, smc=True, num_sets=2)
    from jaxsamp.learned.diffusion.pis_dds import PisSettings, build_pis
    from jaxsamp.learned.fit import Fitted

    settings = PisSettings(num_time_steps=4, hidden=4, num_layers=1)
    pis = Fitted("pis", build_pis(MIXTURE, settings, batch_size=8), settings, None, {}, 0.0, 0.0, [])
    with pytest.raises(InputError, match="pis has no learned path to run SMC along"):
        pis.evaluate(0, 16, smc=True)


def test_smc_figures_read_the_ess_where_resampling_was_checked():
    """With segments of 2 levels out of 5, resampling is checked at levels 2, 4 and 5: ``segment_ess_min`` is the
    smallest ESS there, the last level's included (a lower ESS inside a segment is not one); ``num_resamplings``
    counts the resampled levels."""
    from jaxsamp.core.protocols import WeightedSamples
    from jaxsamp.smc import AnnealResult, SMCInfo

    ess = np.array([0.1, 0.6, 0.9, 0.5, 0.3], np.float32)
    resampled_at = np.array([False, True, False, True, False])
    zeros = np.zeros(5, np.float32)
    trace = SMCInfo(zeros, ess, resampled_at, zeros, zeros.astype(np.int32), np.ones(5, bool), zeros)
    samples = WeightedSamples(np.zeros((4, 2), np.float32), np.zeros(4, np.float32), np.float32(0.25))
    figures = resampled.smc_figures(AnnealResult(samples, 40, 5, trace), log_Z_exact=0.0, segment_length=2)
    assert figures["segment_ess_min"] == pytest.approx(0.3) and figures["num_resamplings"] == 2
    assert figures["sample_target_evals"] == 40 and figures["log_Z_hat"] == pytest.approx(0.25)
