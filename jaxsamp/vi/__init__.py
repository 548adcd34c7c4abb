"""Variational inference on distrax: families (Gaussians, coupling flows, a semi-implicit family) and objectives, one file each.

Every method is ``Method(target, settings, batch_size)``, a :class:`~jaxsamp.core.Trainer`
run by :func:`jaxsamp.run` with ``sample(state, key, n) -> WeightedSamples``,
``log_q(state, z, key)`` and ``evaluate(state, key, n)`` on the train state, and is
registered for :func:`jaxsamp.fit`: :class:`~jaxsamp.vi.softcvi.SoftCVI` (``"softcvi"``),
:class:`~jaxsamp.vi.elbo.ELBO` (``"elbo"``), :class:`~jaxsamp.vi.snis_forward_kl.SNISForwardKL`
(``"snis_fkl"``) on the family their settings name (:mod:`jaxsamp.vi.families`), and
:class:`~jaxsamp.vi.aisivi.AISIVI` / :class:`~jaxsamp.vi.aisivi.BSIVI` (``"aisivi"``,
``"bsivi"``) on a semi-implicit Gaussian family. :mod:`jaxsamp.vi.training` holds what they share.
"""
