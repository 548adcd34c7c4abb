"""A long numpyro NUTS run of eight schools: the reference the one-call sampling test compares with.

Eight schools (Rubin 1981; Gelman et al., *Bayesian Data Analysis*, 3rd ed., Sec. 5.5),
non-centred: mu ~ N(0, 5), tau ~ HalfCauchy(5), theta_j = mu + tau eta_j, eta_j ~ N(0, 1),
y_j ~ N(theta_j, sigma_j). numpyro's NUTS with its default warm-up, 8 chains x 25000 draws
after 5000 warm-up steps, seed 20261201. Writes the posterior mean and standard deviation of
mu and log tau, with the Monte Carlo standard errors of the means (ArviZ), to
``tests/mcmc/eight_schools_reference.json``.

Usage: python scripts/eight_schools_reference.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
OUT = Path(__file__).resolve().parents[1] / "tests" / "mcmc" / "eight_schools_reference.json"


def eight_schools(sigma, y=None):
    """The non-centred eight-schools model (numpyro)."""
    import numpyro
    import numpyro.distributions as dist

    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    with numpyro.plate("schools", len(sigma)):
        eta = numpyro.sample("eta", dist.Normal(0.0, 1.0))
        theta = numpyro.deterministic("theta", mu + tau * eta)
        numpyro.sample("y", dist.Normal(theta, sigma), obs=y)


def main() -> None:
    import arviz
    import jax
    from numpyro.infer import MCMC, NUTS

    mcmc = MCMC(NUTS(eight_schools), num_warmup=5000, num_samples=25000, num_chains=8,
                chain_method="vectorized", progress_bar=False)
    mcmc.run(jax.random.PRNGKey(20261201), SIGMA, Y)
    draws = mcmc.get_samples(group_by_chain=True)
    quantities = {"mu": np.asarray(draws["mu"]), "log_tau": np.log(np.asarray(draws["tau"]))}
    out = {"command": "python scripts/eight_schools_reference.py", "chains": 8, "draws_per_chain": 25000}
    for name, values in quantities.items():
        out[name] = {
            "mean": float(values.mean()),
            "sd": float(values.std()),
            "mcse_mean": float(arviz.mcse(values, method="mean")),
            "ess_bulk": float(arviz.ess(values, method="bulk")),
            "r_hat": float(arviz.rhat(values)),
        }
    OUT.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
