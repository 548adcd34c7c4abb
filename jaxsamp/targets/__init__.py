"""Targets with exact references, by name: ``jaxsamp.targets.get(name, **params)``."""

from jaxsamp.core.lazy import submodule_getattr
from jaxsamp.core.registry import TARGETS
from jaxsamp.core.target import FunctionTarget, as_target, from_function
from jaxsamp.targets import gaussian as _gaussian  # noqa: F401  (registers)
from jaxsamp.targets import mixture as _mixture  # noqa: F401
from jaxsamp.targets import lattice as _lattice  # noqa: F401
from jaxsamp.targets import bayes_logreg as _bayes_logreg  # noqa: F401
from jaxsamp.targets import binary as _binary  # noqa: F401
from jaxsamp.targets import bit_sequence as _bit_sequence  # noqa: F401
from jaxsamp.targets import bnn as _bnn  # noqa: F401
from jaxsamp.targets import eight_schools as _eight_schools  # noqa: F401
from jaxsamp.targets import funnel as _funnel  # noqa: F401
from jaxsamp.targets import hypergrid as _hypergrid  # noqa: F401
from jaxsamp.targets import linear_regression as _linear_regression  # noqa: F401
from jaxsamp.targets import many_well as _many_well  # noqa: F401
from jaxsamp.targets import particles as _particles  # noqa: F401
from jaxsamp.targets import sivi_toys as _sivi_toys  # noqa: F401
from jaxsamp.targets import sphere as _sphere  # noqa: F401
from jaxsamp.targets import student_t_mixture as _student_t_mixture  # noqa: F401
from jaxsamp.targets import transition_paths as _transition_paths  # noqa: F401
from jaxsamp.targets import lattice_double_well as _lattice_double_well  # noqa: F401
from jaxsamp.targets.annealing import geometric_path
from jaxsamp.targets.bayes_logreg import BayesLogisticRegression
from jaxsamp.targets.binary import BernoulliMixture, BinaryDigits, ProductBernoulli
from jaxsamp.targets.bit_sequence import BitSequence
from jaxsamp.targets.bnn import BnnRegression
from jaxsamp.targets.dag_environment import DagEnvironment, ExactFlows
from jaxsamp.targets.energy_lattice import LatticeEnergy, lattice_energy
from jaxsamp.targets.funnel import Funnel
from jaxsamp.targets.gaussian import Gaussian
from jaxsamp.targets.hypergrid import Hypergrid
from jaxsamp.targets.inference_gym_adapter import InferenceGymTarget, from_inference_gym
from jaxsamp.targets.lattice import Ising, LatticeModel, LatticePath, Potts
from jaxsamp.targets.lattice_double_well import LatticeDoubleWell
from jaxsamp.targets.many_well import ManyWell
from jaxsamp.targets.mixture import GaussianMixture
from jaxsamp.targets.numpyro_adapter import NumpyroTarget, from_numpyro
from jaxsamp.targets.particles import DoubleWellParticles, LennardJones, remove_com
from jaxsamp.targets.sphere import VmfMixture, VonMisesFisher
from jaxsamp.targets.student_t_mixture import StudentTMixture
from jaxsamp.targets.transition_paths import TransitionPathSpec, TransitionPathTarget

get = TARGETS.get
names = TARGETS.names

__all__ = [
    "BayesLogisticRegression", "BernoulliMixture", "BinaryDigits", "BitSequence", "BnnRegression", "DagEnvironment",
    "DoubleWellParticles", "ExactFlows", "FunctionTarget", "Funnel", "Gaussian", "GaussianMixture", "Hypergrid",
    "InferenceGymTarget", "Ising", "LatticeDoubleWell", "LatticeEnergy", "LatticeModel", "LatticePath", "LennardJones",
    "ManyWell", "NumpyroTarget", "Potts", "ProductBernoulli",
    "StudentTMixture", "TransitionPathSpec", "TransitionPathTarget", "as_target", "from_function",
    "from_inference_gym", "from_numpyro", "geometric_path", "get", "lattice_energy", "names", "remove_com",
]

__getattr__ = submodule_getattr(__name__)  # submodules on first use
