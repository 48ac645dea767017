"""Exceptions of weft-megamcp.

`MegaMCPUserError` means the caller's input was wrong (unknown MCP, bad path, bad token);
`MegaMCPRuntimeError` means valid work failed (a server module would not load, a worker died).
"""

from __future__ import annotations

from weft_core.exceptions import UserError, WeftRuntimeError


class MegaMCPUserError(UserError):
    """The request to MegaMCP was wrong; the message names what and where."""


class MegaMCPRuntimeError(WeftRuntimeError):
    """MegaMCP failed while doing valid work."""


class MissingExtraError(MegaMCPUserError):
    """A feature needs an optional dependency group (an extra) that is not installed."""


class NotFoundError(MegaMCPUserError):
    """An MCP, version, snapshot, group or session does not exist."""


class RegistrationError(MegaMCPUserError):
    """A path could not be registered as an MCP server."""


class AuthError(MegaMCPUserError):
    """A token is missing, unknown, expired or belongs to someone else."""


class GroupStateError(MegaMCPUserError):
    """The operation is not allowed in the group's current state (e.g. a call on a frozen group)."""


class ModuleLoadError(MegaMCPRuntimeError):
    """A registered server module could not be imported or did not expose a FastMCP server."""
