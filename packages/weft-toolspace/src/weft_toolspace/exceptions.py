"""One exception base for the package, split into the user's mistakes and runtime failures."""

from __future__ import annotations


class ToolSpaceError(Exception):
    """Base of every weft-toolspace error."""


class ToolSpaceUserError(ToolSpaceError):
    """Bad input: a malformed trace file, an unknown server name, an empty graph."""


class ToolSpaceRuntimeError(ToolSpaceError):
    """Something failed while running: an install, a server, a replay."""
