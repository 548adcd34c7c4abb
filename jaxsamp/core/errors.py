"""The errors jaxsamp raises on purpose.

Every error a user can cause with a bad input (an argument, a target
parameter, a state, a config key or value, a checkpoint that belongs to another
run) is a :class:`JaxsampError`. Its message names the culprit and, where there
is one, a ``hint`` says what to do instead. The command line prints such an
error as one line (``jaxsamp: error: <Type>: <message> (hint: ...)``) and exits
with status 2; a traceback means a bug in jaxsamp.

The input errors are also ``ValueError`` s, so ``except ValueError`` keeps
working for code written against plain Python conventions.
"""

from __future__ import annotations


class JaxsampError(Exception):
    """Base class of the errors jaxsamp raises on purpose.

    ``str(err)`` is the message followed by `` (hint: <hint>)``, so the hint is seen
    wherever the error is shown (a Python traceback, a log); ``err.message`` and
    ``err.hint`` hold the two apart.

    Parameters
    ----------
    message : str
        One line naming the bad input and what was expected.
    hint : str, optional
        What to do instead.
    """

    def __init__(self, message: str, hint: str | None = None):
        self.message, self.hint = str(message), hint
        super().__init__(self.message + (f" (hint: {hint})" if hint else ""))

    def one_line(self) -> str:
        """``<Type>: <message> (hint: <hint>)`` on one line, as the CLI prints it."""
        return f"{type(self).__name__}: {' '.join(str(self).split())}"


class InputError(JaxsampError, ValueError):
    """A bad argument, parameter or state passed to a jaxsamp function or target."""


class ConfigError(InputError):
    """A bad configuration: unknown key, wrong type or range, missing value or file."""


class CheckpointError(JaxsampError, ValueError):
    """A checkpoint folder that cannot be resumed by this run (another run's, or out of range)."""


class RunHealthError(JaxsampError, RuntimeError):
    """A finished run failed its health checks (raised instead of a warning under ``--strict``)."""


class RunHealthWarning(UserWarning):
    """A run finished but shows signs that it did not sample the target well.

    Emitted by :func:`jaxsamp.run` (:mod:`jaxsamp.core.chain_health`) and by
    :func:`jaxsamp.sample`; also importable as ``jaxsamp.mcmc.RunHealthWarning``.
    """
