"""Bayesian logistic regression on a small real dataset shipped with the package, or on synthetic data."""

from __future__ import annotations

import importlib.resources
import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.registry import TARGETS
from jaxsamp.core.target import Target
from jaxsamp.core.validation import PositiveFloat
from jaxsamp.targets.gaussian import Gaussian

DATASETS = ("breast_cancer", "synthetic")


def load_breast_cancer() -> tuple[np.ndarray, np.ndarray]:
    """The UCI Breast Cancer Wisconsin (Diagnostic) data shipped in ``jaxsamp/targets/data``.

    Returns
    -------
    features : array (569, 30) float64
    labels : array (569,) float64, 1 = benign, 0 = malignant (scikit-learn's coding)

    See ``jaxsamp/targets/data/README.md`` for provenance and licence (CC BY 4.0, via
    scikit-learn's BSD-3 copy).
    """
    path = importlib.resources.files("jaxsamp.targets") / "data" / "breast_cancer.csv"
    with path.open() as f:
        table = np.loadtxt(f, delimiter=",", skiprows=1)
    return table[:, :-1], table[:, -1]


class BayesLogisticRegression(Target):
    """Posterior of a logistic regression with a Gaussian prior, unnormalised.

    ``log p(w) = sum_n [y_n s_n - log(1 + e^{s_n})] + log N(w; 0, sigma^2 I)``, ``s = X w``,
    where ``X`` is the standardised design (each feature zero mean, unit variance) with a
    leading column of ones (intercept). This is the standard benchmark posterior of
    Inference Gym / posteriordb-style logistic regressions (e.g. Hoffman & Gelman 2014,
    "The No-U-Turn Sampler", JMLR 15, its logistic-regression experiment) and of
    Beyond-ELBOs' "Cancer" (d = 31; that code
    drops the prior, we keep it). The evidence ``log Z`` is NOT known exactly (``log_Z`` is
    None); :meth:`laplace_approximation` gives a Gaussian approximation and its log Z.

    Parameters
    ----------
    features : array (n, p)
    labels : array (n,) of 0/1
    prior_scale : float
        Prior standard deviation ``sigma`` of every coefficient.
    """

    def __init__(self, features, labels, prior_scale: float = 1.0, name: str = "bayes_logreg"):
        features = np.asarray(features, dtype=np.float64)
        labels = np.asarray(labels, dtype=np.float64)
        if features.ndim != 2 or labels.shape != (features.shape[0],):
            raise InputError(f"features must be (n, p) and labels (n,); got {features.shape}, {labels.shape}")
        if not np.all((labels == 0) | (labels == 1)):
            raise InputError("labels must be 0 or 1")
        if not prior_scale > 0:
            raise InputError(f"prior_scale must be positive, got {prior_scale}")
        std = features.std(axis=0)
        if np.any(std == 0):
            raise InputError("a feature is constant and cannot be standardised")
        standardised = (features - features.mean(axis=0)) / std
        self.design_np = np.hstack([np.ones((features.shape[0], 1)), standardised])
        self.labels_np, self.prior_scale = labels, float(prior_scale)
        self.name, self.event_shape = name, (self.design_np.shape[1],)

    def _log_prob(self, w):
        logits = jnp.asarray(self.design_np, w.dtype) @ w
        log_lik = jnp.sum(jnp.asarray(self.labels_np, w.dtype) * logits - jax.nn.softplus(logits))
        d = w.shape[0]
        log_prior = -0.5 * jnp.sum(w**2) / self.prior_scale**2 - d * (
            math.log(self.prior_scale) + 0.5 * math.log(2 * math.pi)
        )
        return log_lik + log_prior

    def laplace_approximation(self, tol: float = 1e-10, max_iter: int = 100) -> tuple[Gaussian, float]:
        """Gaussian ``N(w*, H^-1)`` at the mode ``w*`` and its evidence estimate (float64, Newton).

        ``log Z_Laplace = log p(w*) + (d/2) log 2 pi - (1/2) log det H`` with ``H`` the negative
        Hessian of ``log p`` at ``w*`` (Laplace's method: MacKay 2003, "Information Theory,
        Inference and Learning Algorithms", chapter 27). An approximation, not an exact reference.
        """
        x, y, prec0 = self.design_np, self.labels_np, 1.0 / self.prior_scale**2
        w = np.zeros(x.shape[1])
        for _ in range(max_iter):
            p = 1.0 / (1.0 + np.exp(-(x @ w)))
            grad = x.T @ (y - p) - prec0 * w
            hess = (x.T * (p * (1 - p))) @ x + prec0 * np.eye(x.shape[1])
            step = np.linalg.solve(hess, grad)
            w = w + step
            if np.max(np.abs(step)) < tol:
                break
        else:
            raise RuntimeError(f"Newton did not converge in {max_iter} iterations")
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        hess = (x.T * (p * (1 - p))) @ x + prec0 * np.eye(x.shape[1])
        s = x @ w
        log_p_mode = float(
            np.sum(y * s - np.logaddexp(0.0, s))
            - 0.5 * prec0 * w @ w
            - w.size * (math.log(self.prior_scale) + 0.5 * math.log(2 * math.pi))
        )
        log_det = float(np.linalg.slogdet(hess)[1])
        log_z = log_p_mode + 0.5 * w.size * math.log(2 * math.pi) - 0.5 * log_det
        cov = np.linalg.inv(hess)
        return Gaussian(w, 0.5 * (cov + cov.T), name=f"{self.name}_laplace"), log_z


def synthetic_logistic_data(num_data: int, num_features: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Standard-normal features and labels drawn from a logistic model with coefficients ``0.3 * N(0, 1)``.

    NumPy's ``default_rng(seed)`` draws, in order, the features ``(num_data, num_features)``, the coefficients and
    the uniforms behind the labels, so the data are a function of the three arguments alone. The accelerator
    suite's NUTS cell (``jaxsamp bench run device``) runs on 1000 points of 99 features: with the intercept, a
    100-dimensional posterior.
    """
    if num_data < 2 or num_features < 1:
        raise InputError(f"synthetic data need num_data >= 2 and num_features >= 1, got {num_data}, {num_features}")
    rng = np.random.default_rng(seed)
    features = rng.standard_normal((num_data, num_features))
    coefficients = 0.3 * rng.standard_normal(num_features)
    labels = (rng.random(num_data) < 1 / (1 + np.exp(-(features @ coefficients)))).astype(np.float64)
    return features, labels


@TARGETS.register("bayes_logreg")
def bayes_logreg(dataset: str = "breast_cancer", prior_scale: PositiveFloat = 1.0, num_data: int = 1000,
                 num_features: int = 99, seed: int = 0) -> BayesLogisticRegression:
    """Bayesian logistic regression (standardised features, intercept, N(0, prior_scale^2) prior); log Z not exact.

    ``dataset="synthetic"`` draws ``num_data`` points of ``num_features`` features with ``seed``
    (:func:`synthetic_logistic_data`); the shipped breast-cancer data ignore those three.
    """
    if dataset not in DATASETS:
        raise InputError(f"unknown dataset {dataset!r}; available: {', '.join(DATASETS)}")
    if dataset == "synthetic":
        features, labels = synthetic_logistic_data(num_data, num_features, seed)
        return BayesLogisticRegression(features, labels, prior_scale, name=f"bayes_logreg_synthetic_d{num_features + 1}")
    features, labels = load_breast_cancer()
    return BayesLogisticRegression(features, labels, prior_scale)
