"""The particle evaluation protocol: reference sets, the scorer's figures (compiled once), the noise floor."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsamp.targets
from jaxsamp.core.protocols import WeightedSamples
from jaxsamp.diagnostics import discrepancies
from jaxsamp.diagnostics.geometric_wasserstein import geometric_w2
from jaxsamp.diagnostics.particles import (
    SampleScorer,
    interatomic_distances,
    reference_samples,
    sinkhorn_floor,
    sinkhorn_to_exact,
)

DW4 = jaxsamp.targets.get("dw4")
GAUSSIAN = jaxsamp.targets.get("gaussian", dim=2, scale=0.7)


def test_reference_samples_are_a_subset_of_the_test_split_or_exact_samples():
    ref = reference_samples(DW4, jax.random.key(0), 16)
    test = DW4.reference("test")
    assert ref.shape == (16, 8) and all((row == test).all(axis=1).any() for row in ref)
    assert len({row.tobytes() for row in ref}) == 16  # drawn without replacement
    np.testing.assert_array_equal(reference_samples(GAUSSIAN, jax.random.key(1), 5),
                                  GAUSSIAN.sample(jax.random.key(1), 5))
    assert reference_samples(jaxsamp.targets.get("lj55"), jax.random.key(0), 4) is None  # no set shipped


def test_scores_are_geometric_for_particles_and_leave_non_finite_draws_out():
    """W2 geometric (E(n)-invariant) for particles and plain otherwise; a NaN state or weight is left out."""
    scorer = SampleScorer(DW4)
    ref = reference_samples(DW4, jax.random.key(0), 32)
    x = ref[::-1] + 0.1 * np.asarray(jax.random.normal(jax.random.key(1), ref.shape))
    x[0, 0] = np.nan
    log_w = np.zeros(32)
    log_w[1] = -np.inf
    energies, finite, figures = scorer.score(x, log_w, ref)
    assert finite.sum() == 30 and not finite[:2].any()
    assert figures["w2"] == pytest.approx(geometric_w2(x[2:], ref, 4, 2), rel=1e-6)
    assert figures["energy_w2"] == pytest.approx(discrepancies.energy_w2(DW4.energy, x[2:], ref), rel=1e-5)
    assert figures["energy_median"] == pytest.approx(np.median(energies[2:]))
    gaussian = SampleScorer(GAUSSIAN)
    y = np.asarray(GAUSSIAN.sample(jax.random.key(2), 20))
    _, _, plain = gaussian.score(y, np.zeros(20), y[::-1] + 1.0)
    assert plain["w2"] == pytest.approx(discrepancies.wasserstein2(y, y[::-1] + 1.0), rel=1e-6)
    assert scorer.score(x[:1], log_w[:1], ref)[2]["w2"] != scorer.score(x[:1], log_w[:1], ref)[2]["w2"]  # NaN
    assert scorer.score(x, log_w, None)[2] == {}
    assert interatomic_distances(DW4, ref).shape == (32 * 6,)


def test_the_noise_floor_is_the_test_split_against_the_validation_split_once_per_size():
    scorer = SampleScorer(DW4)
    floor = scorer.noise_floor(24)
    rng = np.random.default_rng(0)
    test, val = (s[rng.permutation(len(s))[:24]] for s in (DW4.reference("test"), DW4.reference("val")))
    assert floor == {"w2_floor": pytest.approx(geometric_w2(test, val, 4, 2)),
                     "energy_w2_floor": pytest.approx(discrepancies.energy_w2(DW4.energy, test, val), rel=1e-6)}
    assert scorer.noise_floor(24) is floor  # computed once per size
    assert SampleScorer(GAUSSIAN).noise_floor(24) == {}  # no reference splits: no floor


def test_a_scorer_compiles_its_sampler_and_energy_once_for_every_draw(caplog):
    """A learning curve draws and scores many times: only the first draw and score of a size may compile."""

    def sample(key, scale, n):
        return WeightedSamples(scale * jax.random.normal(key, (n, 2)), jax.numpy.zeros(n))

    scorer = SampleScorer(GAUSSIAN, sample)
    ref = np.asarray(GAUSSIAN.sample(jax.random.key(1), 16))

    def draw_and_score(seed):
        x, log_w = scorer.draw(jax.random.key(seed), 0.7, 16)
        return scorer.score(x, log_w, ref, scorer.energy(ref))

    draw_and_score(2)
    with jax.log_compiles(), caplog.at_level("WARNING"):
        energies, finite, figures = draw_and_score(3)
    assert not [r for r in caplog.records if "Compiling" in r.getMessage()]
    assert finite.all() and energies.shape == (16,) and figures["w2"] > 0 and figures["energy_w2"] > 0


def test_the_smc_sinkhorn_takes_the_positions_as_they_stand_leaves_non_finite_ones_out_and_needs_exact_samples():
    """SCLD's figure: the positions against as many exact samples at the key, at ott's default epsilon; a state that
    is not finite is left out (and the reference is as long as what is left); no exact sampler, no figure. The floor
    is that figure of exact samples."""
    target = jaxsamp.targets.get("gaussian", dim=2)
    x = np.asarray(jax.random.normal(jax.random.key(3), (40, 2))) + 0.5
    reference = reference_samples(target, jax.random.key(5), 40)
    expected = discrepancies.sinkhorn_divergence(jnp.asarray(x), jnp.asarray(reference), epsilon=None)
    assert sinkhorn_to_exact(target, jax.random.key(5), x) == pytest.approx(float(expected), rel=1e-5)
    bad = x.copy()
    bad[0, 1], bad[1, 0] = np.nan, np.inf
    kept = discrepancies.sinkhorn_divergence(jnp.asarray(x[2:]), jnp.asarray(reference_samples(
        target, jax.random.key(5), 38)), epsilon=None)
    assert sinkhorn_to_exact(target, jax.random.key(5), bad) == pytest.approx(float(kept), rel=1e-5)
    lattice = jaxsamp.targets.get("ising", L=3, beta=0.4)  # no exact sampler
    assert sinkhorn_to_exact(lattice, jax.random.key(5), np.zeros((4, 9))) is None
    assert sinkhorn_floor(lattice, jax.random.key(5), 4) is None
    floor = sinkhorn_floor(target, jax.random.key(6), 40)
    a, b = (np.asarray(target.sample(jax.random.fold_in(jax.random.key(6), i), 40)) for i in (0, 1))
    assert floor == pytest.approx(float(discrepancies.sinkhorn_divergence(jnp.asarray(a), jnp.asarray(b),
                                                                          epsilon=None)), rel=1e-5)
