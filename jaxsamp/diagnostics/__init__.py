"""How every number is measured: weights, MCMC convergence, sample discrepancies, Stein tests, observables.

* :mod:`~jaxsamp.diagnostics.weights` -- importance ESS, log Z, log-weight variance, ELBO, EUBO;
* :mod:`~jaxsamp.diagnostics.mcmc` -- bulk / tail ESS, R-hat and MCSE equal to ArviZ's (jitted), a
  numpyro-style posterior summary, ArviZ export;
* :mod:`~jaxsamp.diagnostics.discrepancies` -- MMD, Sinkhorn (ott-jax), exact and 1-D / energy W2 (POT);
* :mod:`~jaxsamp.diagnostics.geometric_wasserstein` -- E(n)-invariant W2 of particle systems (iDEM protocol),
  on the batched exact assignment solver of :mod:`~jaxsamp.diagnostics.assignment`;
* :mod:`~jaxsamp.diagnostics.particles` -- the particle evaluation protocol of Adjoint Sampling and ASBS:
  geometric and energy W2 of draws against the shipped reference sets, with their noise floors;
* :mod:`~jaxsamp.diagnostics.grid_divergences` -- forward KL of two 2-D densities by quadrature;
* :mod:`~jaxsamp.diagnostics.mode_coverage` -- entropic mode coverage;
* :mod:`~jaxsamp.diagnostics.stein` / :mod:`~jaxsamp.diagnostics.polynomial_stein` -- KSD and PSD tests;
* :mod:`~jaxsamp.diagnostics.observables` -- Ising / Potts observables from weighted samples, and their errors
  against a reference (:mod:`jaxsamp.mcmc.lattice_reference` computes one).

Names are imported on first use (PEP 562), so ``from jaxsamp.diagnostics import chain_ess`` loads
:mod:`~jaxsamp.diagnostics.mcmc` alone, not ott-jax and POT.
"""

import importlib

from jaxsamp.core.lazy import submodule

_NAMES_BY_SUBMODULE = {
    "assignment": ["linear_sum_assignment"],
    "discrepancies": [
        "energy_w2", "entropic_ot_cost", "median_bandwidth", "mmd", "sinkhorn_divergence", "w2_from_costs",
        "wasserstein2", "wasserstein2_1d",
    ],
    "grid_divergences": ["forward_kl_on_grid", "grid_points"],
    "geometric_wasserstein": ["aligned_distance", "geometric_w2", "nuclear_norm", "pair_distances"],
    "mcmc": [
        "ConvergenceDiagnostics", "PosteriorSummary", "chain_ess", "chain_rhat", "convergence_diagnostics",
        "posterior_summary", "to_inference_data",
    ],
    "mode_coverage": ["entropic_mode_coverage"],
    "particles": ["SampleScorer", "interatomic_distances", "is_particle_system", "reference_samples"],
    "observables": [
        "connected_two_point", "exact_magnetization_observables", "lattice_observables", "magnetization",
        "magnetization_histogram", "magnetization_tv", "mean_abs_magnetization", "mean_potts_magnetization",
        "observable_errors", "order_parameter", "order_parameter_axis", "potts_magnetization", "self_normalized_mean",
    ],
    "polynomial_stein": ["monomial_exponents", "polynomial_stein_discrepancy", "psd_test", "stein_features"],
    "stein": ["KSDStatistics", "SteinTestResult", "imq_stein_kernel", "kernel_stein_discrepancy", "ksd_test"],
    "weights": ["elbo", "eubo", "figures", "importance_ess", "log_weight_variance"],
}
_SUBMODULE_OF = {name: module for module, names in _NAMES_BY_SUBMODULE.items() for name in names}
_SUBMODULES = {*_NAMES_BY_SUBMODULE, "binary_discrepancies", "health", "predictive"}

__all__ = sorted(_SUBMODULE_OF)


def __getattr__(name: str):
    """Import a public name's submodule (or a submodule itself) on first access and cache the result."""
    if name in _SUBMODULE_OF:
        value = getattr(importlib.import_module(f"{__name__}.{_SUBMODULE_OF[name]}"), name)
    else:
        value = submodule(__name__, name)  # any submodule (``predictive`` too), or AttributeError
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names and submodules, loaded or not."""
    return sorted({*globals(), *__all__, *_SUBMODULES})
