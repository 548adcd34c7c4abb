"""One-call sampling: eight schools against a long reference run, ArviZ's numbers, an Inference Gym model.

Error budgets: a posterior mean within 5 combined Monte Carlo standard errors
(ours from the bulk ESS, the reference's from its own run or the Gym's stated
standard error); a posterior sd within 5 standard errors of a sd estimate,
``sd * sqrt(1 / (2 ESS))``.
"""

import json
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsamp
from jaxsamp.core.checkpoint import CompletedRunWarning
from jaxsamp.core.errors import CheckpointError, InputError, RunHealthError
from jaxsamp.diagnostics.mcmc import posterior_summary, r_hat_and_ess_bulk
from jaxsamp.mcmc.sample import RunHealthWarning
from jaxsamp.targets.eight_schools import SIGMA, Y
from jaxsamp.targets.eight_schools import model as eight_schools

HERE = Path(__file__).parent
REFERENCE = json.loads((HERE / "eight_schools_reference.json").read_text())


@pytest.fixture(scope="module")
def posterior():
    return jaxsamp.sample(eight_schools, model_args=(SIGMA, Y), key=1, num_chains=4, num_warmup=1000,
                          num_samples=2000, progress=False)


def test_eight_schools_matches_the_long_reference_run(posterior):
    assert posterior.draws["theta"].shape == (4, 2000, 8)
    assert posterior.draws["tau"].min() > 0  # constrained space
    for name, values in (("mu", posterior.draws["mu"]), ("log_tau", np.log(posterior.draws["tau"]))):
        ref = REFERENCE[name]
        summary = posterior_summary(np.asarray(values)).to_dict()["x"]
        budget = 5 * np.hypot(summary["mcse_mean"], ref["mcse_mean"])
        assert abs(summary["mean"] - ref["mean"]) < budget, (name, summary, ref)
        assert abs(summary["std"] - ref["sd"]) < 5 * ref["sd"] / np.sqrt(2 * summary["ess_bulk"]), (name, summary, ref)
        assert summary["r_hat"] < 1.01
    assert posterior.num_divergences < 0.01 * 4 * 2000
    assert set(posterior.info) >= {"acceptance_rate", "is_divergent", "num_integration_steps", "tree_depth"}


def test_a_second_call_with_the_same_model_and_data_values_compiles_nothing(posterior, compilations):
    """The numpyro target, its starting points, warm-up, sampler, health checks and constraining are all reused."""
    again = jaxsamp.sample(eight_schools, model_args=(np.array(SIGMA), np.array(Y)), key=1, num_chains=4,
                           num_warmup=1000, num_samples=2000, progress=False)  # new arrays, the same values
    assert compilations == [], f"{len(compilations)} compilations in the second call"
    np.testing.assert_array_equal(np.asarray(again.positions), np.asarray(posterior.positions))


@pytest.mark.filterwarnings("ignore::jaxsamp.core.errors.RunHealthWarning")  # a few divergences are not the point
def test_new_data_of_the_same_shapes_reuse_the_compilation(posterior, compilations):
    """New ``sigma`` and ``y`` values: nothing compiles, the draws follow the new data, and the programs are exact.

    The data are traced arguments of one set of compiled programs. Negated ``y``
    moves mu's posterior mean from about +4.4 to about -4.4 (sd 3.3; the means of
    4 x 2000 draws are far from 0). The module's first call on ``(SIGMA, Y)``
    compiled those programs (a cold call); run again on ``(SIGMA, Y)`` after the
    new data, they give its draws back bit for bit, so new data leave nothing
    behind in them.
    """
    settings = dict(key=1, num_chains=4, num_warmup=1000, num_samples=2000, progress=False)
    new = jaxsamp.sample(eight_schools, model_args=(1.5 * SIGMA, -Y), **settings)
    back = jaxsamp.sample(eight_schools, model_args=(SIGMA, Y), **settings)
    assert compilations == [], f"{len(compilations)} compilations"
    assert float(np.mean(new.draws["mu"])) < -2 < 2 < float(np.mean(posterior.draws["mu"]))
    np.testing.assert_array_equal(np.asarray(back.positions), np.asarray(posterior.positions))


def _gaussian(x, mean, scale):
    """The log density of ``N(mean, diag(scale^2))`` at one state, its data as arguments."""
    return -0.5 * jnp.sum(((x - mean) / scale) ** 2)


#: Cheap settings shared by the tests of a plain log density with data (one compilation for them all). The chains
#: run one after another, as ``chain_method="auto"`` chooses on an idle CPU: auto decides by timing, and these tests
#: compare draws bit for bit, which needs one choice whatever the machine's load.
_PLAIN = dict(init=jnp.zeros(3), key=4, sampler="hmc", num_integration_steps=5, num_chains=2, num_warmup=100,
              num_samples=200, progress=False, chain_method="sequential")


@pytest.mark.filterwarnings("ignore::jaxsamp.core.errors.RunHealthWarning")  # 200 draws: R-hat is not the point
def test_a_plain_log_density_takes_its_data_as_traced_model_args(compilations):
    """``sample(fn, model_args=data)`` samples ``fn(x, *data)``; new data of the same shapes compile nothing.

    N(5, 4 I) after N(0, I): the draws' mean moves by 5, within 5 Monte Carlo
    standard errors ``sd / sqrt(ESS)`` (the bulk ESS of the 2 x 200 correlated
    draws, not 400); the first data again give the first call's draws bit for bit.
    """
    first = jaxsamp.sample(_gaussian, model_args=(jnp.zeros(3), jnp.ones(3)), **_PLAIN)
    new_data, first_data = (jnp.full(3, 5.0, jnp.float32), 2 * jnp.ones(3)), (np.zeros(3, np.float32), np.ones(3))
    del compilations[:]
    moved = jaxsamp.sample(_gaussian, model_args=new_data, **_PLAIN)
    back = jaxsamp.sample(_gaussian, model_args=first_data, **_PLAIN)
    assert compilations == [], f"{len(compilations)} compilations"
    for posterior, mean, sd in ((moved, 5.0, 2.0), (first, 0.0, 1.0)):
        error = np.abs(np.asarray(posterior.positions).mean((0, 1)) - mean)
        ess = np.asarray(r_hat_and_ess_bulk(posterior.positions)[1])
        assert np.all(error < 5 * sd / np.sqrt(ess)), (error, ess)
    np.testing.assert_array_equal(np.asarray(back.positions), np.asarray(first.positions))
    with pytest.raises(InputError, match="takes its data as model_args"):
        jaxsamp.sample(_gaussian, model_kwargs={"mean": jnp.zeros(3)}, **_PLAIN)
    with pytest.raises(InputError, match=r"data\[1\] is a str"):
        jaxsamp.sample(_gaussian, model_args=(jnp.zeros(3), "wide"), **_PLAIN)
    with pytest.raises(InputError, match="cannot be called on one state of shape \\(3,\\) and 1 data argument"):
        jaxsamp.sample(_gaussian, model_args=(jnp.zeros(3),), **_PLAIN)
    with pytest.raises(InputError, match="a Target holds its own"):
        jaxsamp.sample(jaxsamp.targets.get("gaussian", dim=3), model_args=(jnp.zeros(3),), **_PLAIN)


def _von_mises_fisher(x, mean_direction):
    """``log pi(x) = m . x`` on the unit sphere: von Mises-Fisher with ``kappa = |m|``, its data as an argument."""
    return mean_direction @ x


#: Registered samplers at cheap settings on a plain log density with data: (model, settings, data, new data).
_REGISTERED = {
    "mala, thinned": (_gaussian, dict(sampler="mala", step_size=0.3, thin=2, init=jnp.zeros(3)),
                      (jnp.zeros(3), jnp.ones(3)), (jnp.full(3, 2.0, jnp.float32), 1.5 * jnp.ones(3))),
    "ula": (_gaussian, dict(sampler="ula", step_size=0.1, init=jnp.zeros(3)),
            (jnp.zeros(3), jnp.ones(3)), (jnp.full(3, 2.0, jnp.float32), 1.5 * jnp.ones(3))),
    # tuned (its default) in test_blackjax_kernels.py: its tuner alone takes several seconds to compile
    "mclmc": (_gaussian, dict(sampler="mclmc", L=1.0, step_size=0.3, init=jnp.zeros(3)),
              (jnp.zeros(3), jnp.ones(3)), (jnp.full(3, 2.0, jnp.float32), 1.5 * jnp.ones(3))),
    "sphere_mala": (_von_mises_fisher, dict(sampler="sphere_mala", step_size=0.3, init=jnp.eye(3)[:2]),
                    (3.0 * jnp.eye(3)[0],), (3.0 * jnp.eye(3)[1],)),
}


@pytest.mark.filterwarnings("ignore::jaxsamp.core.errors.RunHealthWarning")  # 20 draws: R-hat is not the point
@pytest.mark.parametrize("case", list(_REGISTERED))
def test_a_registered_sampler_compiles_nothing_on_a_second_call_with_new_data(case, compilations):
    """The registered kernel, its chains and burn-in take the target's data as traced arguments.

    New data of the same shapes: nothing compiles and the draws change; the first
    data again give the first call's draws bit for bit.
    """
    model, settings, data, new_data = _REGISTERED[case]
    settings = {"key": 6, "num_chains": 2, "num_warmup": 10, "num_samples": 20, "progress": False, **settings}
    first = jaxsamp.sample(model, model_args=data, **settings)
    del compilations[:]
    moved = jaxsamp.sample(model, model_args=new_data, **settings)
    back = jaxsamp.sample(model, model_args=data, **settings)
    assert compilations == [], f"{len(compilations)} compilations"
    assert not np.array_equal(np.asarray(moved.positions), np.asarray(first.positions))
    np.testing.assert_array_equal(np.asarray(back.positions), np.asarray(first.positions))


@pytest.mark.filterwarnings("ignore::jaxsamp.core.errors.RunHealthWarning")  # 20 draws: R-hat is not the point
def test_a_lattice_sampler_compiles_nothing_on_a_second_call(compilations):
    """Glauber dynamics reads the target's flip_log_ratios as a traced argument: a second call compiles nothing."""
    ising = jaxsamp.targets.get("ising", L=4, beta=0.3)
    settings = dict(sampler="glauber", num_updates=4, key=2, num_chains=2, num_warmup=5, num_samples=20, progress=False)
    first = jaxsamp.sample(ising, **settings)
    del compilations[:]
    again = jaxsamp.sample(ising, **settings)
    assert compilations == [], f"{len(compilations)} compilations"
    np.testing.assert_array_equal(np.asarray(again.positions), np.asarray(first.positions))


@pytest.mark.filterwarnings("ignore::jaxsamp.core.errors.RunHealthWarning")  # 20 draws: R-hat is not the point
def test_sequential_chains_make_the_same_transitions():
    """``chain_method="sequential"`` (``lax.map``) runs vectorized chains' transitions with the same keys.

    MALA is not chaotic over a few steps: the draws agree to float32 round-off
    (budget 1e-5; a different key or transition would differ by O(1)).
    """

    def log_prob(x):
        return -0.5 * jnp.sum((x - 1.0) ** 2) - 0.1 * jnp.sum(x**4)

    runs = [jaxsamp.sample(log_prob, init=jnp.arange(6.0).reshape(3, 2) / 6, num_chains=3, key=5, sampler="mala", step_size=0.3, num_warmup=5,
                           num_samples=20, progress=False, chain_method=method) for method in ("vectorized", "sequential")]
    np.testing.assert_allclose(np.asarray(runs[1].positions), np.asarray(runs[0].positions), atol=1e-5)
    assert np.ptp(np.asarray(runs[0].positions)) > 0.5
    with pytest.raises(InputError, match="chain_method must be one of auto, vectorized, sequential"):
        jaxsamp.sample(log_prob, init=jnp.zeros(2), chain_method="parallel")


def test_summary_equals_arviz_on_the_same_draws(posterior):
    import arviz

    ours = posterior.summary().to_dict()
    theirs = arviz.summary(posterior.to_arviz(), kind="all", round_to="none")
    for row in ("mu", "tau", "theta[0]", "theta[7]", "theta_tilde[3]"):
        for ours_name, arviz_name in (("mean", "mean"), ("std", "sd"), ("ess_bulk", "ess_bulk"),
                                      ("ess_tail", "ess_tail"), ("r_hat", "r_hat")):
            assert ours[row][ours_name] == pytest.approx(float(theirs.loc[row, arviz_name]), rel=1e-4, abs=1e-5), (row, ours_name)
    text = str(posterior.summary())
    assert "ess_bulk" in text and f"Number of divergences: {posterior.num_divergences}" in text


def test_an_inference_gym_model_matches_its_ground_truth():
    from inference_gym import using_jax as gym

    target = jaxsamp.targets.from_inference_gym(gym.targets.BrownianMotionMissingMiddleObservations())
    post = jaxsamp.sample(target, key=2, num_chains=4, num_warmup=500, num_samples=1000, progress=False)
    values = jax.vmap(jax.vmap(target.reference_values))(post.positions)
    summary = posterior_summary(np.asarray(values)).to_dict()
    for j, (truth, truth_se) in enumerate(zip(target.reference_mean, target.reference_mean_standard_error)):
        row = summary[f"x[{j}]"]
        assert abs(row["mean"] - truth) < 5 * np.hypot(row["mcse_mean"], truth_se), (j, row, truth)


@pytest.mark.gpu
def test_plain_function_chees_and_registered_samplers():
    def log_prob(x):
        return -0.5 * jnp.sum((x - 3.0) ** 2)

    for kwargs in ({"warmup_method": "chees", "num_chains": 16}, {"sampler": "mala", "step_size": 0.5}):
        post = jaxsamp.sample(log_prob, init=jnp.zeros(3), key=3, num_warmup=300, num_samples=300, progress=False, **kwargs)
        assert post.positions.shape[1:] == (300, 3)
        summary = post.summary().to_dict()
        for j in range(3):
            row = summary[f"x[{j}]"]
            assert abs(row["mean"] - 3.0) < 5 * row["mcse_mean"], (kwargs, row)
    with pytest.raises(InputError, match="needs init= positions"):
        jaxsamp.sample(log_prob)


def test_an_unhealthy_run_warns_and_strict_raises():
    def log_prob(x):
        return -0.5 * jnp.sum(x**2)

    with pytest.warns(RunHealthWarning, match="no chain moved"):
        post = jaxsamp.sample(log_prob, init=jnp.zeros(2), sampler="mala", step_size=1e-30, num_warmup=0,
                              num_samples=50, progress=False)
    assert any("acceptance is exactly 1" in w for w in post.warnings)
    with pytest.raises(RunHealthError, match="no chain moved"):
        jaxsamp.sample(log_prob, init=jnp.zeros(2), sampler="mala", step_size=1e-30, num_warmup=0,
                       num_samples=50, progress=False, strict=True)


def test_checkpoint_resumes_and_refuses_another_run(tmp_path):
    """Other settings, chains or data values (traced, so the same compiled program) are another run."""
    common = dict(_PLAIN, model_args=(jnp.zeros(3), jnp.ones(3)), checkpoint=tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = jaxsamp.sample(_gaussian, **common)
        assert not [w for w in caught if issubclass(w.category, CompletedRunWarning)]
        again = jaxsamp.sample(_gaussian, **common)  # everything is already checkpointed
    completed = [str(w.message) for w in caught if issubclass(w.category, CompletedRunWarning)]
    assert len(completed) == 1 and "already holds this whole run" in completed[0], completed  # not one per phase
    np.testing.assert_array_equal(first.positions, again.positions)
    with pytest.raises(CheckpointError, match="written by run 'warm-up \\(window\\)'.*this is run 'warm-up \\(window\\)'"):
        jaxsamp.sample(_gaussian, **{**common, "target_acceptance": 0.9})
    with pytest.raises(CheckpointError, match="belongs to another run"):
        jaxsamp.sample(_gaussian, **{**common, "num_chains": 3})
    with pytest.raises(CheckpointError, match="belongs to another run.*the step computes something else"):
        jaxsamp.sample(_gaussian, **{**common, "model_args": (jnp.full(3, 0.5), jnp.ones(3))})


def test_a_discrete_chain_back_at_its_start_is_not_called_stuck():
    """On spins a chain may return to where it started (the experiments' rule): no 'never left' warning."""
    ising = jaxsamp.targets.get("ising", L=3, beta=0.8)  # ordered: many chains end in the state they started from
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        posterior = jaxsamp.sample(ising, key=0, sampler="glauber", num_chains=32, num_warmup=20, num_samples=20,
                                   progress=False)
    assert not any("never left" in str(w.message) for w in caught), [str(w.message) for w in caught]
    assert not any("never left" in w for w in posterior.warnings)
