"""Eight schools: the numpyro model, its data, and the target (an optional numpyro extra).

Rubin (1981), "Estimation in parallel randomized experiments", J. Educ. Stat. 6(4);
Gelman et al., *Bayesian Data Analysis*, 3rd ed., Sec. 5.5. Non-centred, as
posteriordb's ``eight_schools_noncentered``::

    mu ~ N(0, 5),  tau ~ HalfCauchy(5),  theta_tilde_j ~ N(0, 1),
    theta_j = mu + tau theta_tilde_j,    y_j ~ N(theta_j, sigma_j).

Nothing about it is exact; ``tests/mcmc/eight_schools_reference.json`` holds a
long numpyro run (``scripts/eight_schools_reference.py``).
"""

from __future__ import annotations

import numpy as np

from jaxsamp.core.registry import TARGETS

#: Estimated treatment effects and their standard errors (BDA3, Table 5.2).
Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])


def model(sigma, y=None):
    """The non-centred eight-schools model (numpyro); ``theta`` is recorded as a deterministic site."""
    import numpyro
    import numpyro.distributions as dist

    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    with numpyro.plate("J", len(sigma)):
        theta_tilde = numpyro.sample("theta_tilde", dist.Normal(0.0, 1.0))
        theta = numpyro.deterministic("theta", mu + tau * theta_tilde)
        numpyro.sample("obs", dist.Normal(theta, sigma), obs=y)


@TARGETS.register("eight_schools")
def eight_schools():
    """Eight schools (non-centred numpyro model) on its unconstrained space; needs the numpyro extra."""
    from jaxsamp.targets.numpyro_adapter import from_numpyro

    return from_numpyro(model, SIGMA, y=Y)
