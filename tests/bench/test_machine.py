"""Seeds are pooled only on one machine, also where the old scripts' records kept no CPU model."""

from jaxsamp.bench.machine import accelerator, machine_label


def test_records_without_a_cpu_model_are_told_apart_by_their_platform():
    old = {"processor": "x86_64", "cpu_count": 2, "python": "3.11.7", "jax": "0.10.1", "devices": ["cpu:0"]}
    hosts = [machine_label({**old, "platform": f"Linux-6.18.44-fc-{build}-x86_64"}) for build in ("v1045", "v1300")]
    assert hosts[0] != hosts[1] and "fc-v1045" in hosts[0]
    # a record with the CPU model is labelled by it, as before
    assert machine_label({**old, "platform": "p", "cpu_model": "EPYC", "cpu_vector": "avx512f"}).startswith("EPYC (avx512f)")


def test_an_accelerator_names_its_own_results_file_and_a_cpu_names_none():
    assert accelerator({"device_kind": "NVIDIA H100 80GB HBM3", "devices": ["cuda:0"]}) == "nvidia-h100-80gb-hbm3"
    assert accelerator({"device_kind": "TPU v5 lite"}) == "tpu-v5-lite"
    assert accelerator({"device_kind": "cpu"}) == accelerator({}) == ""
