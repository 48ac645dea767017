"""Errors of harnesses."""

from __future__ import annotations

from weft_tasks.exceptions import TasksRuntimeError, TasksUserError


class HarnessConfigError(TasksUserError):
    """A harness was asked for something it cannot do (unsupported view, bad command)."""


class HarnessRuntimeError(TasksRuntimeError):
    """A harness failed while running (its process died or broke the protocol)."""
