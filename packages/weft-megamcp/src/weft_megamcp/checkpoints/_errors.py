"""Exceptions of the checkpoint layer."""

from __future__ import annotations

from weft_megamcp.exceptions import MegaMCPRuntimeError, MegaMCPUserError


class CheckpointError(MegaMCPRuntimeError):
    """A checkpoint could not be written or read (storage failure, corrupt object)."""


class FencingError(CheckpointError):
    """The writer's lease generation is no longer current: another worker owns the session."""


class LeaseHeldError(CheckpointError):
    """The session is owned by another live worker and the caller did not ask to steal it."""


class CheckpointNotFoundError(MegaMCPUserError):
    """No checkpoint exists for the requested session."""


class WorkspaceArchiveError(MegaMCPUserError):
    """A workspace tarball is not one MegaMCP writes: corrupt, or a member that would land
    outside its folder or is a link."""
