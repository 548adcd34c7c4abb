"""Variational inference on distrax: families (Gaussians, coupling flows) and objectives, one file each.

Every objective builds a :class:`~jaxsamp.core.Trainer` run by :func:`jaxsamp.run`;
:func:`~jaxsamp.vi.training.weighted_samples` turns a trained family into
:class:`~jaxsamp.core.WeightedSamples`.
"""
