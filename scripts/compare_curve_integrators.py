"""Accuracy per velocity evaluation of the Boltzmann-curve ODE: fixed-step RK4 against diffrax's adaptive solvers.

What decided the integrator of :mod:`jaxsamp.learned.curves.ode`. Each solver integrates the
augmented ODE ``(x, int div v)`` of 256 samples from ``N(0, I)`` (the whole batch as one state, so an
adaptive solver's steps are shared, as they would be in a batched sampler) and is scored by the error of
the log-weights ``log w = f_0(x_0) - f_1(x_1) + int div v`` against a reference, as a function of the
number of velocity-and-divergence evaluations (NFE, counted by the solvers themselves: 4 per RK4 step;
diffrax's ``num_steps`` times the stages per step, rejected steps included):

* ``gaussian``: the linear curve N(0, I) -> N((1, -2), 0.64 I) with its closed-form velocity; the
  reference is exact (every log-weight equals log Z of the target);
* ``trained``: a linear-interpolation velocity network trained for 400 updates of 256 collocation points
  (``jaxsamp.fit("curves", ..., key=0)``) on the gmm2d mixture of ``configs/curves_linear_gmm2d.yaml``
  (2 x 64); the reference is RK4 with 4096 steps. The recorded results trained it from another random stream
  (initialisation ``key(0)``, updates ``key(1)``, before ``fit`` trained it), same protocol.

RK4 with K in {4, 8, 16, 32, 64, 128}; diffrax Tsit5 and Dopri5 with a PID controller at rtol = atol in
{1e-2, 1e-3, 1e-4, 1e-5, 1e-6}. diffrax is not a dependency of jaxsamp: the script runs where it is
importable (``pip install diffrax`` into a scratch folder on PYTHONPATH) and writes
``benchmarks/results/compare_curve_integrators.json``.

Usage: PYTHONPATH=/path/to/diffrax:$PWD python scripts/compare_curve_integrators.py
"""

from __future__ import annotations

import json

import benchmark_io
import jax
import jax.numpy as jnp
import numpy as np

import jaxsamp
import jaxsamp.targets  # noqa: F401  (registers the targets)
from jaxsamp.core.registry import TARGETS
from jaxsamp.learned.curves.training import Curves, CurvesSettings
from jaxsamp.learned.curves.ode import rk4_step
from jaxsamp.learned.curves.interpolations import (
    make_interpolation,
    value_and_divergence,
)

N, MU, SIGMA = 256, np.array([1.0, -2.0]), 0.8


def gaussian_problem():
    target = TARGETS.get("gaussian", dim=2, mean=[1.0, -2.0], scale=SIGMA)

    def moments(t):
        p = (1 - t) + t / SIGMA**2
        return t / SIGMA**2 * jnp.asarray(MU) / p, 1 / jnp.sqrt(p)

    def velocity(x, t):
        (m, tau), (dm, dtau) = jax.jvp(moments, (t,), (jnp.ones_like(t),))
        return dm + dtau / tau * (x - m)

    return make_interpolation("linear", target, 1.0), velocity, None


def trained_problem():
    from jaxsamp.experiments.config import load_config

    cfg = load_config("configs/curves_linear_gmm2d.yaml")
    target = TARGETS.get(cfg.target.name, **cfg.target.params)
    settings = CurvesSettings(interpolation="linear", hidden=(64, 64))
    fitted = jaxsamp.fit("curves", target, key=0, settings=settings, batch_size=256, num_steps=400, progress=False)
    curve = Curves(target, settings, 256)  # the method's numerics: the trained velocity field
    return curve.interpolation, curve.fields(fitted.state.params).velocity, None


def augmented(velocity):
    def field(t, y):
        x, _ = y
        v, div = jax.vmap(lambda z: value_and_divergence(lambda u: velocity(u, t), z))(
            x
        )
        return v, div

    return field


def log_weights(interp, x0, x1, log_det):
    return (
        jax.vmap(interp.base_energy)(x0)
        - jax.vmap(interp.target_energy)(x1)[0]
        + log_det
    )


def rk4(field, x0, k):
    h = 1.0 / k

    def body(y, i):
        return rk4_step(field, i * h, h, y)[0], None

    return jax.lax.scan(
        body, (x0, jnp.zeros(x0.shape[0])), jnp.arange(k, dtype=x0.dtype)
    )[0]


def diffrax_solve(field, x0, solver, tol):
    import diffrax

    term = diffrax.ODETerm(lambda t, y, args: field(t, y))
    sol = diffrax.diffeqsolve(
        term,
        solver,
        0.0,
        1.0,
        0.05,
        (x0, jnp.zeros(x0.shape[0])),
        stepsize_controller=diffrax.PIDController(rtol=tol, atol=tol),
        max_steps=100_000,
    )
    return jax.tree.map(lambda a: a[-1], sol.ys), sol.stats["num_steps"]


def measure(name, problem) -> dict:
    interp, velocity, _ = problem
    field = augmented(velocity)
    x0 = jax.random.normal(jax.random.key(7), (N, 2))
    if name == "gaussian":
        reference = jnp.full((N,), float(interp.target.log_Z) - interp.log_Z0)
    else:
        x1, ld = jax.jit(lambda x: rk4(field, x, 4096))(x0)
        reference = log_weights(interp, x0, x1, ld)
    out = {}
    for k in (4, 8, 16, 32, 64, 128):
        x1, ld = jax.jit(lambda x, k=k: rk4(field, x, k))(x0)
        err = float(jnp.mean(jnp.abs(log_weights(interp, x0, x1, ld) - reference)))
        out[f"{name}_rk4_{k}"] = {"nfe": 4 * k, "log_w_mean_abs_err": err}
        print(name, "rk4", k, 4 * k, err, flush=True)
    try:
        import diffrax
    except ImportError:
        print("diffrax is not importable: only RK4 measured", flush=True)
        return out
    for label, solver, stages in (
        ("tsit5", diffrax.Tsit5(), 6),
        ("dopri5", diffrax.Dopri5(), 6),
    ):
        for tol in (1e-2, 1e-3, 1e-4, 1e-5, 1e-6):
            (x1, ld), steps = jax.jit(
                lambda x, s=solver, tol=tol: diffrax_solve(field, x, s, tol)
            )(x0)
            err = float(jnp.mean(jnp.abs(log_weights(interp, x0, x1, ld) - reference)))
            nfe = int(steps) * stages + 1
            out[f"{name}_{label}_tol{tol:g}"] = {"nfe": nfe, "log_w_mean_abs_err": err}
            print(name, label, tol, nfe, err, flush=True)
    return out


def main():
    results = {}
    for name, problem in (("gaussian", gaussian_problem), ("trained", trained_problem)):
        for key, row in measure(name, problem()).items():
            results[f"{key}_nfe"] = row["nfe"]
            results[f"{key}_log_w_mean_abs_err"] = row["log_w_mean_abs_err"]
    print(json.dumps(results, indent=1))
    print(benchmark_io.write_results("compare_curve_integrators", results))


if __name__ == "__main__":
    main()
