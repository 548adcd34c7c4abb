"""The ``vmf_exploration`` kind through the runner: shipped configs at small size, metrics, plot, bad settings."""

from pathlib import Path

import numpy as np
import pytest

from jaxsamp.core.errors import ConfigError
from jaxsamp.experiments.config import load_config
from jaxsamp.experiments.runner import run_experiment

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
SMALL = ["sampler.params.num_actions=3000", "sampler.params.num_draws=4000", "sampler.params.num_clusters=10",
         "sampler.params.num_lists=20", "sampler.params.nprobe=4"]


@pytest.mark.parametrize("name", ["vmf_exploration_uniform.yaml", "vmf_exploration_clustered.yaml"])
def test_shipped_config_runs_at_small_size(name, tmp_path):
    cfg = load_config(CONFIGS / name, [*SMALL, f"run.out_dir={tmp_path}"])
    run_dir, metrics = run_experiment(cfg, verbose=False)
    assert (run_dir / "selection_probabilities.png").is_file()
    for key in ("vmfexp_bin_frequency", "boltzmann_bin_frequency", "boltzmann_bin_probability"):
        np.testing.assert_allclose(sum(metrics[key]), 1.0, atol=1e-5)
    assert metrics["vmfexp_selections_per_s"] > 0 and metrics["boltzmann_selections_per_s"] > 0
    if "uniform" in name:  # d = 4, kappa = 1, 3000 uniform actions: the approximation within 10 % of Boltzmann
        assert metrics["max_rel_dev_first_order_vs_boltzmann"] < 0.1
    else:  # the clustered config searches an inverted-file index: 4 of 20 lists over 10 clusters, read page by page
        assert metrics["ivf_recall"] >= 0.9 and 0 < metrics["ivf_rows_per_draw"] < 3000


def test_bad_settings_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="search"):
        run_experiment(load_config(CONFIGS / "vmf_exploration_uniform.yaml",
                                   ["sampler.params.search=hnsw", f"run.out_dir={tmp_path}"]), verbose=False)
    with pytest.raises(ConfigError, match="nprobe <= num_lists"):
        run_experiment(load_config(CONFIGS / "vmf_exploration_clustered.yaml",
                                   [*SMALL, "sampler.params.nprobe=50", f"run.out_dir={tmp_path}"]), verbose=False)
    with pytest.raises(ConfigError, match="exploration distribution must be the 'vmf' target"):
        run_experiment(load_config(CONFIGS / "vmf_exploration_uniform.yaml",
                                   ["target.name=vmf_mixture", f"run.out_dir={tmp_path}"]), verbose=False)
