"""Layering: the library layers never import the experiment layer above them.

The registries live in ``jaxsamp/core/registry.py``, so targets, kernels,
annealing, learned samplers, networks and diagnostics register and run with
``jaxsamp.experiments`` made unimportable.
"""

import subprocess
import sys

CHILD = """
import sys

class BlockExperiments:
    def find_spec(self, name, path=None, target=None):
        if name == "jaxsamp.experiments" or name.startswith("jaxsamp.experiments."):
            raise ImportError(f"blocked by the layering test: {name}")
        return None

sys.meta_path.insert(0, BlockExperiments())
import jaxsamp, jaxsamp.targets, jaxsamp.mcmc, jaxsamp.smc, jaxsamp.diagnostics
import jaxsamp.learned.diffusion.adjoint, jaxsamp.learned.leaps.training, jaxsamp.nets.egnn
import jaxsamp.learned.gflownet, jaxsamp.learned.curves, jaxsamp.learned.binary.bernoulli_samplers, jaxsamp.selection.vmf_exploration
import jaxsamp.learned.vi.aisivi, jaxsamp.learned.vi.softcvi, jaxsamp.learned.vi.density
from jaxsamp.core.registry import SAMPLERS, TARGETS
assert "ising" in TARGETS.names() and "hmc" in SAMPLERS.names()
SAMPLERS.get("mala", TARGETS.get("gaussian", dim=2), step_size=0.1)
assert not [m for m in sys.modules if m.startswith("jaxsamp.experiments")]
try:
    import jaxsamp.experiments
except ImportError as err:
    assert "blocked by the layering test" in str(err)
else:
    raise AssertionError("the block did not hold")
print("LAYERING-OK")
"""


def test_library_layers_import_without_the_experiment_layer():
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "LAYERING-OK" in proc.stdout
