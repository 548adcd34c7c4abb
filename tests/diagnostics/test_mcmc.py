"""MCMC diagnostics: known answers on AR(1) chains, equality with ``arviz.summary``, the summary table, lazy import."""

import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsamp.diagnostics import mcmc
from jaxsamp.diagnostics.mcmc import (
    chain_ess,
    chain_rhat,
    convergence_diagnostics,
    posterior_summary,
    to_inference_data,
)

STEPS, CHAINS = 2000, 4


@jax.jit
def _ar1(key, rho):
    """Stationary AR(1) chains, one per entry of ``rho``, in the driver's (steps, chains, k) layout."""
    noise = jax.random.normal(key, (STEPS, CHAINS, rho.shape[0]))

    def step(x, e):
        x = rho * x + jnp.sqrt(1 - rho**2) * e
        return x, x

    return jax.lax.scan(step, noise[0], noise[1:])[1]


def test_ess_matches_the_ar1_integrated_autocorrelation_time():
    # ESS = N (1 - rho) / (1 + rho) for AR(1); the estimator's own spread is ~10% here,
    # so a 30% band is several of its standard deviations.
    rho = jnp.asarray([0.0, 0.8, 0.8, 0.8])
    trace = {"x": _ar1(jax.random.key(0), rho)}
    ess = np.asarray(chain_ess(trace)["x"])
    n = (STEPS - 1) * CHAINS
    np.testing.assert_allclose(ess, n * (1 - rho) / (1 + rho), rtol=0.3)
    assert jax.eval_shape(chain_ess, trace)["x"].shape == (4,)  # traceable: callers may jit or vmap it


def test_rhat_is_one_for_mixed_chains_and_large_for_shifted_chains():
    mixed = _ar1(jax.random.key(2), jnp.asarray([0.5]))[..., 0]
    assert float(chain_rhat(mixed)) < 1.01
    assert float(chain_rhat(mixed + jnp.arange(CHAINS)[None, :])) > 1.5


def test_inference_data_export():
    pytest.importorskip("arviz")
    x = _ar1(jax.random.key(3), jnp.asarray([0.3, 0.3]))
    trace = {"x": x, "energy": x[..., 0] ** 2}
    idata = to_inference_data(trace)
    assert idata.posterior["x"].shape == (CHAINS, STEPS - 1, 2)
    assert idata.posterior["energy"].shape == (CHAINS, STEPS - 1)
    np.testing.assert_allclose(idata.posterior["energy"].values, np.asarray(trace["energy"]).T)
    assert to_inference_data(x).posterior["x"].shape == (CHAINS, STEPS - 1, 2)


# --- equality with arviz.summary ------------------------------------------------------------------------------

SUMMARY_DRAWS = 501  # odd: ArviZ splits chains by dropping the middle draw (blackjax drops the last one)


def _ar1_draws(rng, rho, event_shape):
    """AR(1) chains in ArviZ's (chains, draws, *event) layout, with NumPy (no compilation)."""
    noise = rng.standard_normal((CHAINS, SUMMARY_DRAWS, *event_shape))
    x = np.empty_like(noise)
    x[:, 0] = noise[:, 0]
    for t in range(1, SUMMARY_DRAWS):
        x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho**2) * noise[:, t]
    return x


def _arviz_cases():
    rng = np.random.default_rng(0)
    with_nan = rng.standard_normal((CHAINS, SUMMARY_DRAWS))
    with_nan[2, 17] = np.nan
    draws = {
        "well_mixed": _ar1_draws(rng, 0.5, (3,)),
        "poorly_mixing": _ar1_draws(rng, 0.95, (2,)) + np.arange(CHAINS)[:, None, None],  # chains at different means
        "heavy_tailed": rng.standard_cauchy((CHAINS, SUMMARY_DRAWS, 2)),
        "counts": rng.poisson(0.4, (CHAINS, SUMMARY_DRAWS)),  # ties: the tail indicators x <= q
        "constant": np.full((CHAINS, SUMMARY_DRAWS), 3.0),  # ArviZ: ESS = number of draws, R-hat NaN
        "with_nan": with_nan,  # ArviZ: NaN throughout
    }
    return {name: value.astype(np.float32) for name, value in draws.items()}


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # ArviZ's 0/0 on the constant row
def test_posterior_summary_equals_arviz_summary():
    # Same float32 draws, ArviZ in float64. Error budget rtol 1e-4 (mean: 1e-5 sd): the float32
    # round-off measured here is <= 1.2e-6, while blackjax's own ess_bulk / ess_tail / rhat differ
    # from ArviZ's by 0.9% / 0.4% / 4e-4 on the poorly mixing and count rows.
    az = pytest.importorskip("arviz")
    draws = _arviz_cases()
    ours = posterior_summary(draws)
    reference = az.summary(to_inference_data(draws, chain_axis=0, sample_axis=1), kind="all", round_to="none")
    assert list(ours.rows) == list(reference.index)
    assert reference.loc[["poorly_mixing[0]", "poorly_mixing[1]"], "r_hat"].min() > 1.4  # the case is poorly mixing
    sd = reference["sd"].to_numpy()
    scale = np.where(sd > 0, sd, 1.0)  # NaN for the NaN row, on both sides
    np.testing.assert_allclose(ours.mean / scale, reference["mean"] / scale, rtol=0, atol=1e-5)
    for column, arviz_column in [
        ("std", "sd"), ("ess_bulk", "ess_bulk"), ("ess_tail", "ess_tail"), ("r_hat", "r_hat"),
        ("mcse_mean", "mcse_mean"), ("mcse_sd", "mcse_sd"),
    ]:
        np.testing.assert_allclose(getattr(ours, column), reference[arviz_column], rtol=1e-4, err_msg=column)
    # The convenience figures skip the rows where a statistic is undefined (constant, NaN draws).
    assert ours.max_rhat == np.nanmax(ours.r_hat) > 1.4 and ours.min_ess_bulk == np.nanmin(ours.ess_bulk) < 10


def test_stuck_chains_have_infinite_rhat_and_one_chain_none():
    # Each split chain constant but the chains apart: between-chain variance over zero within.
    rng = np.random.default_rng(1)
    stuck = np.broadcast_to(rng.standard_normal((CHAINS, 1, 1)), (CHAINS, 8, 1))
    assert np.isinf(convergence_diagnostics(stuck).r_hat[0])
    one_chain = convergence_diagnostics(rng.standard_normal((1, 8, 1)))
    assert np.isnan(one_chain.r_hat[0]) and np.isfinite(one_chain.ess_bulk[0])


# --- the summary object -------------------------------------------------------------------------------------

def test_rows_are_named_by_pytree_path_and_event_index():
    rng = np.random.default_rng(2)
    offsets = np.arange(3.0)
    draws = {
        "mu": rng.standard_normal((2, 50)),
        "theta": 0.01 * rng.standard_normal((2, 50, 3)) + offsets,
        "L": rng.standard_normal((2, 50, 2, 2)),
    }
    summary = posterior_summary(draws).to_dict()
    assert list(summary) == ["L[0, 0]", "L[0, 1]", "L[1, 0]", "L[1, 1]", "mu", "theta[0]", "theta[1]", "theta[2]"]
    np.testing.assert_allclose([summary[f"theta[{i}]"]["mean"] for i in range(3)], offsets, atol=0.01)
    assert all(type(value) is float for row in summary.values() for value in row.values())
    assert list(posterior_summary(draws["theta"]).to_dict()) == ["x[0]", "x[1]", "x[2]"]


def test_table_has_numpyro_columns_quantiles_and_divergences():
    rng = np.random.default_rng(3)
    draws = {"mu": rng.standard_normal((2, 100)), "theta": rng.standard_normal((2, 100, 2))}
    summary = posterior_summary(draws, divergences=np.array([[0, 1, 0], [3, 0, 3]]))
    header, *rows, last = str(summary).splitlines()
    assert header.split() == ["mean", "std", "median", "5.0%", "95.0%", "ess_bulk", "ess_tail", "r_hat"]
    assert [row.split()[0] for row in rows] == ["mu", "theta[0]", "theta[1]"]
    assert last == "Number of divergences: 7" and summary.table() == str(summary)
    np.testing.assert_allclose(float(rows[0].split()[1]), np.mean(draws["mu"]), atol=0.006)  # printed to 2 decimals

    narrow = posterior_summary(draws, prob=0.5)
    assert "25.0%" in narrow.table() and "75.0%" in narrow.table() and "divergences" not in narrow.table()
    mu, theta = draws["mu"].astype(np.float32).ravel(), draws["theta"].astype(np.float32).reshape(-1, 2)
    np.testing.assert_allclose(narrow.lower, np.r_[np.quantile(mu, 0.25), np.quantile(theta, 0.25, axis=0)], atol=1e-6)
    np.testing.assert_allclose(narrow.upper, np.r_[np.quantile(mu, 0.75), np.quantile(theta, 0.75, axis=0)], atol=1e-6)
    np.testing.assert_allclose(narrow.median, np.r_[np.median(mu), np.median(theta, axis=0)], atol=1e-6)
    assert summary.max_rhat == max(row["r_hat"] for row in summary.to_dict().values())
    assert summary.min_ess_bulk == min(row["ess_bulk"] for row in summary.to_dict().values())
    assert np.isnan(posterior_summary(draws["theta"][:1]).max_rhat)  # one chain: no R-hat anywhere


def test_bad_shapes_are_clear_errors():
    with pytest.raises(ValueError, match="at least 4 draws"):
        convergence_diagnostics(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="same \\(chains, draws\\)"):
        convergence_diagnostics({"a": np.zeros((2, 10)), "b": np.zeros((2, 12))})
    with pytest.raises(ValueError, match="prob"):
        posterior_summary(np.zeros((2, 10)), prob=1.5)


def test_compiles_without_the_quick_compile_options_when_xla_lacks_them(monkeypatch):
    # The fallback and the large-trace path: same numbers as the -O0 / legacy-emitter compile.
    draws = np.random.default_rng(4).standard_normal((2, 8, 2))
    quick = convergence_diagnostics(draws)
    monkeypatch.setattr(
        mcmc,
        "_tree_statistics_quick_compile",
        jax.jit(
            mcmc._tree_statistics_unjitted,
            static_argnames=mcmc._STATIC_ARGNAMES,
            compiler_options={"xla_no_such_option": 0},
        ),
    )
    for name, value in convergence_diagnostics(draws)._asdict().items():
        np.testing.assert_allclose(value, getattr(quick, name), rtol=1e-5, err_msg=name)


def test_importing_the_diagnostics_leaves_ott_and_pot_unloaded():
    # A fresh interpreter, so that other tests' imports do not count. MMD lives beside the transport
    # distances, which import ott-jax and POT only when called.
    child = (
        "import sys, numpy as np\n"
        "import jaxsamp.diagnostics\n"
        "from jaxsamp.diagnostics import chain_ess, mmd\n"
        "ess = chain_ess(np.random.default_rng(0).standard_normal((16, 2)))\n"
        "assert np.isfinite(float(ess)), ess\n"
        "assert float(mmd(np.zeros((4, 2)), np.ones((4, 2)))) > 0\n"
        "print(sorted({'ott', 'ot'} & set(sys.modules)))\n"
    )
    process = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=300, check=False)
    assert process.returncode == 0, process.stderr[-3000:]
    assert process.stdout.strip() == "[]"


def test_no_public_name_is_also_a_submodule_name():
    # Importing a submodule binds it as the package's attribute, so a function named like its own
    # submodule would turn into that module for ``from jaxsamp.diagnostics import name`` afterwards.
    import jaxsamp.diagnostics as package
    from jaxsamp.diagnostics import geometric_wasserstein  # noqa: F401  (the submodule, imported first)

    assert not set(package._SUBMODULE_OF) & package._SUBMODULES
    from jaxsamp.diagnostics import geometric_w2

    assert callable(geometric_w2)


@pytest.mark.parametrize("host", [True, False], ids=["numpy_on_cpu", "xla_elsewhere"])
def test_twice_average_ranks_equal_scipy_rankdata_with_ties(monkeypatch, host):
    from scipy.stats import rankdata

    from jaxsamp.diagnostics import mcmc

    monkeypatch.setattr(mcmc, "_host_sorts", lambda: host)  # read when tracing: both paths, under jit and vmap
    x = np.round(np.random.default_rng(3).standard_normal((3, 500)), 1).astype(np.float32)  # many ties
    expected = 2 * rankdata(x, axis=1)
    np.testing.assert_array_equal(np.asarray(jax.jit(mcmc._twice_average_ranks)(jnp.asarray(x))), expected)
    batched = jax.jit(jax.vmap(mcmc._twice_average_ranks))(jnp.stack([jnp.asarray(x), -jnp.asarray(x)]))
    np.testing.assert_array_equal(np.asarray(batched), np.stack([expected, 2 * rankdata(-x, axis=1)]))
    sorted_rows = jax.jit(mcmc._sort_rows)(jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(sorted_rows), np.sort(x, axis=1))


def test_r_hat_and_ess_bulk_equal_the_full_diagnostics():
    from jaxsamp.diagnostics.mcmc import r_hat_and_ess_bulk

    x = np.random.default_rng(4).standard_normal((4, 300, 6)).astype(np.float32)
    x[1, :, 1] += 2.0  # one chain off: R-hat well above 1
    x[:, :, 2] = np.round(x[:, :, 2])  # ties
    x[:, :, 3] = 1.0  # constant: NaN R-hat, ESS = all draws
    x[2, 7, 4] = np.nan  # a NaN draw: NaN throughout
    r_hat, ess_bulk = r_hat_and_ess_bulk(jnp.asarray(x))
    full = convergence_diagnostics(x)
    np.testing.assert_allclose(np.asarray(r_hat), np.asarray(full.r_hat), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(ess_bulk), np.asarray(full.ess_bulk), rtol=1e-5)
    assert np.asarray(r_hat)[1] > 1.05 and np.isnan(np.asarray(r_hat)[[3, 4]]).all()
