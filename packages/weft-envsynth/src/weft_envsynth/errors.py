"""Exceptions of weft-envsynth: one base, split into user error and runtime error."""

from __future__ import annotations

from weft_core.exceptions import UserError, WeftError, WeftRuntimeError


class EnvSynthError(WeftError):
    """Base of every weft-envsynth exception."""


class EnvSynthUserError(EnvSynthError, UserError):
    """The input (a spec, a bundle path, an option) was wrong; the message says what and where."""


class SpecRejected(EnvSynthUserError):
    """A whole spec cannot be synthesized (no usable tool, no entity); `reason` says why."""

    def __init__(self, reason: str, *, source: str | None = None) -> None:
        self.reason = reason
        self.source = source
        super().__init__(f"{source}: {reason}" if source else reason)


class BundleError(EnvSynthUserError):
    """A bundle folder is missing, incomplete or not importable."""


class EnvSynthRuntimeError(EnvSynthError, WeftRuntimeError):
    """Synthesis of a valid spec failed for a reason outside the input."""
