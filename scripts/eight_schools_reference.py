"""A long numpyro NUTS run of eight schools: the reference the one-call sampling test compares with.

Eight schools, non-centred (``jaxsamp.targets.eight_schools.model``). numpyro's NUTS with its
default warm-up, 8 chains x 25000 draws after 5000 warm-up steps, seed 20261201. Writes the posterior mean and standard deviation of
mu and log tau, with the Monte Carlo standard errors of the means (ArviZ), to
``tests/mcmc/eight_schools_reference.json``.

Usage: python scripts/eight_schools_reference.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "mcmc" / "eight_schools_reference.json"


def main() -> None:
    import arviz
    import jax
    from numpyro.infer import MCMC, NUTS

    from jaxsamp.targets import eight_schools
    from jaxsamp.targets.eight_schools import SIGMA, Y

    mcmc = MCMC(NUTS(eight_schools.model), num_warmup=5000, num_samples=25000, num_chains=8,
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
