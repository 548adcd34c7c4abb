"""PIS and DDS: short trainings with each loss improve on the untrained sampler; the evaluation protocol; resume.

Target: ``N((1, -1), 0.5^2 I)`` in 2-D, exact log Z. Error budgets: a log Z
estimate from ``n`` importance weights has a standard error of about
``sqrt((1/ESS - 1) / n)``; the checks use 5 of them.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _resume_checks import assert_resumes_bit_identical

import jaxsamp.targets
from jaxsamp.core import run
from jaxsamp.core.errors import InputError
from jaxsamp.learned.diffusion import sde
from jaxsamp.learned.diffusion.pis_dds import DdsSettings, PisDds, PisSettings, build_dds, build_pis

TARGET = jaxsamp.targets.get("gaussian", dim=2, mean=[1.0, -1.0], scale=0.5)
N_EVAL = 2000


def _budget(ess: float) -> float:
    return 5.0 * np.sqrt((1.0 / max(ess, 1e-3) - 1.0) / N_EVAL)


@pytest.mark.parametrize("method, loss", [("pis", "kl"), ("dds", "log_variance"), ("pis", "trajectory_balance")])
def test_short_training_improves_on_the_untrained_sampler(method, loss):
    """150 steps of 128 paths, 16 SDE steps: the ELBO rises by more than 0.5, the ESS at least doubles, log Z is within budget.

    ELBO <= log Z <= EUBO up to 0.02 of Monte Carlo slack. (Measured: PIS-KL ELBO
    -1.42 -> 0.27 and ESS 0.16 -> 0.75; DDS from an ELBO of -3e4 and an ESS of 3e-4.)
    """
    common = dict(loss=loss, num_time_steps=16, hidden=32, learning_rate=2e-3, log_z_learning_rate=5e-2)
    settings = PisSettings(**common, max_diffusion=4.0) if method == "pis" else DdsSettings(**common)
    sampler = PisDds(TARGET, settings, batch_size=128)
    state = sampler.init(jax.random.key(0))
    before = sampler.evaluate(jax.random.key(1), state, N_EVAL, sinkhorn=False)
    state, trace = run(sampler.step, state, jax.random.key(2), 150, trace=lambda s, m: m, progress=False)
    after = sampler.evaluate(jax.random.key(1), state, N_EVAL, sinkhorn=False)
    assert after["elbo"] > before["elbo"] + 0.5 and after["ess"] > 2 * before["ess"], (before, after)
    assert after["log_Z_abs_err"] < _budget(after["ess"]) + 0.02, after
    assert after["elbo"] < TARGET.log_Z + 0.02 and after["eubo"] > TARGET.log_Z - 0.02, after
    assert int(state.energy_evals) == 150 * 128 * sampler.evals_per_path == int(trace["target_evals"][-1])
    if loss == "trajectory_balance":  # the learned log Z moves to log Z
        assert abs(float(state.log_z) - TARGET.log_Z) < 0.3, float(state.log_z)


def test_evaluation_protocol_bounds_and_mode_coverage():
    """ELBO < log Z < EUBO, log Z within budget, before and after 200 updates, and the sandwich narrows; EMC on a
    4-mode mixture.

    The bounds hold for any proposal; what tells a trained one from an untrained one is their gap EUBO - ELBO
    (the sum of both KLs between the path measures): 2.97 untrained (the untrained drift is zero, whatever the
    key), 0.62, 0.77, 0.66 after 200 updates of 8 paths at training keys 0, 1, 2 (measured); it must halve.
    """
    sampler = build_pis(TARGET, PisSettings(num_time_steps=16, hidden=16), batch_size=8)
    untrained = sampler.init(jax.random.key(0))
    out = sampler.evaluate(jax.random.key(3), untrained, 500)  # with the Sinkhorn divergence
    assert out["elbo"] < TARGET.log_Z < out["eubo"], out
    assert out["log_Z_abs_err"] < 5.0 * np.sqrt((1.0 / out["ess"] - 1.0) / 500), out
    assert out["nonfinite_samples"] == 0 and out["sinkhorn"] >= 0
    trained, _ = run(sampler.step, untrained, jax.random.key(10), 200, progress=False)
    after = sampler.evaluate(jax.random.key(3), trained, 500, sinkhorn=False)
    assert after["elbo"] < TARGET.log_Z < after["eubo"], after
    assert after["eubo"] - after["elbo"] < 0.5 * (out["eubo"] - out["elbo"]), (out, after)
    mixture = jaxsamp.targets.get("gaussian_mixture", means=[[-3.0, 0.0], [3.0, 0.0], [0.0, 3.0], [0.0, -3.0]])
    dds = build_dds(mixture, DdsSettings(num_time_steps=16, hidden=16, init_std=3.0), batch_size=8)
    mix = dds.evaluate(jax.random.key(4), dds.init(jax.random.key(0)), 1000, sinkhorn=False)
    assert 0.0 <= mix["emc"] <= 1.0 and 1 <= mix["modes_visited"] <= 4


def test_a_non_finite_batch_skips_its_update_instead_of_poisoning_the_network():
    """A density (and score) that is NaN on half the plane: its NaN gradients are skipped, the parameters stay unchanged."""
    from jaxsamp.core.target import from_function

    def log_prob(x):
        return -0.5 * jnp.sum(x**2) + jnp.sqrt(x[0])

    sampler = build_pis(from_function(log_prob, np.zeros(2, np.float32)), PisSettings(num_time_steps=8, hidden=16),
                        batch_size=64)
    state = sampler.init(jax.random.key(0))
    new, metrics = jax.jit(sampler.step)(jax.random.key(1), state)
    assert not np.isfinite(float(metrics["loss"])) and int(metrics["skipped_updates"]) == 1
    for before, after in zip(jax.tree.leaves(state.params), jax.tree.leaves(new.params)):
        np.testing.assert_array_equal(before, after)


# --------------------------------------------------------------------------
# the KL loss without the stochastic Girsanov term (kl_stochastic_term=False)
# --------------------------------------------------------------------------

N_KEYS, KL_BATCH = 32, 64


@pytest.fixture(scope="module")
def kl_variants():
    """Both KL losses at one perturbed, untrained PIS network on the 2-D Gaussian: per key (32 keys of 64 paths),
    the loss, its gradient (flattened) and the batch's paths' stochastic terms."""
    samplers = {keep: PisDds(TARGET, PisSettings(num_time_steps=16, hidden=32, kl_stochastic_term=keep), batch_size=KL_BATCH)
                for keep in (True, False)}
    params = samplers[True].init(jax.random.key(0)).params
    leaves, tree = jax.tree.flatten(params)
    noise = jax.random.split(jax.random.key(7), len(leaves))  # the network is no longer at its initial values
    params = jax.tree.unflatten(tree, [p + 0.05 * jax.random.normal(k, p.shape) for p, k in zip(leaves, noise)])
    keys = jax.random.split(jax.random.key(1), N_KEYS)
    out = {"params": params}
    for keep, sampler in samplers.items():
        loss_and_grad = jax.value_and_grad(lambda p, k, s=sampler: s.loss(p, jnp.zeros(()), k)[0])
        loss, grads = jax.jit(jax.vmap(loss_and_grad, in_axes=(None, 0)))(params, keys)
        out[keep] = (np.asarray(loss), np.concatenate([np.asarray(g).reshape(N_KEYS, -1) for g in jax.tree.leaves(grads)], 1))
    sampler = samplers[True]
    paths = jax.jit(jax.vmap(lambda k: sde.simulate(sampler.chain, sampler.control(params), sampler.space, k, KL_BATCH)))(keys)
    out["stochastic"] = np.asarray(paths.stochastic)
    out["samplers"] = samplers
    return out


def test_dropping_the_stochastic_term_keeps_the_kl_loss_and_its_gradient_in_expectation(kl_variants):
    """The paired difference of the two losses, over 2048 paths, and of their gradients along a fixed direction, over
    32 keys, are zero within 5 standard errors.

    Per key the difference is exactly the mean of the batch's stochastic terms (measured: mean 0.071, sd 2.4 per
    path, so z = 1.3 against the budget of 5; the gradient projection's z is -0.5). A term with a mean as large
    as its budget (0.26 nats, a tenth of its spread) would fail: a sign error or a term correlated with the
    step's noise does. The direction is random with a fixed seed.
    """
    (loss_with, grad_with), (loss_without, grad_without) = kl_variants[True], kl_variants[False]
    stochastic = kl_variants["stochastic"]
    np.testing.assert_allclose(loss_with - loss_without, stochastic.mean(1), atol=1e-4)
    per_path = stochastic.ravel()
    assert per_path.std() > 1.0, per_path.std()  # the term is not trivially zero
    assert abs(per_path.mean()) < 5 * per_path.std() / np.sqrt(per_path.size), (per_path.mean(), per_path.std())
    direction = np.random.default_rng(0).standard_normal(grad_with.shape[1])
    along = (grad_with - grad_without) @ direction
    assert abs(along.mean()) < 5 * along.std(ddof=1) / np.sqrt(N_KEYS), (along.mean(), along.std())


def test_dropping_the_stochastic_term_lowers_the_kl_gradient_variance(kl_variants):
    """Total gradient variance over the 32 keys: measured ratio 0.22 (without / with the term) at this network;
    asserted < 0.5."""
    ratio = kl_variants[False][1].var(0).sum() / kl_variants[True][1].var(0).sum()
    assert ratio < 0.5, ratio


def test_evaluation_and_metric_weights_do_not_depend_on_the_kl_training_option(kl_variants):
    """``sample`` and the step's ``elbo`` / ``log_Z_hat`` / ``ess`` use the exact path weights under either option;
    only ``loss`` (and the update) differs."""
    params, (keep, drop) = kl_variants["params"], (kl_variants["samplers"][k] for k in (True, False))
    state = keep.init(jax.random.key(0))._replace(params=params)
    np.testing.assert_array_equal(keep.sample(jax.random.key(5), state, 256).log_w,
                                  drop.sample(jax.random.key(5), state, 256).log_w)
    (_, kept), (_, dropped) = (jax.jit(s.step)(jax.random.key(6), state) for s in (keep, drop))
    for name in ("elbo", "log_Z_hat", "ess"):
        np.testing.assert_array_equal(kept[name], dropped[name], err_msg=name)
    assert kept["loss"] != dropped["loss"]


def test_settings_and_targets_are_checked():
    with pytest.raises(InputError, match="loss must be one of 'kl', 'log_variance', 'trajectory_balance'"):
        PisSettings(loss="elbo")
    with pytest.raises(InputError, match="num_time_steps must be >= 1"):
        DdsSettings(num_time_steps=0)
    with pytest.raises(InputError, match="kl_stochastic_term=False applies to the 'kl' loss only"):
        PisSettings(loss="log_variance", kl_stochastic_term=False)
    with pytest.raises(TypeError, match="init_std"):  # each method's settings hold its own scale only
        PisSettings(init_std=2.0)
    with pytest.raises(InputError, match="needs a real-valued target"):
        build_pis(jaxsamp.targets.get("ising", L=3, beta=0.3))
    with pytest.raises(InputError, match="settings must be a DdsSettings, got PisSettings"):
        build_dds(TARGET, PisSettings())
    with pytest.raises(InputError, match="batch_size must be >= 1"):
        build_dds(TARGET, batch_size=0)
    with pytest.raises(InputError, match="evaluate takes no option sinkhorn_size"):
        sampler = build_dds(TARGET, DdsSettings(num_time_steps=2, hidden=4), batch_size=2)
        sampler.evaluate(jax.random.key(0), sampler.init(jax.random.key(0)), 8, sinkhorn_size=8)


def test_stopped_training_run_resumes_bit_identically(tmp_path):
    """A checkpointed DDS run (trajectory balance), stopped half way, resumes bit for bit.

    A small network and 8 SDE steps on a 2-D Gaussian; the whole train state
    (network, learned log Z, both Adam states, counters) has to round-trip through
    the checkpoint.
    """
    settings = DdsSettings(loss="trajectory_balance", num_time_steps=8, hidden=8, num_layers=1, learning_rate=1e-3)
    sampler = build_dds(jaxsamp.targets.get("gaussian", dim=2), settings, batch_size=16)
    assert_resumes_bit_identical(sampler.step, sampler.init(jax.random.key(0)), 24, 4, tmp_path, min_arrays=10)


def test_fit_takes_the_sde_steps_beside_its_training_updates():
    """``num_time_steps`` is the SDE's, ``num_steps`` :func:`jaxsamp.fit`'s training updates: one call sets both.

    Each update simulates ``batch_size`` paths of ``num_time_steps`` steps, with ``num_time_steps + 1`` target
    evaluations per path (the diffusion kind's count).
    """
    fitted = jaxsamp.fit("pis", TARGET, num_steps=2, num_time_steps=3, hidden=4, num_layers=1, batch_size=4,
                         progress=False)
    assert fitted.settings.num_time_steps == 3 and len(fitted.history["loss"]) == 2
    assert np.asarray(fitted.history["target_evals"])[-1] == 2 * 4 * (3 + 1)
