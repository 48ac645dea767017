"""Errors of task views."""

from __future__ import annotations

from weft_core.exceptions import UserError


class ViewError(UserError):
    """A task graph cannot be presented as a view (cycle, unknown node, bad disclosure)."""
