"""How every number is measured: weights, MCMC convergence, sample discrepancies, Stein tests, observables.

* :mod:`~jaxsamp.diagnostics.weights` -- importance ESS, log Z, log-weight variance, ELBO, EUBO;
* :mod:`~jaxsamp.diagnostics.mcmc` -- chain ESS and R-hat (blackjax), ArviZ export;
* :mod:`~jaxsamp.diagnostics.discrepancies` -- MMD, Sinkhorn (ott-jax), exact and 1-D / energy W2 (POT);
* :mod:`~jaxsamp.diagnostics.geometric_w2` -- E(n)-invariant W2 of particle systems (iDEM protocol),
  on the batched exact assignment solver of :mod:`~jaxsamp.diagnostics.assignment`;
* :mod:`~jaxsamp.diagnostics.mode_coverage` -- entropic mode coverage;
* :mod:`~jaxsamp.diagnostics.stein` / :mod:`~jaxsamp.diagnostics.polynomial_stein` -- KSD and PSD tests;
* :mod:`~jaxsamp.diagnostics.observables` -- Ising / Potts observables from weighted samples.
"""

from jaxsamp.diagnostics.assignment import linear_sum_assignment
from jaxsamp.diagnostics.discrepancies import (
    energy_w2,
    entropic_ot_cost,
    median_bandwidth,
    mmd,
    sinkhorn_divergence,
    w2_from_costs,
    wasserstein2,
    wasserstein2_1d,
)
from jaxsamp.diagnostics.geometric_w2 import aligned_distance, geometric_w2, nuclear_norm, pair_distances
from jaxsamp.diagnostics.mcmc import chain_ess, chain_rhat, to_inference_data
from jaxsamp.diagnostics.mode_coverage import entropic_mode_coverage
from jaxsamp.diagnostics.observables import (
    connected_two_point,
    magnetization,
    magnetization_histogram,
    mean_abs_magnetization,
    mean_potts_magnetization,
    potts_magnetization,
    self_normalized_mean,
)
from jaxsamp.diagnostics.polynomial_stein import monomial_exponents, polynomial_stein_discrepancy, psd_test, stein_features
from jaxsamp.diagnostics.stein import KSDStatistics, SteinTestResult, imq_stein_kernel, kernel_stein_discrepancy, ksd_test
from jaxsamp.diagnostics.weights import elbo, eubo, importance_ess, log_weight_variance, summary

__all__ = [
    "KSDStatistics", "SteinTestResult", "aligned_distance", "chain_ess", "chain_rhat", "connected_two_point", "elbo",
    "energy_w2", "entropic_mode_coverage", "entropic_ot_cost", "eubo", "geometric_w2", "imq_stein_kernel",
    "importance_ess", "kernel_stein_discrepancy", "ksd_test", "linear_sum_assignment", "log_weight_variance",
    "magnetization", "magnetization_histogram", "mean_abs_magnetization", "mean_potts_magnetization",
    "median_bandwidth", "mmd", "monomial_exponents", "nuclear_norm", "pair_distances",
    "polynomial_stein_discrepancy", "potts_magnetization", "psd_test", "self_normalized_mean",
    "sinkhorn_divergence", "stein_features", "summary", "to_inference_data", "w2_from_costs",
    "wasserstein2", "wasserstein2_1d",
]
