"""Action selection over embedded actions on the sphere: vMF exploration, Boltzmann exploration, and their index.

Not a sampler of a target density but the choice of one of ``n`` embedded actions for a
query: vMF-exp draws a direction from a von Mises-Fisher law around the query and plays
the best action for it, one maximum-inner-product search in place of Boltzmann
exploration's softmax over every action.

Papers: Bendada et al. (2025), "Exploring large action sets with hyperspherical embeddings
using von Mises-Fisher sampling", ICML; Jégou, Douze & Schmid (2011), "Product quantization
for nearest neighbor search", IEEE TPAMI (the inverted-file coarse quantiser).

Files
-----
vmf_exploration
    vMF-exp and Boltzmann exploration: batched, jittable selection, exact or approximate search.
inverted_file_index
    An inverted-file (IVF) index for approximate maximum-inner-product search over unit vectors.
row_reductions
    The first argmax and a categorical draw per row, in forms XLA's CPU backend runs fast.
index_fidelity
    ``nprobe`` chosen by a bound on the total variation between the index's and exact vMF-exp's selection laws.
"""

from jaxsamp.core.lazy import submodule_getattr

__getattr__ = submodule_getattr(__name__)  # submodules on first use
