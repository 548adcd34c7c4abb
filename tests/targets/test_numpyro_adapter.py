"""from_numpyro on eight schools (non-centred): density with its Jacobian, and a short HMC run."""

import sys

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from blackjax.diagnostics import effective_sample_size
from scipy import stats

from jaxsamp.core import ensemble, run
from jaxsamp.targets.eight_schools import SIGMA, Y
from jaxsamp.targets.eight_schools import model as eight_schools
from jaxsamp.targets.numpyro_adapter import from_numpyro

numpyro = pytest.importorskip("numpyro")
dist = pytest.importorskip("numpyro.distributions")

def _hand_written(mu, log_tau, theta_tilde):
    """log p(mu, log tau, theta~ | y): priors, likelihood and the log-Jacobian log tau of tau = e^s."""
    tau = np.exp(log_tau)
    return (
        stats.norm.logpdf(mu, 0, 5)
        + stats.halfcauchy.logpdf(tau, scale=5)
        + log_tau
        + stats.norm.logpdf(theta_tilde).sum(-1)
        + stats.norm.logpdf(Y, mu[..., None] + tau[..., None] * theta_tilde, SIGMA).sum(-1)
    )


@pytest.fixture(scope="module")
def target():
    return from_numpyro(eight_schools, SIGMA, y=Y)


def test_flattening_and_constraining(target):
    assert target.event_shape == (10,) and target.log_Z is None
    x = jnp.arange(10.0) / 10
    parts = target.unravel(x)
    assert set(parts) == {"mu", "tau", "theta_tilde"}
    constrained = jax.jit(target.constrain)(x)
    np.testing.assert_allclose(constrained["tau"], np.exp(parts["tau"]), rtol=1e-6)
    np.testing.assert_allclose(
        constrained["theta"], parts["mu"] + constrained["tau"] * parts["theta_tilde"], rtol=1e-6
    )
    assert np.isfinite(float(target.log_prob(target.init_position)))


def test_log_density_matches_hand_written_eight_schools(target):
    x = np.random.default_rng(0).normal(size=(16, 10)) * 2
    lp = np.asarray(jax.jit(jax.vmap(target.log_prob))(jnp.asarray(x, jnp.float32)))
    parts = jax.vmap(target.unravel)(jnp.asarray(x))
    ref = _hand_written(np.asarray(parts["mu"], float), np.asarray(parts["tau"], float), np.asarray(parts["theta_tilde"], float))
    np.testing.assert_allclose(lp, ref, rtol=1e-5)


def test_hmc_posterior_mean_of_mu(target):
    """Posterior mean of mu is 4.39 (posteriordb reference draws; sd 3.3).

    4 HMC chains x 800 kept draws; budget 5 Monte Carlo standard errors (sd / sqrt(ESS),
    ESS from blackjax, capped at the number of draws) plus 0.05 for the reference value's
    own error.
    """
    scales = jnp.ones(10).at[0].set(9.0)  # mu has posterior sd ~3.3, the rest ~1
    kernel = blackjax.hmc(target.log_prob, step_size=0.35, inverse_mass_matrix=scales, num_integration_steps=8)
    chains = ensemble(kernel)
    state = chains.init(jnp.zeros((4, 10)))
    state, (mu, accept) = run(
        chains.step, state, jax.random.key(0), 1000, chunk=1000, progress=False,
        trace=lambda s, info: (s.position[:, 0], info.acceptance_rate),
    )
    mu = np.asarray(mu)[200:]  # drop warm-up
    assert np.mean(accept) > 0.6
    ess = min(float(effective_sample_size(jnp.asarray(mu.T))), mu.size)
    assert ess > 500
    mcse = mu.std() / np.sqrt(ess)
    assert abs(mu.mean() - 4.39) < 5 * mcse + 0.05


def test_missing_numpyro_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "numpyro.infer.util", None)
    with pytest.raises(ImportError, match=r"jaxsamp\[numpyro\]"):
        from_numpyro(eight_schools, SIGMA, y=Y)


def test_a_model_called_without_its_data_is_told_which_arguments_are_missing():
    """Issue 61: eight schools without ``sigma`` was taken for a plain log density and told to pass init=; now every
    entry point names the model's missing argument before any work. A plain log density still needs init=."""
    import jaxsamp
    from jaxsamp.core.errors import InputError

    missing = r"numpyro model 'model' was called without its argument\(s\) sigma \(its data\)"
    with pytest.raises(InputError, match=missing):
        jaxsamp.sample(eight_schools, num_warmup=20, num_samples=5, progress=False)
    with pytest.raises(InputError, match=missing):
        jaxsamp.fit("elbo", eight_schools, model_kwargs={"y": Y}, num_steps=2, progress=False)
    with pytest.raises(InputError, match=missing):
        from_numpyro(eight_schools)
    with pytest.raises(InputError, match="a plain log-density function needs init="):
        jaxsamp.sample(lambda x: -jnp.sum(x**2), num_warmup=20, num_samples=5, progress=False)
