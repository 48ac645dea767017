"""Errors of task views."""

from __future__ import annotations

from weft_tasks.exceptions import TasksUserError


class ViewError(TasksUserError):
    """A task graph cannot be presented as a view (cycle, unknown node, bad disclosure)."""
