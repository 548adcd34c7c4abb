"""Entropic mode coverage: exact values on hand-made assignments and on GMM samples."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsamp.targets
from jaxsamp.diagnostics.mode_coverage import entropic_mode_coverage


def test_exact_values():
    assert float(entropic_mode_coverage(jnp.arange(400) % 4, 4)) == pytest.approx(1.0, abs=1e-6)
    assert float(entropic_mode_coverage(jnp.zeros(100, jnp.int32), 4)) == pytest.approx(0.0, abs=1e-7)
    # half in each of two modes out of four: log 2 / log 4
    assert float(entropic_mode_coverage(jnp.arange(100) % 2, 4)) == pytest.approx(0.5, abs=1e-6)
    # weights: all mass on mode 1 samples
    log_w = jnp.where(jnp.arange(400) % 4 == 1, 0.0, -jnp.inf)
    assert float(entropic_mode_coverage(jnp.arange(400) % 4, 4, log_w)) == pytest.approx(0.0, abs=1e-7)
    with pytest.raises(ValueError):
        entropic_mode_coverage(jnp.zeros(3, jnp.int32), 1)


def test_exact_gmm_samples_cover_all_modes():
    gmm = jaxsamp.targets.get("gmm", dim=2, num_modes=10)
    x = jax.jit(gmm.sample, static_argnums=1)(jax.random.key(0), 5000)
    modes = jax.jit(gmm.assign_modes)(x)
    emc = float(entropic_mode_coverage(modes, 10))
    # multinomial frequencies around 1/10: the entropy deficit is ~ (K - 1) / (2 n log K) ~ 4e-4
    assert emc == pytest.approx(1.0, abs=5e-3)
    one_mode = modes[np.asarray(modes) == 3]
    assert float(entropic_mode_coverage(one_mode, 10)) == pytest.approx(0.0, abs=1e-7)
