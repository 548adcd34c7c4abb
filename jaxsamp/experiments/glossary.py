"""What every key of a run's ``metrics.json`` means, per experiment kind, and what a good value looks like.

The runner checks each run's keys against this glossary and warns
(:class:`UndocumentedMetricWarning`, an error in the test suite) about any key it does
not describe, so the glossary cannot fall behind the kinds. The documentation's metric
glossary page is generated from it.

A key may hold placeholders in angle brackets: ``<policy>_l1`` describes ``tlm_l1``,
``uniform_l1``, ... (a placeholder stands for one or more letters, digits or underscores).
"""

from __future__ import annotations

import re
import warnings
from typing import NamedTuple


class Entry(NamedTuple):
    """One metric: what it is and what a good value looks like.

    Attributes
    ----------
    meaning : str
        What the number is (units, which samples, which estimator).
    good : str
        How to read it: the scale, the ideal value, a noise floor, or "context" for a run setting.
    """

    meaning: str
    good: str


class UndocumentedMetricWarning(UserWarning):
    """A run wrote a ``metrics.json`` key that :data:`GLOSSARY` does not describe."""


SETTING = "a setting of the run, echoed"
COST = "cost: lower is cheaper; compare at equal quality"
EXACT = "the target's exact value (reference for the estimates)"

#: Keys the runner adds to every kind's metrics.
#:
#: :meta hide-value:
COMMON = {
    "verdict": Entry(
        "One line, printed last: the headline figure against the target's exact reference, within Monte Carlo "
        "error or not (``jaxsamp.experiments.verdict``), or what it is compared with where no exact reference exists.",
        "``within ...``; ``BEYOND`` says the run disagrees with the exact answer by more than its Monte Carlo error",
    ),
    "wall_seconds": Entry("Wall-clock seconds of the whole run, compilation, evaluation and plots included.", COST),
    "warnings": Entry(
        "Run-health warnings (stuck or NaN chains, high R-hat, low ESS, a rising loss, ...); also printed.",
        "an empty list; with ``--strict`` a warning fails the run",
    ),
}

#: The one vocabulary: figures that mean the same in every kind and every learned method, each listed once
#: here and in no kind's section (:func:`jaxsamp.diagnostics.weights.figures` computes the weight figures).
#:
#: :meta hide-value:
VOCABULARY = {
    "log_Z_hat": Entry("log Z by importance sampling with the sampler's own draws, log Z0 + logsumexp(log w) - log n "
                       "(SMC and AIS: the product of the levels' mean incremental weights). Unbiased in Z.",
                       "the headline log Z estimate; equal to log_Z_exact within a few 0.01 is good"),
    "log_Z_exact": Entry("The target's exact log normalising constant (closed form, enumeration or Kaufman's formula).",
                         EXACT),
    "log_Z_abs_err": Entry("|log_Z_hat - log_Z_exact|.",
                           "0; compare with tempered SMC at equal target evaluations (BENCHMARKS.md)"),
    "ess": Entry("Normalised importance ESS of the sampler's draws, (sum w)^2 / (n sum w^2), in (0, 1].",
                 "1 is perfect; below 0.01 the weights rest on a handful of draws"),
    "elbo": Entry("Mean log weight of the sampler's own draws: a lower bound on log Z (ELBO).",
                  "close to log Z from below; the gap is the reverse KL"),
    "eubo": Entry("Mean log weight at draws of the target (exact or reference; for a path sampler, of paths simulated "
                  "backward from them): an upper bound on log Z (EUBO).",
                  "close to log Z from above; the gap is the forward KL, large when modes are missed"),
    "log_Z_forward": Entry("log Z by reverse importance sampling from the target's draws, -log mean exp(-log w) "
                           "(unbiased in 1/Z).", "close to log_Z_hat; a gap means missed mass"),
    "elbo_abs_err": Entry("|elbo - log_Z_exact|: the reverse KL(q || p) estimated on the sampler's draws.", "0"),
    "eubo_abs_err": Entry("|eubo - log_Z_exact|: the forward KL(p || q) estimated on the target's draws.", "0"),
    "log_Z_forward_abs_err": Entry("|log_Z_forward - log_Z_exact|.", "0"),
    "log_Z_hat_sets_mean": Entry("Mean of log_Z_hat over disjoint, equal sets of the draws (``num_sets``).",
                                 "equal to log_Z_exact"),
    "log_Z_hat_sets_sd": Entry("Standard deviation of log_Z_hat over those sets.", "small against the error"),
    "log_Z_abs_err_sets_mean": Entry("Mean of log_Z_abs_err over those sets (the papers' mean error over runs).", "0"),
    "log_Z_abs_err_sets_sd": Entry("Standard deviation of log_Z_abs_err over those sets.", "context"),
    "log_Z_learned": Entry("log Z read off a trained parameter (trajectory balance's log Z, a GFlowNet's, LEAPS' free "
                           "energy, the curves' normaliser): not an importance-sampling estimate.",
                           "close to log_Z_exact once trained; the estimates above are the trustworthy ones"),
    "log_Z_learned_abs_err": Entry("|log_Z_learned - log_Z_exact|.", "small; a learned estimate"),
    "nonfinite_samples": Entry("Draws with a NaN/inf state or weight (left out of every figure).", "0"),
    "target_evals": Entry("Target evaluations (log density, energy or gradient calls) of the run: training for a "
                          "learned kind, annealing for SMC.", COST),
    "train_steps": Entry("Training updates run (``run.num_steps``).", SETTING),
    "train_seconds_incl_compile": Entry("Seconds of training, compilation included.", COST),
    "train_seconds": Entry("Seconds of training, compilation left out (``Fitted.seconds - Fitted.compile_seconds``; "
                           "what a benchmark's clock counts).", COST),
    "seconds_per_update": Entry("Training seconds per update (``train_seconds / train_steps``; an epoch for Adjoint "
                                "Sampling and ASBS).", COST),
    "hours_to_paper_budget": Entry("Hours the paper's training updates would take at ``seconds_per_update``.", COST),
    "compile_seconds": Entry("Seconds JAX spent tracing, lowering and compiling (or loading compiled programs) during "
                             "training.", COST),
    "final_loss": Entry("Training loss at the end (the mean over the last updates, or the last rollout's).",
                        "only comparable within one method and target"),
    "smc_<figure>": Entry("With ``evaluate.smc`` in the config (a learned sampler with a path: LEAPS, the curves, "
                          "SCLD, CMCD): figure ``<figure>`` of a resampled SMC run of ``run.num_eval_samples`` "
                          "particles along the trained path, ``Fitted.evaluate(key, n, smc=...)``: the weight figures "
                          "of its final particles (``smc_log_Z_hat`` the SMC estimate, unbiased in Z; "
                          "``smc_log_Z_abs_err``, ...) and ``smc_segment_ess_min``, ``smc_num_resamplings``, "
                          "``smc_sample_target_evals``.",
                          "as the figure of that name; compare smc_log_Z_abs_err with the sampler's own log_Z_abs_err "
                          "at equal target evaluations"),
}
_SMC_SINKHORN = Entry("SCLD's sample figure as its code computes it: the Sinkhorn divergence between an SMC run's "
                      "final particle positions (without their weights) and as many exact samples, at ott's default "
                      "epsilon (``jaxsamp.diagnostics.particles.sinkhorn_to_exact``).",
                      "0; compare with sinkhorn_floor, what two exact sample sets score")
_SINKHORN_FLOOR = Entry("Sinkhorn divergence between two independent sets of as many exact samples "
                        "(``jaxsamp.diagnostics.particles.sinkhorn_floor``): what a perfect sampler scores at this size.",
                        "context: far above 0 on heavy-tailed targets (funnel, Student-t mixture)")
_REFERENCE_MEAN_ERR = Entry("Targets with a reference posterior (an Inference Gym model's ground truth): the largest "
                            "error of the weighted draws' posterior mean over its coordinates, in the reference's "
                            "standard deviations (``InferenceGymTarget.reference_mean_error``).",
                            "0; above about 0.1 a coordinate's mean is off by a tenth of its spread")
_PATH_FIGURES = {
    "sinkhorn": Entry("Sinkhorn divergence between the sampler's draws and reference draws (target's units squared).",
                      "0; compare with the same figure between two reference sets (the noise floor)"),
    "emc": Entry("Entropic mode coverage of the draws over the mixture's modes, in [0, 1].", "1: every mode visited in proportion"),
    "modes_visited": Entry("Number of the mixture's modes holding at least one draw.", "the number of modes"),
}

#: Names that one concept had before the vocabulary, or that are ambiguous: no run may write them
#: (``log_Z`` alone was an estimate in some kinds and the exact value in others).
RETIRED = {
    "log_Z": "log_Z_hat or log_Z_exact", "log_Z_reverse": "log_Z_hat", "log_Z_reverse_abs_err": "log_Z_abs_err",
    "log_z": "log_Z_learned", "learned_log_z": "log_Z_learned", "log_z_learned": "log_Z_learned",
    "log_Z_free_energy": "log_Z_learned", "logz_abs_err": "log_Z_learned_abs_err", "log_Z_path": "log_Z_hat",
    "energy_evals": "target_evals", "num_target_evals": "target_evals", "train_target_evals": "target_evals",
    "nonfinite_paths": "nonfinite_samples", "nonfinite": "nonfinite_samples", "ess_fraction": "ess",
    "elbo_gap": "elbo_abs_err", "log_Z_error": "log_Z_abs_err",
}

#: A GFlowNet run's own figures: a benchmark cell's names (one run per cell; ``jaxsamp bench run gflownet``), which
#: the ``gflownet`` kind writes per backward policy as ``<policy>_<name>``.
_GFLOWNET_RUN = {
    "policy_l1": Entry("Mean |pi_theta - pi| of the forward policy's exact terminal distribution.", "0"),
    "policy_kl": Entry("KL(pi || pi_theta) of the forward policy's exact terminal distribution.", "0"),
    "empirical_l1": Entry("Mean |empirical - exact| terminal probability over the last window of training's terminal "
                          "states (the paper's L1; noisy: the window's sampling noise is in it).",
                          "0; the benchmark reports it x 1e3"),
    "empirical_kl": Entry("KL(exact || empirical + 1e-9) of the same window's terminal distribution.", "0"),
    "modes_found": Entry("Modes visited during training.", "num_modes"),
    "train_trajectories_per_s": Entry("Training throughput.", "higher is faster"),
    "rollout_trajectories_per_s": Entry("Forward rollouts per second of a fresh policy network (objects only).",
                                        "higher is faster"),
}

#: Every kind's own keys (the :data:`VOCABULARY` and the runner's :data:`COMMON` keys apart).
#:
#: :meta hide-value:
GLOSSARY: dict[str, dict[str, Entry]] = {
    "mcmc": {
        "num_chains": Entry("Chains run in parallel (``run.num_chains``).", SETTING),
        "num_steps": Entry("Steps per chain (``run.num_steps``).", SETTING),
        "num_warmup": Entry("Multi-chain warm-up steps (``run.num_warmup``).", SETTING),
        "acceptance_rate": Entry("Mean acceptance rate after burn-in.",
                                 "MALA ~0.57, HMC/NUTS 0.65-0.9, random walk ~0.23; near 0 means a step too large"),
        "nonfinite_rejections": Entry("Proposals rejected by ``guard_finite`` for a NaN/inf log density.", "0"),
        "nonfinite_starts": Entry("Chains that started where the log density is NaN/inf.", "0"),
        "seconds_incl_compile": Entry("Seconds of sampling, compilation included.", COST),
        "warmup_step_size_mean": Entry("Mean step size the warm-up adapted over the chains.", "context"),
        "min_ess_bulk": Entry("Bulk ESS of the worst coordinate over the diagnosed chains' kept draws.",
                              "at least 100 per chain (Vehtari et al. 2021); higher is better"),
        "max_rhat": Entry("Largest rank-normalised split R-hat over coordinates.",
                          "below 1.01 (the run warns above it, above 1.05 for chains with under 400 ESS each)"),
        "diagnosed_chains": Entry("Chains R-hat and ESS were computed on (at most 4096, evenly spaced).", "context"),
        "min_ess_per_s": Entry("min_ess_bulk per second of the sampling phase (warm-up left out).", "higher is faster"),
        "min_ess_per_s_incl_warmup": Entry("min_ess_bulk per second of warm-up and sampling.", "higher is faster"),
        "call_seconds": Entry("Wall seconds of one whole sampling call (warm-up, sampling, health checks, draws back "
                              "as NumPy), compiling nothing: a second call (``jaxsamp bench run mcmc``).", COST),
        "min_ess_per_call_second": Entry("min_ess_bulk per second of the whole call (``call_seconds``).",
                                         "higher is faster"),
        "first_call_seconds": Entry("Wall seconds of the first call in a process, compilation included.", COST),
        "warmup_seconds": Entry("Seconds of the warm-up (adaptation) phase of a call.", COST),
        "sampling_seconds": Entry("Seconds of the sampling phase of a call (after warm-up).", COST),
        "stationary_var": Entry("Time-averaged Var(x) of the chains' kept states after burn-in (``jaxsamp bench run "
                                "classical``: f = |x|^2 / 8, exact 4).", "the exact variance; the gap is the step's bias"),
        "sequential_calls_ratio": Entry("ULA's sequential target calls over a speculative (parallel-in-time) chain's "
                                        "for the same steps.", "higher is better; 1 means no speed-up"),
        "mode_axis_w2_sep<separation>": Entry("Exact 1-D W2 along a two-mode mixture's mode axis, chains against 1e5 "
                                              "exact draws, at that mode separation.",
                                              "0; a stuck mode split shows as a jump with the separation"),
        "flips_per_s": Entry("Single-site update attempts per second (Glauber / heat bath, jitted, compilation left "
                             "out).", "higher is faster"),
        "divergences": Entry("Divergent transitions after burn-in (HMC/NUTS).", "0"),
        "draws_per_s": Entry("Draws (all chains) per second of the sampling phase.", "higher is faster"),
        "grad_evals_per_s": Entry("Gradient evaluations (NUTS' leapfrog steps, all chains) per second of the sampling "
                                  "phase.", "higher is faster"),
        "lockstep": Entry("1 when the chains ran in lock-step (``chain_method`` vectorized), 0 when one after "
                          "another (sequential).", "context: what ``chain_method`` ran, or what ``auto`` chose"),
        "batching_gain": Entry("Seconds of every chain's gradient one after another over all of them batched, at the "
                               "starting points: what ``chain_method=\"auto\"`` measured (lock-step from 1.5).",
                               "context: above 1 when batching the chains pays"),
        "mean_integration_steps": Entry("Mean leapfrog steps per NUTS draw.",
                                        "context: the posterior's geometry, not the implementation's speed"),
        "mean_max_abs_z": Entry("Largest |z| over coordinates of the chains' final-state mean against the exact "
                                "samples' mean: the difference over sqrt(var / chains + var / exact samples).",
                                "below 4 (the verdict's limit); well-mixed independent chains give about 1-3"),
        "mean_abs_err": Entry("Largest |mean difference| over coordinates against exact samples.",
                              "within Monte Carlo error: about 5 sd / sqrt(ESS)"),
        "std_rel_err": Entry("Largest relative error of the per-coordinate standard deviation against exact samples.",
                             "a few per cent"),
        "mode_weight_tv": Entry("Total variation between the chains' mode weights and the mixture's weights.",
                                "0; a value near a mode's weight means that mode was missed"),
        # the suite ``overhead`` (jaxsamp/bench/suites/overhead.py): 1024 MALA chains, medians of alternated calls
        "wrapped_over_direct": Entry("Per-step time of blackjax MALA through ``jaxsamp.ensemble`` + ``jaxsamp.run`` (one "
                                     "chunk) over the same MALA vmapped and scanned by hand.",
                                     "at most 1.02 (issue 2's goal); read against control_direct_over_direct"),
        "driver_over_scan": Entry("Per-step time of the ensemble under ``jaxsamp.run`` with its progress bar and 10 "
                                  "chunks over a hand-written jitted ``lax.scan``.",
                                  "at most 1.02 (issue 2's goal); read against control_direct_over_direct"),
        "control_direct_over_direct": Entry("The hand-written scan against itself, alternated like the others (an A/A "
                                            "comparison): the noise floor of the overhead ratios.", "1"),
        "<variant>_step_ms": Entry("Median milliseconds per step (all chains) of the ``direct``, ``wrapped`` or "
                                   "``driver`` variant.", COST),
        "fingerprint_seconds": Entry("Seconds a checkpointed ``jaxsamp.run`` pays once per call to fingerprint the run "
                                     "(one trace of the step, the initial state hashed; median of 5).", COST),
        # the suite ``diagnostics`` (jaxsamp/bench/suites/diagnostics.py): the Stein discrepancy tests
        "rejection_rate": Entry("Share of repetitions in which a Stein discrepancy test (PSD or IMQ KSD, bootstrap) "
                                "rejects the target at level 0.05: its size under the null, its power otherwise.",
                                "0.05 under the null; close to 1 against an alternative"),
        "<test>_test_seconds": Entry("Seconds of one ``ksd`` or ``psd`` (r = 2) bootstrap test, compiled beforehand, "
                                     "best of 3.", COST),
        "psd_over_ksd_speedup": Entry("ksd_test_seconds / psd_test_seconds on the same points.",
                                      "at least 50 at n = 10^4 (issue 5's goal)"),
    },
    "smc": {
        "sinkhorn": _SMC_SINKHORN,
        "sinkhorn_floor": _SINKHORN_FLOOR,
        "reference_mean_err": _REFERENCE_MEAN_ERR,
        "num_levels": Entry("Temperatures taken (adaptive tempering picks them).", COST),
        "num_resamplings": Entry("Levels at which particles were resampled.", "context"),
        "acceptance_rate": Entry("Mean acceptance rate of the inner MCMC moves.", "0.5-0.9"),
        "seconds_incl_compile": Entry("Seconds of annealing, compilation included.", COST),
    },
    "vi": {
        "mean_log_q_reference": Entry("Mean log q of reference posterior draws (NUTS or exact).",
                                      "higher is better: it is minus the forward KL up to a constant"),
        "reference": Entry("Where the reference draws came from (exact samples or a NUTS run).", "context"),
        "forward_kl": Entry("2-D targets with a known log Z: KL(p || q) by quadrature on a grid (nats).",
                            "0; the bench's AISIVI reaches 0.0003-0.001 on the SIVI toys"),
        "p_mass": Entry("The target's mass inside the quadrature box.", "close to 1 (else forward_kl misses mass)"),
        "q_mass": Entry("The family's mass inside the quadrature box.", "close to 1"),
        "reverse_kl": Entry("KL(q || p) in closed form: a Gaussian family against a Gaussian posterior (the conjugate "
                            "linear regression; ``jaxsamp bench run vi``).", "0"),
        "hpd_coverage<level>": Entry("Share of reference posterior draws inside q's <level> % highest-density region "
                                     "(their log q above the quantile of log q over q's own draws).",
                                     "<level> / 100: below it q is too narrow, above it too wide"),
        "test_lppd": Entry("Mean over held-out rows of log mean_s p(y | x, w_s) over posterior draws w_s (the log "
                           "pointwise predictive density).", "higher is better; compare with NUTS's"),
        "train_steps_per_s": Entry("Training updates per second, compilation left out.", "higher is faster"),
    },
    "diffusion": {
        **_PATH_FIGURES,
        # the suite ``memory`` (jaxsamp/bench/suites/memory.py): every learned family's train step, listed once here
        "peak_gib": Entry("Peak memory of one training step at the paper's batch (GiB), XLA's memory analysis of the "
                          "compiled step (arguments + outputs - donated + temporaries) at two small batches, "
                          "extrapolated linearly.", "a sizing estimate: below the device's memory"),
        "state_gib": Entry("The train state's share of it (parameters, optimiser state, replay buffers; GiB).", COST),
        "temp_gib": Entry("The step's temporaries' share of it (GiB).", COST),
        "<part>_per_sample_mib": Entry("The line's slope: MiB per sample of the batch of ``peak``, ``state`` or "
                                       "``temp`` (on n devices it divides by n).", COST),
        "<part>_fixed_gib": Entry("The line's intercept: GiB of ``peak``, ``state`` or ``temp`` that do not grow with "
                                  "the batch.", COST),
        "measured_peak_gib_batch<batch>": Entry("The step's peak (GiB) as compiled at that batch.", COST),
    },
    "scld": {
        "sinkhorn": _SMC_SINKHORN,
        "reference_mean_err": _REFERENCE_MEAN_ERR,
        "segment_ess_min": Entry("Smallest normalised ESS of the evaluation run's weights at a segment end, before "
                                 "resampling (SCLD's sub-trajectory boundaries; one segment for CMCD).",
                                 "close to 1; the resampling threshold (0.3 by default) is where SMC steps in"),
        "segment_ess_mean": Entry("Mean of the same ESS over the segment ends.", "close to 1"),
        "num_resamplings": Entry("Segment ends at which the evaluation run resampled its particles.",
                                 "context: 0 for CMCD; fewer means a better learned transport"),
        "sample_target_evals": Entry("Target evaluations of the evaluation run (steps, score inputs and MCMC moves).",
                                     COST),
    },
    "adjoint": {
        **_PATH_FIGURES,
        "epochs": Entry("Training epochs (``run.num_steps``).", SETTING),
        "final_corrector_loss": Entry("ASBS: mean corrector-matching loss over the last corrector epochs.", "context"),
        "energy_w2": Entry("W2 between the energy histograms of the draws and of the reference set (energy units; "
                           "``jaxsamp.diagnostics.particles``).", "compare with energy_w2_floor; smaller is better"),
        "w2": Entry("W2 between draws and reference (E(n)-invariant for particles: aligned by rotation and permutation).",
                    "compare with w2_floor; smaller is better"),
        "energy_median": Entry("Median energy -log_prob of the draws (energy units).",
                               "close to the reference set's; far above it means high-energy (clashing) draws"),
        "w2_floor": Entry("Particle systems: the geometric W2 of as many test-split configurations against "
                          "validation-split ones, the figure a perfect sampler would score at this size.",
                          "context: w2 at this value is as good as the reference set can tell"),
        "w2_seconds": Entry("Seconds of one geometric W2 (``jaxsamp.diagnostics.geometric_w2``, its first call, "
                            "compilation included; ``jaxsamp bench run diagnostics``).",
                            "at most 120 s for 2000 against 2000 LJ-13 configurations (issue 5's goal)"),
        "energy_w2_floor": Entry("Particle systems: the energy W2 of the test split against the validation split at "
                                 "this size (the noise floor of energy_w2).",
                                 "context: energy_w2 at this value is as good as the reference set can tell"),
    },
    "tps_dps": {
        "rollouts": Entry("Training rollouts (``run.num_steps``).", SETTING),
        "thp_per_rollout": Entry("Target hit percentage of each training rollout.", "rising to 100"),
        "ets_per_rollout": Entry("Highest energy along the transition paths of each rollout.", "falling to the reference"),
        "rmsd": Entry("Mean distance to the end state of each path's closest approach (paths are cut there).", "0"),
        "rmsd_std": Entry("Standard deviation of that distance over paths.", "small"),
        "thp": Entry("Target hit percentage: paths whose closest approach is within ``hit_radius`` of the end state (%).",
                     "100"),
        "ets": Entry("Energy of the transition state: the highest potential along each hit path, averaged over hits.",
                     "the reference's value (1.36 +- 0.16 on the synthetic double well); lower is a better path"),
        "ets_std": Entry("Standard deviation of that energy (NaN with fewer than two hits).", "context"),
        "hits": Entry("Paths that reached the target state.", "all evaluation paths"),
    },
    "leaps": {
        "final_rollout_ess": Entry("ESS of the last training rollout's walkers.", "rising during training"),
        "eval_walkers": Entry("Walkers simulated for evaluation.", SETTING),
        "eval_steps": Entry("CTMC steps per evaluation walker.", SETTING),
        "ess_since_last_resample": Entry("With resampling on: the headline ESS since the last resampling.", "close to 1"),
        "log_w_var": Entry("Variance of the headline rule's log weights.", "0; below 1 gives a reliable log Z"),
        "ess_<rule>": Entry("Normalised ESS under a weight rule other than the headline one (whose ESS is ``ess``): "
                            "``exact``, the exact discrete-time weights, unbiased; ``quadrature_paper``, the paper's "
                            "Jarzynski quadrature -- after the jump for Ising, before it for Potts -- on the SAME walkers "
                            "as the exact rule, the figure to set beside the paper's ESS; ``pre`` / ``post`` / "
                            "``trapezoid``, quadratures on their own unfloored draws; with the ``checkerboard`` setting, "
                            "``exact_unsplit`` the unsplit walkers that ``quadrature_paper`` reads.", "close to 1"),
        "ess_since_last_resample_<rule>": Entry("With resampling on: the ESS of the weights since the last resampling.", "close to 1"),
        "log_Z_hat_<rule>": Entry("log Z estimated under weight rule ``<rule>`` (``exact``, ``quadrature_paper``, ``pre``, "
                                  "``post``, ``trapezoid``, other than the headline one): every rule drawn with the same "
                                  "key; ``exact`` and ``quadrature_paper`` on the very same walkers.",
                                  "equal to log_Z_exact within a few 0.01"),
        "log_Z_abs_err_<rule>": Entry("|log_Z_hat_<rule> - log_Z_exact|.", "0"),
        "ess_untrained": Entry("ESS of an untrained network's walkers (the annealing baseline).", "well below ``ess``"),
        "ess_since_last_resample_untrained": Entry("With resampling on: the untrained network's ESS since the last resampling.", "context"),
        "log_w_var_untrained": Entry("Variance of the untrained network's log weights.", "context"),
        "train_steps_per_s": Entry("Training updates per second, compilation included (the old LEAPS script's rate).",
                                   "higher is faster"),
        "sample_seconds_per_1000_walkers_<rule>": Entry("Seconds to simulate 1000 walkers under rule ``<rule>``.", COST),
        "abs_order": Entry("Weighted mean |magnetisation| (Potts: order parameter) of the walkers.", "equal to abs_order_reference"),
        "abs_order_reference": Entry("The same from the reference (exact enumeration or long Glauber chains).", "reference"),
        "order_hist_tv": Entry("Total variation between the weighted and reference histograms of the order parameter.", "0"),
        "two_point_max_abs_err": Entry("Largest error of the connected two-point function against the reference.", "0"),
    },
    "gflownet": {
        "num_modes": Entry("Modes of the reward.", "context"),
        "trajectories": Entry("Trajectories sampled in training (steps x batch).", COST),
        "<policy>_log_Z_hat": Entry("log Z by importance sampling with the trained sampler's trajectory weights "
                                    "(backward policy ``<policy>``).", "equal to log_Z_exact within a few 0.01"),
        "<policy>_log_Z_abs_err": Entry("|log_Z_hat - log_Z_exact|.", "0"),
        "<policy>_elbo": Entry("Mean trajectory log weight: a lower bound on log Z.", "close to log Z from below"),
        "<policy>_elbo_abs_err": Entry("|elbo - log_Z_exact|.", "0"),
        "<policy>_ess": Entry("Normalised ESS of the trajectory weights, in (0, 1].", "1 at the optimum of any balance loss"),
        "<policy>_nonfinite_samples": Entry("Draws with a NaN/inf log weight (left out of every figure).", "0"),
        "<policy>_log_Z_learned": Entry("The learned log Z at the end (TB's parameter, log F(s_0), or V(s_0) for soft DQN).",
                                        "equal to log_Z_exact"),
        "<policy>_log_Z_learned_abs_err": Entry("|log_Z_learned - log_Z_exact| at the end.", "0"),
        **{f"<policy>_{name}": entry for name, entry in _GFLOWNET_RUN.items() if name != "rollout_trajectories_per_s"},
        **_GFLOWNET_RUN,
        "<policy>_final_loss": Entry("The last training loss.", "context"),
        "<policy>_train_seconds_incl_compile": Entry("Seconds of training, compilation included.", COST),
    },
    "curves": {
        "interpolation": Entry("The interpolation trained (``linear``, ``learned``, ``gradient_flow``).", SETTING),
        "diverged_collocation_points": Entry("Collocation trajectories that diverged and were left out of the loss.", "0"),
        "sample_target_evals": Entry("Target evaluations to draw the evaluation samples.", COST),
        "ess_jarzynski": Entry("ESS of the Jarzynski-type weights.", "close to 1"),
        "log_Z_hat_jarzynski": Entry("log Z by importance sampling with the Jarzynski-type weights.",
                                     "equal to log_Z_hat up to the ODE error"),
        "log_Z_abs_err_jarzynski": Entry("|log_Z_hat_jarzynski - log_Z_exact|.", "0"),
        "mmd": Entry("MMD between unweighted samples and exact target samples.", "0; compare with two exact sets"),
        "max_velocity": Entry("Largest |v_t(x_t)| over time and samples.", "moderate; a spike means a stiff curve"),
        "peak_mean_velocity": Entry("Largest over t of the mean |v_t(x_t)|.", "context"),
        "langevin_acceptance": Entry("Acceptance of the optional MALA corrections (NaN without).", "0.5-0.9"),
        "train_and_sample_target_evals": Entry("Target evaluations of training and of drawing the evaluation samples "
                                               "(``target_evals + sample_target_evals``; what the curves' benchmark "
                                               "script recorded as ``target_evals``).", COST),
        "peak_rms_speed_<interpolation>": Entry("The largest over t of the exact root-mean-square speed "
                                                "sqrt(E_rho_t v_t^2) of a 1-D curve to a two-mode mixture "
                                                "(``jaxsamp.learned.curves.ode.exact_speeds_1d``).",
                                                "moderate; growing without bound with the modes' separation means "
                                                "the curve teleports mass (the linear one)"),
    },
    "bernoulli_denoising": {
        "final_bit_error": Entry("Fraction of bits the denoiser gets wrong on the last training batches.", "context"),
        "num_train": Entry("Training samples.", SETTING),
        "num_samples": Entry("Samples drawn for evaluation.", SETTING),
        "denoiser_evals_per_sample": Entry("Denoiser calls per clean sample.", COST),
        "sample_seconds_incl_compile": Entry("Seconds of sampling, compilation included.", COST),
        "acceptance_rate": Entry("Mean acceptance of the noisy-variable sampler.", "context"),
        "flip_probability": Entry("Bit-flip probability of the noise level alpha.", SETTING),
        "tv": Entry("Total variation to the exact law (enumerable targets).", "down to tv_floor"),
        "tv_floor": Entry("Expected TV of as many exact samples (the Monte Carlo floor).", "reference"),
        "tv_floor_sd": Entry("Standard deviation of that TV over 20 multinomial draws.", "reference"),
        "tv_exact_score": Entry("TV with the exact denoiser in place of the learned one.", "reference: the sampler's own error"),
        "mmd_test": Entry("Hamming-kernel MMD between samples and held-out data.", "down to mmd_train_vs_test"),
        "mmd_train_vs_test": Entry("The same MMD between training and held-out data (the floor).", "reference"),
        "abs_m": Entry("Mean |magnetisation| of the samples (Ising).", "equal to abs_m_exact"),
        "abs_m_exact": Entry("Exact (or long-chain) mean |magnetisation|.", "reference"),
        "abs_m_err": Entry("|abs_m - abs_m_exact|.", "0"),
        "train_abs_m_err": Entry("The same error of the training data.", "reference"),
        "m_tv": Entry("TV between the samples' and the exact magnetisation distributions.", "0"),
        "pseudo_log_likelihood": Entry("Per-spin pseudo-log-likelihood of the training data under the fully visible "
                                       "Boltzmann machine fitted to it (the digits baseline of the ``binary`` suite).",
                                       "context: higher fits the data better"),
    },
    "mile": {
        "num_members": Entry("Deep-ensemble members (one chain each).", SETTING),
        "num_parameters": Entry("Network parameters per member.", "context"),
        "num_train": Entry("Training points of the UCI split.", "context"),
        "target_scale": Entry("Standard deviation the targets were scaled by.", "context"),
        "de_lppd": Entry("Test log pointwise predictive density of the deep ensemble.", "higher is better"),
        "de_rmse": Entry("Test RMSE of the deep ensemble (original units).", "lower is better"),
        "de_coverage90": Entry("Share of test targets inside the 90% predictive interval.", "0.9"),
        "de_seconds": Entry("Seconds to train the ensemble.", COST),
        "de_grad_evals": Entry("Gradient evaluations to train the ensemble.", COST),
        "de_epochs_mean": Entry("Mean epochs before early stopping.", "below max_epochs"),
        "<method>_lppd": Entry("Test LPPD of ``mile`` or ``bde``.", "above de_lppd"),
        "<method>_rmse": Entry("Test RMSE.", "lower is better"),
        "<method>_coverage90": Entry("90% predictive interval coverage.", "0.9"),
        "<method>_seconds": Entry("Seconds of tuning and sampling.", COST),
        "<method>_grad_evals": Entry("Gradient evaluations of tuning and sampling.", COST),
        "<method>_total_seconds": Entry("Seconds including the deep ensemble.", COST),
        "<method>_total_grad_evals": Entry("Gradient evaluations including the deep ensemble.", COST),
        "<method>_tuning_seconds": Entry("Seconds of tuning.", COST),
        "<method>_sampling_seconds": Entry("Seconds of sampling.", COST),
        "<method>_draws_per_member": Entry("Draws kept per member.", SETTING),
        "<method>_nonfinite_draws": Entry("Draws holding NaN/inf parameters.", "0"),
        "<method>_<parameter>_median": Entry("Median over members of a tuned parameter (step size, L, ...).", "context"),
        "<method>_rhat_params_median": Entry("Median over parameters of R-hat across members.", "context: BNN posteriors are multimodal"),
        "<method>_ess_bulk_params_median": Entry("Median bulk ESS over parameters.", "higher is better"),
        "<method>_rhat_test_loglik": Entry("R-hat of the per-draw test log likelihood.", "below 1.1"),
        "<method>_ess_bulk_test_loglik": Entry("Bulk ESS of the per-draw test log likelihood.", "higher is better"),
        "mile_tuning_rejected_fraction": Entry("Share of MILE's tuning steps rejected as non-finite.", "below 0.01"),
        "bde_warmup_divergent_fraction": Entry("Share of BDE warm-up steps that diverged.", "small"),
        "mile_speedup_vs_bde": Entry("BDE's wall time over MILE's, bde_seconds / mile_seconds (the suite ``mile``).",
                                     "at least 5 (issue 19's goal)"),
        "mile_lppd_gain_vs_<method>": Entry("mile_lppd - <method>_lppd, same members and split (the suite ``mile``).",
                                            "above 0 (issue 19's goal)"),
    },
    "vmf_exploration": {
        "num_actions": Entry("Actions in the catalogue.", SETTING),
        "num_draws": Entry("Selections drawn per method.", SETTING),
        "vmfexp_selections_per_s": Entry("vMF-exp selections per second.", "higher is faster"),
        "boltzmann_selections_per_s": Entry("Boltzmann exploration selections per second.", "higher is faster"),
        "max_rel_dev_vmfexp_vs_boltzmann": Entry("Largest relative deviation of vMF-exp's selection frequencies "
                                                 "from Boltzmann's exact probabilities (populated bins).",
                                                 "small: the paper's claim is that they agree"),
        "max_rel_dev_first_order_vs_boltzmann": Entry("The same for the first-order approximation.", "small"),
        "bin_centres": Entry("Centres of the inner-product bins.", "context"),
        "vmfexp_bin_frequency": Entry("vMF-exp's selection frequency per bin.", "follows boltzmann_bin_probability"),
        "boltzmann_bin_frequency": Entry("Boltzmann exploration's frequency per bin.", "follows boltzmann_bin_probability"),
        "boltzmann_bin_probability": Entry("Exact Boltzmann probability per bin.", "reference"),
        "first_order_bin_probability": Entry("First-order approximation per bin.", "context"),
        "ivf_build_seconds": Entry("Seconds to build the inverted-file index.", COST),
        "ivf_rows_per_draw": Entry("Rows the index reads per draw (its probed lists' pages), of num_actions.", COST),
        "ivf_recall": Entry("Share of queries whose approximate search found the exact best action.", "close to 1"),
        # the suite ``vmf`` (jaxsamp/bench/suites/vmf.py)
        "vmf_samples_per_s_<impl>": Entry("vMF draws per second of ``jaxsamp``, ``tfp`` or ``scipy`` (best of 3 calls).",
                                          "higher is faster"),
        "vmf_samples_per_s_ratio_vs_best_other": Entry("Our vMF draws per second over the faster of TFP and scipy.",
                                                       "at least 1"),
        "vmf_log_norm_max_rel_err": Entry("Largest error of the float64 vMF log normaliser against mpmath, relative "
                                          "to max(1, |exact|), over the suite's grid of d and kappa.", "below 1e-6"),
        "boltzmann_<sampler>_selections_per_s": Entry("Exact Boltzmann selections per second, one query at a time, "
                                                      "by the ``full_cdf`` or the ``streamed`` sampler.", "higher is faster"),
        "vmfexp_ivf_selections_per_s": Entry("vMF-exp selections per second through the inverted-file index, one "
                                             "query at a time.", "higher is faster"),
        "<method>_batched_selections_per_s": Entry("Selections per second with the queries in one call (sharing "
                                                   "matrix products).", "higher is faster"),
        "vmfexp_ivf_nprobe": Entry("Lists probed per draw, chosen by the selection-fidelity rule.", "context"),
        "vmfexp_ivf_tuning_tv_bound": Entry("Coupling bound on the TV between the index's and exact vMF-exp's "
                                            "selection laws on the tuning queries, at the chosen nprobe.", "at most 0.02"),
        "vmfexp_ivf_tv_bound": Entry("The same bound on the scored queries (held out from the tuning).", "at most 0.02"),
        "vmfexp_ivf_tv_bound_se": Entry("Standard error of vmfexp_ivf_tv_bound.", "small against 0.02"),
        "vmfexp_ivf_rows_read_fraction": Entry("Rows the index reads per draw over num_actions.", COST),
        "vmfexp_ivf_speedup_vs_boltzmann": Entry("vMF-exp through the index over exact Boltzmann, selections per "
                                                 "second one query at a time.", "at least 10 (issue 43's goal)"),
        "vmfexp_ivf_batched_speedup_vs_boltzmann_batched": Entry("The same, both batched.", "above 1"),
    },
}


def _pattern(key: str) -> re.Pattern:
    parts = re.split(r"<[a-z_]+>", key)
    return re.compile("[A-Za-z0-9_]+".join(map(re.escape, parts)) + r"\Z")


def describe(kind: str, key: str) -> Entry | None:
    """The glossary entry of ``key`` in a run of ``kind`` (``None`` when there is none).

    An exact key is preferred to a placeholder one (``ess`` over ``ess_<rule>``), and of two
    placeholder keys the one with more fixed text (``tlm_policy_l1`` is ``<policy>_policy_l1``,
    not ``<policy>_l1``).
    """
    entries = {**VOCABULARY, **GLOSSARY.get(kind, {}), **COMMON}
    if key in entries:
        return entries[key]
    matches = [pattern for pattern in entries if "<" in pattern and _pattern(pattern).match(key)]
    if not matches:
        return None
    return entries[max(matches, key=lambda pattern: len(re.sub(r"<[a-z_]+>", "", pattern)))]


def vocabulary_problems(keys) -> list[str]:
    """What is wrong with a run's or a method's figure names: a retired or ambiguous name, with the name to use."""
    return [f"{key!r} is retired: use {RETIRED[key]}" for key in sorted(keys) if key in RETIRED]


def check_documented(kind: str, keys) -> list[str]:
    """Warn (:class:`UndocumentedMetricWarning`) about the ``keys`` of a ``kind`` run the glossary lacks; return them."""
    missing = sorted(k for k in keys if describe(kind, k) is None)
    if missing:
        warnings.warn(
            f"metrics.json keys of kind {kind!r} missing from jaxsamp.experiments.glossary: {', '.join(missing)}",
            UndocumentedMetricWarning,
            stacklevel=2,
        )
    return missing
