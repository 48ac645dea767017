"""Exceptions of weft-evolve: one base, split into user error and runtime error."""

from __future__ import annotations

from weft_core.exceptions import UserError, WeftRuntimeError


class EvolveError(Exception):
    """Base of every weft-evolve exception."""


class EvolveUserError(EvolveError, UserError):
    """The input was wrong (a malformed task, bundle or round state); the message names it."""


class EvolveRuntimeError(EvolveError, WeftRuntimeError):
    """Valid evolution work failed (MegaMCP unreachable, a revision that cannot be written)."""
