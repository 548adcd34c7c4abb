"""AISIVI and BSIVI: the score's Gaussian oracle, fits with a closed-form KL and on SIVI's toys, non-finite guards."""

import distrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import jaxsamp
from jaxsamp.core.errors import InputError
from jaxsamp.core.target import from_function
from jaxsamp.diagnostics.grid_divergences import forward_kl_on_grid
from jaxsamp.learned.vi import aisivi, bsivi
from jaxsamp.learned.vi.aisivi import AISIVISettings
from jaxsamp.learned.vi.bsivi import BSIVISettings
from jaxsamp.learned.vi.families import inverse_softplus
from jaxsamp.learned.vi.semi_implicit import SemiImplicit, SemiImplicitFamily

METHODS = {"aisivi": aisivi, "bsivi": bsivi}
SETTINGS = {"aisivi": AISIVISettings, "bsivi": BSIVISettings}
REVERSE_MODEL = ("tau_layers", "tau_hidden_width", "tau_hidden_layers", "tau_max_log_scale", "pretrain_steps",
                 "tau_learning_rate")


def settings_of(method: str, **values):
    """``method``'s settings from ``values``, leaving out the reverse model's for BSIVI (it has none)."""
    return SETTINGS[method](**{k: v for k, v in values.items() if method == "aisivi" or k not in REVERSE_MODEL})


def numerics(method: str, target, settings, batch_size: int = 128) -> SemiImplicit:
    """The numerics of ``method`` (what its ``build`` makes a LearnedSampler of)."""
    return SemiImplicit(method, target, settings, batch_size, reverse_model=method == "aisivi")


def _linear_phi(family, key, weight, bias, scale):
    """Parameters of an affine mean network ``mu(eps) = weight @ eps + bias`` with ``s = scale``."""
    module = family.conditional(family.init(key))
    layer = module.mean.layers[0]
    layer.kernel.value, layer.bias.value = jnp.asarray(weight.T), jnp.asarray(bias)
    module.raw_scale.value = inverse_softplus(jnp.asarray(scale))
    return nnx.split(module)[1]


def _gaussian_q(family, phi):
    """``q(z) = N(b, A A^T + diag(s^2))`` of an affine mean network and ``eps ~ N(0, I)``."""
    module = family.conditional(phi)
    a, b = module.mean.layers[0].kernel[...].T, module.mean.layers[0].bias[...]
    return distrax.MultivariateNormalFullCovariance(b, a @ a.T + jnp.diag(jax.nn.softplus(module.raw_scale[...]) ** 2))


def test_gaussian_oracle_weights_equal_q_and_the_score_estimate_is_unbiased():
    """mu(eps) = A eps + b, eps ~ N(0, I_3), tau = the exact q(eps | z) = N(m(z), C): every w_k = q(z).

    Float64. The weights equal log q(z) = log N(z; b, A A^T + S^2) to 1e-9 (zero variance).
    With equal weights s_hat = -S^-2 (z - A mean_k(eps_k) - b), checked to 1e-9; its error
    against the exact score -(A A^T + S^2)^-1 (z - b) is S^-2 A (mean(eps) - m), Gaussian with
    covariance S^-2 A C A^T S^-2 / K, and each coordinate lies within 5 sd (K = 4096, seed 0).
    """
    with jax.enable_x64(True):
        rng = np.random.default_rng(0)
        weight, bias, scale = rng.normal(size=(2, 3)), rng.normal(size=2), np.array([0.5, 0.8])
        sampler = numerics("aisivi", jaxsamp.targets.get("gaussian", dim=2), AISIVISettings(latent_dim=3, hidden_layers=0))
        phi = _linear_phi(sampler.family, jax.random.key(0), weight, bias, scale)
        z = np.array([0.3, -1.2])

        inv_s2 = np.diag(scale**-2.0)
        c = np.linalg.inv(np.eye(3) + weight.T @ inv_s2 @ weight)
        m = c @ weight.T @ inv_s2 @ (z - bias)

        @jax.jit
        def estimates(phi, z, m, c):
            exact_tau = distrax.MultivariateNormalFullCovariance(m, c)
            eps, log_tau = exact_tau.sample_and_log_prob(seed=jax.random.key(1), sample_shape=(4096,))
            log_w = sampler.log_weights(phi, z, eps, log_tau)
            return eps, log_w, sampler.score_estimate(phi, z, eps, log_w), _gaussian_q(sampler.family, phi).log_prob(z)

        eps, log_w, s_hat, log_q = estimates(phi, jnp.asarray(z), jnp.asarray(m), jnp.asarray(c))
        np.testing.assert_allclose(log_w, float(log_q), rtol=0, atol=1e-9)

        s_hat = np.asarray(s_hat)
        eps_mean = np.asarray(eps).mean(0)
        np.testing.assert_allclose(s_hat, -inv_s2 @ (z - weight @ eps_mean - bias), rtol=0, atol=1e-9)
        exact_score = -np.linalg.solve(weight @ weight.T + np.diag(scale**2), z - bias)
        sd = np.sqrt(np.diag(inv_s2 @ weight @ c @ weight.T @ inv_s2) / 4096)
        assert np.all(np.abs(s_hat - exact_score) < 5 * sd)


@pytest.mark.parametrize(("method", "bound"), [("aisivi", 1e-3), ("bsivi", 0.05)])
def test_semi_implicit_gaussian_fits_a_correlated_gaussian(method, bound):
    """Affine mu, eps ~ N(0, I_2), target N([1, -1], rho = 0.8): q is Gaussian, so KL(q || p) is closed form.

    From KL 9.2, 600 steps (batch 64, K = 32, 50 pretraining steps of tau for AISIVI).
    Budget at seed 0: AISIVI's weights become nearly uniform as tau learns q(eps | z), its
    path gradient then vanishes at q = p and the KL falls to 7e-6; 1e-3 is the bound.
    BSIVI's prior proposals (after z's own latent) leave a noisier score (inner ESS ~0.37),
    KL 0.0025; bound 0.05 (without the own latent it reached only 0.096). AISIVI's weighted samples (log q by
    the K-draw estimate) give log Z within 0.05 of the exact 1.327 (256 draws).
    """
    target = jaxsamp.targets.get("gaussian", dim=2, correlation=0.8, mean=[1.0, -1.0])
    settings = settings_of(method, latent_dim=2, hidden_layers=0, num_inner=32, tau_layers=2, tau_hidden_width=16,
                           pretrain_steps=50)
    sampler = METHODS[method].build(target, settings, batch_size=64)
    state = sampler.init(jax.random.key(0))
    final, _ = jaxsamp.run(sampler.step, state, jax.random.key(1), 600, progress=False)
    p = distrax.MultivariateNormalFullCovariance(target.mean, target.cov)
    family = SemiImplicitFamily(2, settings)
    assert float(_gaussian_q(family, state.phi).kl_divergence(p)) > 9.0
    assert float(_gaussian_q(family, final.phi).kl_divergence(p)) < bound
    if method == "aisivi":
        samples = jax.jit(sampler.sample, static_argnums=2)(jax.random.key(2), final, 256)
        assert abs(float(samples.log_Z) - target.log_Z) < 0.05


def test_bad_aisivi_settings_and_targets_are_clear_input_errors():
    with pytest.raises(InputError, match="batch_size must be >= 1"):
        bsivi.build(jaxsamp.targets.get("banana"), batch_size=0)
    with pytest.raises(InputError, match="latent_dim must be >= 2"):
        AISIVISettings(latent_dim=1)
    with pytest.raises(InputError, match="latent_dim must be >= 2"):
        BSIVISettings(latent_dim=1)
    with pytest.raises(InputError, match="real-valued"):
        aisivi.build(jaxsamp.targets.get("ising", L=2, beta=0.4))
    with pytest.raises(TypeError, match="tau_layers"):  # BSIVI has no reverse model to set
        BSIVISettings(tau_layers=2)
    with pytest.raises(InputError, match="settings must be a BSIVISettings, got AISIVISettings"):
        bsivi.build(jaxsamp.targets.get("banana"), AISIVISettings())


def test_the_reference_scale_parameterisation_starts_at_a_tenth_of_softplus_one():
    """scale_factor 0.1 and init_scale 0.1 softplus(1) (configs/aisivi_banana.yaml): the raw parameter starts at the
    reference code's 1 and s = 0.1 softplus(v) there and after v moves, with ds/dv = 0.1 sigmoid(v); the default
    keeps s = softplus(v) from init_scale."""
    family = SemiImplicitFamily(2, BSIVISettings(latent_dim=2, hidden_width=8, init_scale=0.1 * float(jax.nn.softplus(1.0)),
                                                 scale_factor=0.1))
    module = family.conditional(family.init(jax.random.key(0)))
    np.testing.assert_allclose(module.raw_scale[...], [1.0, 1.0], rtol=1e-5)
    np.testing.assert_allclose(module.scale(), 0.1 * jax.nn.softplus(module.raw_scale[...]), rtol=1e-6)
    np.testing.assert_allclose(module.scale(), [0.1313262, 0.1313262], rtol=1e-5)
    module.raw_scale.value = jnp.asarray([-0.5, 2.0])
    eps = jnp.zeros((3, 2))
    np.testing.assert_allclose(module(eps).stddev(), jnp.broadcast_to(0.1 * jax.nn.softplus(jnp.asarray([-0.5, 2.0])), (3, 2)),
                               rtol=1e-6)
    phi = nnx.split(module)[1]
    slope = family.conditional(jax.grad(lambda p: jnp.sum(family.conditional(p).scale()))(phi)).raw_scale[...]
    np.testing.assert_allclose(slope, 0.1 * jax.nn.sigmoid(jnp.asarray([-0.5, 2.0])), rtol=1e-5)
    default = SemiImplicitFamily(2, BSIVISettings(latent_dim=2, hidden_width=8, init_scale=0.7))
    plain = default.conditional(default.init(jax.random.key(0)))
    np.testing.assert_allclose(plain.scale(), [0.7, 0.7], rtol=1e-5)
    np.testing.assert_allclose(plain.scale(), jax.nn.softplus(plain.raw_scale[...]), rtol=1e-6)
    with pytest.raises(InputError, match="scale_factor must be > 0"):
        AISIVISettings(scale_factor=0.0)


def test_tau_hidden_layers_sets_the_depth_of_the_reverse_models_conditioners():
    """The reference code's reverse model: conditioners of one hidden layer (8 units on the 2-D toys); the default keeps
    two. The parameters show the depth: one hidden layer is two dense layers per coupling."""
    target = jaxsamp.targets.get("banana")
    for layers in (1, 2):
        sampler = numerics("aisivi", target, AISIVISettings(latent_dim=2, hidden_width=8, tau_layers=3,
                                                            tau_hidden_width=8, tau_hidden_layers=layers))
        assert sampler.tau_family.hidden == (8,) * layers
        conditioner = sampler.tau_family.module(sampler.init(jax.random.key(0)).psi).conditioners[0]
        assert len(conditioner.layers) == layers + 1
    assert AISIVISettings().tau_hidden_layers == 2
    with pytest.raises(InputError, match="tau_hidden_layers must be >= 1"):
        AISIVISettings(tau_hidden_layers=0)


def test_marginal_log_density_of_an_affine_family_is_its_gaussian():
    """mu(eps) = A eps + b: q(z) = N(b, A A^T + S^2) in closed form.

    The estimate is a mean of M = 50 000 values q(z | eps_m) (then its log): each point's
    error must lie within 5 of its own relative standard errors sd_m[q(z | eps_m)] / (mean sqrt(M)),
    computed here from the same prior draws.
    """
    rng = np.random.default_rng(1)
    weight, bias, scale = rng.normal(size=(2, 3)), rng.normal(size=2), np.array([0.7, 0.9])
    family = SemiImplicitFamily(2, BSIVISettings(latent_dim=3, hidden_layers=0))
    phi = _linear_phi(family, jax.random.key(0), weight, bias, scale)
    exact = _gaussian_q(family, phi)
    z = np.asarray(exact.sample(seed=jax.random.key(2), sample_shape=(20,)), np.float64)
    key, m = jax.random.key(3), 50_000
    estimate = jax.jit(family.marginal_log_density, static_argnums=(3, 4))(key, phi, jnp.asarray(z, jnp.float32), m, 16)
    eps = np.asarray(family.epsilon_prior.sample(seed=key, sample_shape=(m,)), np.float64)
    conditional = np.exp(-0.5 * np.sum(((z[:, None] - (eps @ weight.T + bias)[None]) / scale) ** 2, -1)) / (
        2 * np.pi * np.prod(scale))
    relative_se = conditional.std(1) / conditional.mean(1) / np.sqrt(m)
    error = np.abs(np.asarray(estimate) - np.asarray(exact.log_prob(z)))
    assert np.all(error < 5 * relative_se + 1e-4), (error, relative_se)  # 1e-4: float32 rounding of the log


def test_bsivi_inner_draws_start_with_the_latent_that_generated_z():
    """BSIVI is SIVI's estimate: eps_1 is z's own latent, the rest prior draws; with K = 1 the score is in closed form.

    K = 1: s_hat = grad_z log N(z; mu(eps), s^2) = -(z - mu(eps)) / s^2 and log w = log N(z; mu(eps), s^2).
    """
    def sampler(k):
        return numerics("bsivi", jaxsamp.targets.get("banana"), BSIVISettings(latent_dim=2, hidden_width=8, num_inner=k))

    @jax.jit
    def inner(phi):
        eps_z, z = sampler(1).family.draw(jax.random.key(1), phi, 1)
        eps, log_w = sampler(1).inner_draws(jax.random.key(2), phi, None, z[0], eps_z[0])
        conditional = sampler(1).family.conditional(phi)(eps_z[0])
        exact_score = -(z[0] - conditional.mean()) / conditional.stddev() ** 2
        score = sampler(1).score_estimate(phi, z[0], eps, log_w)
        return eps_z[0], eps, log_w, conditional.log_prob(z[0]), score, exact_score, sampler(5).inner_draws(
            jax.random.key(2), phi, None, z[0], eps_z[0])

    own, eps, log_w, log_q_own, score, exact_score, (eps5, log_w5) = inner(sampler(1).init(jax.random.key(0)).phi)
    np.testing.assert_array_equal(eps, own[None])
    np.testing.assert_allclose(log_w, [log_q_own], rtol=1e-6)
    np.testing.assert_allclose(score, exact_score, rtol=1e-5)
    assert eps5.shape == (5, 2) and log_w5.shape == (5,)
    np.testing.assert_array_equal(eps5[0], own)
    assert np.all(np.asarray(eps5[1:]) != np.asarray(own))


def test_reverse_flow_with_runaway_scales_still_gives_finite_draws_and_weights():
    """tau's six couplings all output log-scale 40: unclamped that scales eps by e^120 (inf in float32).

    This is how the toy benchmark's AISIVI failed: one inf draw gave a NaN log weight, a NaN
    score estimate and NaN parameters forever. Clamped (tau_max_log_scale = 3), the draws, their
    log weights, the score estimate and the next step's parameters are all finite.
    """
    sampler = numerics("aisivi", jaxsamp.targets.get("banana"),
                       AISIVISettings(latent_dim=2, hidden_width=8, num_inner=16, tau_layers=6, tau_hidden_width=4,
                                      pretrain_steps=0), batch_size=8)
    state = sampler.init(jax.random.key(0))
    module = sampler.tau_family.module(state.psi)
    for conditioner in module.conditioners:
        last = conditioner.layers[-1]
        last.kernel[...] = jnp.zeros_like(last.kernel[...])
        last.bias[...] = jnp.tile(jnp.array([0.0, 40.0]), 2)
    psi = nnx.split(module)[1]

    @jax.jit
    def inner(phi, psi):
        eps_z, z = sampler.family.draw(jax.random.key(1), phi, 1)
        eps, log_w = sampler.inner_draws(jax.random.key(2), phi, psi, z[0], eps_z[0])
        return eps, log_w, sampler.score_estimate(phi, z[0], eps, log_w)

    assert all(np.all(np.isfinite(np.asarray(a))) for a in inner(state.phi, psi))
    new, metrics = jax.jit(sampler.step)(jax.random.key(3), state._replace(psi=psi))
    assert all(np.all(np.isfinite(np.asarray(leaf))) for leaf in jax.tree.leaves((new.phi, new.psi)))
    assert int(metrics["skipped_updates"]) == 0


def test_a_non_finite_gradient_skips_its_update_and_is_counted():
    """A target whose score is NaN on half the plane: the phi update is skipped (parameters unchanged) and counted."""

    def log_prob(x):
        return -0.5 * jnp.sum(x**2) + jnp.sqrt(x[0])

    target = from_function(log_prob, np.zeros(2, np.float32))
    sampler = aisivi.build(target, AISIVISettings(latent_dim=2, hidden_width=8, num_inner=8, tau_layers=2,
                                                  tau_hidden_width=4, pretrain_steps=0), batch_size=16)
    state = sampler.init(jax.random.key(0))
    new, metrics = jax.jit(sampler.step)(jax.random.key(1), state)
    assert int(metrics["skipped_updates"]) == 1 and int(metrics["skipped_tau_updates"]) == 0
    for before, after in zip(jax.tree.leaves(state.phi), jax.tree.leaves(new.phi)):
        np.testing.assert_array_equal(before, after)
    assert any(np.any(b != a) for b, a in zip(jax.tree.leaves(state.psi), jax.tree.leaves(new.psi)))


def test_step_decay_scales_both_updates_at_decay_step_past_pretraining():
    """decay_step 2 after 3 pretraining steps: steps 0-4 match a constant-rate run bit for bit; at step 5
    (the third phi update, the sixth psi update) both Adam updates are decay_factor x the constant-rate ones:
    psi's element by element (same gradient, same moments), phi's in norm per parameter array to 2 % (its
    gradient sees the step's updated tau, which differs slightly between the runs); a missing or misplaced
    drop is off by 4x."""
    target = jaxsamp.targets.get("gaussian", dim=2)
    common = {"latent_dim": 2, "hidden_width": 8, "num_inner": 8, "tau_layers": 2, "tau_hidden_width": 4,
              "pretrain_steps": 3}
    constant, decayed = (aisivi.build(target, AISIVISettings(**common, **extra), batch_size=16)
                         for extra in ({}, {"decay_step": 2, "decay_factor": 0.25}))
    state, state_decayed = constant.init(jax.random.key(0)), decayed.init(jax.random.key(0))
    step_constant, step_decayed = jax.jit(constant.step), jax.jit(decayed.step)
    for i in range(5):
        key = jax.random.key(10 + i)
        (state, _), (state_decayed, _) = step_constant(key, state), step_decayed(key, state_decayed)
        jax.tree.map(np.testing.assert_array_equal, (state.phi, state.psi), (state_decayed.phi, state_decayed.psi))
    key = jax.random.key(15)
    (plain, _), (scaled, _) = step_constant(key, state), step_decayed(key, state_decayed)
    for part in ("phi", "psi"):
        start, full, small = (jax.tree.leaves(getattr(s, part)) for s in (state, plain, scaled))
        for a, b, c in zip(start, full, small):
            if part == "psi":
                np.testing.assert_allclose(c - a, 0.25 * (b - a), rtol=1e-3, atol=1e-7)
            else:
                assert abs(np.linalg.norm(c - a) / np.linalg.norm(b - a) - 0.25) < 0.005
        assert any(np.any(b != a) for a, b in zip(start, full))


@pytest.mark.parametrize(("method", "target_name", "extent", "settings", "untrained_fails"), [
    ("bsivi", "x_shaped", (-5.0, 5.0, -5.0, 5.0), {"num_inner": 16}, False),
    ("aisivi", "banana", (-4.0, 4.0, -12.0, 3.0), {"num_inner": 32, "tau_layers": 4}, True),
])
def test_semi_implicit_fits_of_sivi_toys_keep_their_mass_on_the_target(method, target_name, extent, settings,
                                                                       untrained_fails):
    """SIVI's toys (exact log Z = 0): after 1500 steps (2-d latent, 2 x 32 mean network, batch 64) q covers the target.

    Forward KL(p || q) by a 100^2 midpoint rule on a box holding 99.8 % of p, log q by
    4000 prior draws. Budget from seeds 0, 1, 2: BSIVI on the x-shape 0.95 / 1.01 / 1.09, AISIVI
    on the banana 0.73 / 0.98 / 0.34; the bound is 1.25, with q_mass > 0.99. Before BSIVI held
    z's own latent among its inner draws, its q left the box (q_mass 0.0005 / 0.54 / 0.0,
    forward KL 22 / 3.4 / 43). On the banana the untrained q (the same key, no update) is at
    forward KL 3.9, so a training that does nothing fails the bound; on the x-shape the
    untrained q, broad, already covers the target (0.68: forward KL rewards covering), so there
    this test guards coverage only and BSIVI's training is held by
    ``tests/learned/test_training_is_not_a_no_op.py`` (ELBO gap 2.5-3.6 frozen, at most 0.47 trained).
    """
    target = jaxsamp.targets.get(target_name)
    settings = settings_of(method, latent_dim=2, hidden_width=32, tau_hidden_width=16, pretrain_steps=20, **settings)
    sampler = METHODS[method].build(target, settings, batch_size=64)
    initial = jax.jit(sampler.init)(jax.random.key(0))
    state, trace = jaxsamp.run(sampler.step, initial, jax.random.key(1), 1500,
                               progress=False, trace=lambda s, m: m["skipped_updates"])
    family = SemiImplicitFamily(2, settings)
    log_p = jax.jit(jax.vmap(target.log_prob))

    def forward_kl(phi) -> dict:
        log_q = jax.jit(lambda z: family.marginal_log_density(jax.random.key(2), phi, z, 4000))
        return forward_kl_on_grid(log_p, log_q, extent, 100)

    figures = forward_kl(state.phi)
    assert figures["p_mass"] > 0.997 and int(trace[-1]) == 0
    assert figures["q_mass"] > 0.99 and figures["forward_kl"] < 1.25, figures
    if untrained_fails:
        assert forward_kl(initial.phi)["forward_kl"] > 1.25


@pytest.mark.parametrize("method", ["aisivi", "bsivi"])
def test_the_uniform_latent_prior_keeps_every_draw_and_proposal_in_the_unit_cube(method):
    """``latent_prior="uniform"`` (the reference code's ``U[0, 1]^d``): the model's latents, AISIVI's reverse-model
    proposals (a sigmoid-terminated flow) and BSIVI's prior draws lie in the open unit cube, their log weights are
    finite and a training step stays finite; the reverse model's density is the flow's changed by the sigmoid."""
    target = jaxsamp.targets.get("banana")
    settings = settings_of(method, latent_dim=2, hidden_width=8, num_inner=32, tau_layers=2, tau_hidden_width=8,
                           latent_prior="uniform", pretrain_steps=0)
    sampler = numerics(method, target, settings, batch_size=16)
    state = jax.jit(sampler.init)(jax.random.key(0))
    eps_z, z = sampler.family.draw(jax.random.key(1), state.phi, 16)
    assert bool(jnp.all((eps_z >= 0) & (eps_z < 1)))
    eps, log_w = sampler.inner_draws(jax.random.key(2), state.phi, state.psi, z[0], eps_z[0])
    assert eps.shape == (32, 2) and bool(jnp.all((eps > 0) & (eps < 1))) and bool(jnp.all(jnp.isfinite(log_w)))
    if method == "aisivi":
        u = jnp.asarray([0.2, 0.7])
        logit = jnp.log(u) - jnp.log1p(-u)
        by_hand = sampler.tau_family.module(state.psi)(z[0]).log_prob(logit) - jnp.sum(jnp.log(u * (1 - u)))
        np.testing.assert_allclose(sampler.reverse_model(state.psi, z[0]).log_prob(u), by_hand, rtol=1e-5)
    state, metrics = jax.jit(sampler.step)(jax.random.key(3), state)
    assert all(bool(jnp.isfinite(metrics[k])) for k in ("elbo", "inner_ess"))
    with pytest.raises(InputError, match="latent_prior"):
        AISIVISettings(latent_prior="cauchy")
