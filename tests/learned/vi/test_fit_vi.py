"""The variational methods through ``jaxsamp.fit`` on a 2-D Gaussian with a known log Z, and what fit refuses.

One target for all: ``N([1, -0.5], diag(0.25, 0.64))`` up to its normaliser, so ``log Z = log(2 pi
sqrt(det Sigma)) = 0.9216`` is exact and ``q`` can equal ``p`` (a full-rank Gaussian family for the objectives; the semi-implicit Gaussian
family contains it too). Budgets are stated per test at fixed seeds; each fit runs in seconds on 2 CPU cores.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import jaxsamp
from jaxsamp.core.errors import ConfigError, InputError
from jaxsamp.core.protocols import LearnedSampler
from jaxsamp.learned.vi import aisivi, bsivi, elbo, snis_forward_kl, softcvi
from jaxsamp.learned.vi.density import draws, log_q
from jaxsamp.learned.vi.semi_implicit import SemiImplicitFamily
from jaxsamp.targets.gaussian import Gaussian

TARGET = Gaussian(np.array([1.0, -0.5]), np.diag([0.25, 0.64]))
GAUSSIAN_Q = {"family": "full_rank_gaussian", "learning_rate": 3e-2}
BSIVI = {"latent_dim": 2, "hidden_width": 8, "num_inner": 16, "marginal_draws": 256}
AISIVI = {**BSIVI, "tau_layers": 2, "tau_hidden_width": 8, "pretrain_steps": 10}
#: method -> (module, keyword settings, batch size, steps)
SMALL = {
    "softcvi": (softcvi, GAUSSIAN_Q, 8, 200),
    "elbo": (elbo, GAUSSIAN_Q, 8, 200),
    "snis_forward_kl": (snis_forward_kl, GAUSSIAN_Q, 8, 200),
    "aisivi": (aisivi, AISIVI, 16, 200),
    "bsivi": (bsivi, BSIVI, 16, 200),
}
N = 1000


@pytest.mark.parametrize("method", sorted(SMALL))
def test_fit_reaches_the_gaussian_and_estimates_its_log_z(method):
    """From N(0, I) (KL(q || p) about 1.1 nats): after 200 steps q is close to p, so the weights are nearly flat.

    Budget at seed 0 (measured): ESS 0.91-1.0, |log Z-hat| <= 0.007, the ELBO's error log Z - ELBO
    (a KL(q || p) estimate) <= 0.033, the EUBO's (the forward KL on exact draws) <= 0.035. Bounds: ESS > 0.8,
    |log Z-hat| < 0.05, both errors < 0.1 (an untrained q gives an ELBO error of 1.1, ESS 0.3).
    The semi-implicit ``log q`` is a K-draw estimate, biased by a few 1e-3 here.
    """
    module, settings, batch, steps = SMALL[method]
    fitted = jaxsamp.fit(method, TARGET, num_steps=steps, key=0, batch_size=batch, progress=False, **settings)
    assert isinstance(fitted.sampler, LearnedSampler)
    assert fitted.warnings == [] and all(len(v) == steps for v in fitted.history.values())
    assert {"loss", "elbo", "ess", "log_Z_hat"} <= set(fitted.history)
    assert np.all(np.isfinite(fitted.history["elbo"][-10:]))
    if method == "aisivi":  # the first pretrain_steps train tau only: no q update, a NaN ELBO and loss (not judged)
        assert np.all(np.isnan(fitted.history["loss"][:10])) and np.all(np.isfinite(fitted.history["tau_nll"]))
    if method == "bsivi":  # no reverse model: a NaN tau NLL, q trained from the first step
        assert np.all(np.isnan(fitted.history["tau_nll"])) and np.all(np.isfinite(fitted.history["elbo"]))
    samples = fitted.sample(1, N)
    assert samples.x.shape == (N, 2) and samples.log_w.shape == (N,)
    figures = fitted.evaluate(2, N)
    assert figures["nonfinite_samples"] == 0 and figures["log_Z_exact"] == pytest.approx(TARGET.log_Z)
    assert 0.8 < figures["ess"] <= 1.0 + 1e-6 and figures["log_Z_abs_err"] < 0.05, figures  # ess: float32
    assert figures["elbo_abs_err"] < 0.1 and figures["eubo_abs_err"] < 0.1, figures
    # q near p: mean log q of exact draws near mean log p = -(d/2)(1 + log 2 pi) - log det(Sigma)/2 = -1.92
    assert figures["mean_log_q_reference"] == pytest.approx(-1.92, abs=0.15)


def test_softcvi_at_the_target_has_flat_weights():
    """SoftCVI's zero-variance property on a family that holds p: its fixed point is q = p exactly, so after
    training every weight log p~ - log q is the same number, log Z (spread below 1e-3 at seed 0; the
    ELBO's noisy gradient leaves a spread of ~0.1)."""
    fitted = jaxsamp.fit("softcvi", TARGET, num_steps=400, key=0, batch_size=8, progress=False, **GAUSSIAN_Q)
    log_w = np.asarray(fitted.sample(1, N).log_w)
    assert np.ptp(log_w) < 1e-2 and abs(np.mean(log_w) - TARGET.log_Z) < 1e-3


def test_bad_targets_and_settings_are_clear_errors():
    with pytest.raises(InputError, match="method 'softcvi': softcvi lives on R\\^d: the target must be real-valued"):
        jaxsamp.fit("softcvi", jaxsamp.targets.get("ising", L=2, beta=0.4), num_steps=2)
    with pytest.raises(InputError, match="method 'aisivi': aisivi lives on R\\^d"):
        jaxsamp.fit("aisivi", jaxsamp.targets.get("ising", L=2, beta=0.4), num_steps=2)
    with pytest.raises(InputError, match="coupling flow needs dim >= 2") as info:
        jaxsamp.fit("elbo", lambda x: -0.5 * jnp.sum(x**2), init=jnp.zeros(1), num_steps=2)
    assert "full_rank_gaussian" in info.value.hint
    with pytest.raises(InputError, match="batch_size must be >= 2"):
        jaxsamp.fit("softcvi", TARGET, num_steps=2, batch_size=1)
    with pytest.raises(ConfigError, match="unknown parameter 'num_samples'"):
        jaxsamp.fit("snis_forward_kl", TARGET, num_steps=2, num_samples=8)


@pytest.mark.parametrize("method", sorted(SMALL))
def test_build_takes_defaults_an_optimizer_and_refuses_evaluate_options(method):
    """``build(target)`` uses the settings' defaults and the method's batch size; ``optimizer=`` replaces q's optimiser
    (SGD at rate 0: q's parameters do not move, AISIVI's reverse model still does); ``evaluate`` takes no option."""
    module, settings, batch, _ = SMALL[method]
    assert isinstance(module.build(TARGET), LearnedSampler)
    settings_class = jaxsamp.core.registry.LEARNED.entry(method).meta["settings"]
    frozen = module.build(TARGET, settings_class(**{**settings, "pretrain_steps": 0} if method == "aisivi" else settings),
                          batch_size=batch, optimizer=optax.sgd(0.0))
    state = frozen.init(jax.random.key(0))
    new, metrics = jax.jit(frozen.step)(jax.random.key(1), state)
    q = (lambda s: s.phi) if method in ("aisivi", "bsivi") else (lambda s: s.params)
    jax.tree.map(np.testing.assert_array_equal, q(new), q(state))
    assert np.isfinite(float(metrics["loss"]))
    if method == "aisivi":
        assert any(np.any(a != b) for a, b in zip(jax.tree.leaves(new.psi), jax.tree.leaves(state.psi)))
    with pytest.raises(InputError, match="evaluate takes no option sinkhorn"):
        frozen.evaluate(jax.random.key(2), new, 16, sinkhorn=False)


def test_log_q_at_points_is_the_density_the_fit_uses():
    """``density.log_q`` at q's own draws gives their weights back, ``log p~ - log q``, for an explicit family (exactly,
    up to float32 round-off); for the semi-implicit family it is the family's Monte Carlo marginal."""
    fitted = jaxsamp.fit("elbo", TARGET, num_steps=30, key=0, batch_size=8, progress=False, **GAUSSIAN_Q)
    samples = fitted.sample(1, 64)
    weights = jax.vmap(TARGET.log_prob)(samples.x) - log_q("elbo", fitted.settings, fitted.state, samples.x)
    np.testing.assert_allclose(weights, samples.log_w, rtol=0, atol=1e-5)
    settings = bsivi.BSIVISettings(**BSIVI)
    state = bsivi.build(TARGET, settings).init(jax.random.key(0))
    family = SemiImplicitFamily(2, settings)
    np.testing.assert_array_equal(log_q("bsivi", settings, state, samples.x, jax.random.key(3)),
                                  family.marginal_log_density(jax.random.key(3), state.phi, samples.x, 256))
    with pytest.raises(InputError, match="give a key"):
        log_q("bsivi", settings, state, samples.x)
    with pytest.raises(InputError, match="got 'pis'"):
        log_q("pis", fitted.settings, fitted.state, samples.x)


def test_draws_are_the_fitted_samples_without_their_weights():
    """``density.draws`` at a key gives the points ``fitted.sample`` draws at that key for an explicit family, and the
    semi-implicit family's ``draw`` (``fitted.sample`` splits its key for the inner draws of the weights)."""
    fitted = jaxsamp.fit("elbo", TARGET, num_steps=5, key=0, batch_size=8, progress=False, **GAUSSIAN_Q)
    np.testing.assert_array_equal(draws("elbo", fitted.settings, fitted.state, jax.random.key(1), 32, 2),
                                  fitted.sample(jax.random.key(1), 32).x)
    settings = bsivi.BSIVISettings(**BSIVI)
    state = bsivi.build(TARGET, settings).init(jax.random.key(0))
    z = draws("bsivi", settings, state, jax.random.key(2), 32, 2)
    np.testing.assert_array_equal(z, SemiImplicitFamily(2, settings).draw(jax.random.key(2), state.phi, 32)[1])
    assert z.shape == (32, 2) and np.all(np.isfinite(z))
    with pytest.raises(InputError, match="got 'pis'"):
        draws("pis", settings, state, jax.random.key(2), 32, 2)


def test_aisivi_judges_its_loss_after_pretraining_and_its_reverse_model():
    """AISIVI's declared health: the NaN loss of the pretraining steps (no q update) is not judged, a NaN after is;
    an inner ESS at its floor 1/K over the last tenth is a collapsed reverse model. BSIVI judges every step."""
    from jaxsamp.learned.fit import training_warnings

    rules = aisivi.build(TARGET, aisivi.AISIVISettings(**AISIVI)).health  # pretrain_steps 10
    loss = np.r_[np.full(10, np.nan), np.ones(30)]
    assert training_warnings({"loss": loss, "inner_ess": np.full(40, 0.5)}, rules) == []
    loss[-1] = np.nan
    (nan,) = training_warnings({"loss": loss, "inner_ess": np.full(40, 0.5)}, rules)
    assert nan.startswith("the training loss was NaN/inf at 1 of 30 steps")
    (collapsed,) = training_warnings({"loss": np.ones(40), "inner_ess": np.full(40, 1 / 16)}, rules)
    assert "reverse model" in collapsed
    baseline = bsivi.build(TARGET, bsivi.BSIVISettings(**BSIVI)).health
    assert "at 10 of 40 steps" in training_warnings({"loss": np.r_[np.full(10, np.nan), np.ones(30)]}, baseline)[0]
