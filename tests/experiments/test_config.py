import pytest

from jaxsamp.experiments.config import ExperimentConfig, load_config, to_yaml
from jaxsamp.core.errors import ConfigError
from jaxsamp.core.registry import SAMPLERS, TARGETS


def write(tmp_path, text):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return path


def test_load_with_overrides_is_typed(tmp_path):
    path = write(tmp_path, "name: x\ntarget: {name: gaussian, params: {dim: 3}}\nsampler: {name: mala}\n")
    cfg = load_config(path, ["run.num_chains=8", "sampler.params.step_size=0.25", "seed=3"])
    assert isinstance(cfg, ExperimentConfig)
    assert cfg.run.num_chains == 8 and cfg.seed == 3
    assert cfg.sampler.params == {"step_size": 0.25}
    assert load_config(write(tmp_path, to_yaml(cfg))) == cfg


def test_hydra_style_overrides_apply_or_are_refused(tmp_path):
    """``+key=value`` (Hydra's add) applies, where it used to vanish silently; ``~key`` and malformed keys are refused."""
    path = write(tmp_path, "name: x\ntarget: {name: gaussian, params: {dim: 3}}\nsampler: {name: mala}\n")
    assert load_config(path, ["+sampler.params.step_size=0.25"]).sampler.params == {"step_size": 0.25}
    with pytest.raises(ConfigError, match="removing a key is not supported"):
        load_config(path, ["~run.num_chains=1"])
    with pytest.raises(ConfigError, match="not a dotted key"):
        load_config(path, ["run..num_chains=1"])
    with pytest.raises(ConfigError, match="nope"):
        load_config(path, ["+run.nope=1"])


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("name: x\ntarget: {name: g}\nsampler: {name: m}\nrun: {num_chains: 1.5}\n", "num_chains"),
        ("name: x\ntarget: {name: g}\nsampler: {name: m}\nbogus: 1\n", "bogus"),
        ("target: {name: g}\nsampler: {name: m}\n", "name"),
        ("name: [unclosed\n", "YAML"),
    ],
)
def test_bad_configs_raise_one_line_errors(tmp_path, text, fragment):
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, text))
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_registry_validates_parameters():
    import jaxsamp.targets  # noqa: F401  (registers the targets)

    with pytest.raises(ConfigError, match="unknown parameter 'dims'"):
        TARGETS.get("gaussian", dims=2)
    with pytest.raises(ConfigError, match="must be int"):
        TARGETS.get("gaussian", dim="two")
    with pytest.raises(ConfigError, match="unknown target 'nope'"):
        TARGETS.get("nope")
    with pytest.raises(ConfigError, match="unknown sampler"):
        SAMPLERS.entry("nope")


def test_run_shard_trains_a_learned_kind_data_parallel(tmp_path):
    """Every learned kind trains through ``fitting.fit_method``: with ``run.shard`` over a mesh of every device."""
    import jax

    import jaxsamp
    from jaxsamp.experiments.fitting import fit_method
    from jaxsamp.learned.vi.elbo import ELBOSettings

    cfg = ExperimentConfig()
    cfg.run.shard, cfg.run.num_steps, cfg.run.num_chains, cfg.run.progress = True, 2, 8, False
    fitted = fit_method(cfg, jaxsamp.targets.get("gaussian", dim=2), ELBOSettings(), tmp_path, jax.random.key(0),
                        method="elbo")
    leaf = jax.tree.leaves(fitted.state.params)[0]
    assert len(leaf.sharding.device_set) == jax.device_count() and leaf.sharding.is_fully_replicated
    assert len(fitted.history["loss"]) == 2 and (tmp_path / "checkpoints").is_dir()


@pytest.mark.parametrize("value", ["a: b", "!!python/object/apply:os.system [echo hi]", "[1, 2"])
def test_an_override_whose_value_is_not_yaml_is_a_config_error_naming_it(value):
    item = f"run.num_steps={value}"
    with pytest.raises(ConfigError, match="cannot be read as YAML") as err:
        load_config("quickstart", [item])
    assert repr(item) in err.value.message and "\n" not in str(err.value) and err.value.hint
