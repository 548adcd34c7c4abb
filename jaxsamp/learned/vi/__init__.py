"""Variational inference on distrax: families (Gaussians, coupling flows, a semi-implicit family) and objectives, one file each.

Every method is built by its module's ``build(target, settings=None, *, batch_size=None,
optimizer=None)``, which returns a :class:`~jaxsamp.core.LearnedSampler` (``sample(key, state, n)``
gives draws of ``q`` weighted by ``log p~ - log q``), and is registered for :func:`jaxsamp.fit`:
:mod:`~jaxsamp.learned.vi.softcvi` (``"softcvi"``), :mod:`~jaxsamp.learned.vi.elbo` (``"elbo"``),
:mod:`~jaxsamp.learned.vi.snis_forward_kl` (``"snis_forward_kl"``) on the explicit family their settings
name (:mod:`~jaxsamp.learned.vi.families`), and :mod:`~jaxsamp.learned.vi.aisivi` (``"aisivi"``) and
:mod:`~jaxsamp.learned.vi.bsivi` (``"bsivi"``) on the semi-implicit Gaussian family
(:mod:`~jaxsamp.learned.vi.semi_implicit`, their numerics). :mod:`~jaxsamp.learned.vi.training` holds
what they share, :mod:`~jaxsamp.learned.vi.density` the density ``log q`` of a fitted family.
"""

from jaxsamp.core.lazy import submodule_getattr

__getattr__ = submodule_getattr(__name__)  # submodules on first use
