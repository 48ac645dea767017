"""Exceptions of weft-tasks.

`TasksError` is the package base. `TasksUserError` means the caller's input was wrong (a library
folder that is not one, a malformed profiles file, a bundle without contracts); `TasksRuntimeError`
means valid work failed (MegaMCP unreachable, a model that keeps answering nonsense). CLIs print
either as one line.
"""

from __future__ import annotations

from weft_core.exceptions import UserError, WeftError, WeftRuntimeError


class TasksError(WeftError):
    """Base of every weft-tasks exception."""


class TasksUserError(TasksError, UserError):
    """The input was wrong; the message names what and where."""


class LibraryError(TasksUserError):
    """An atomic-task library folder or one of its files is missing or malformed."""


class BundleError(TasksUserError):
    """An EnvBundle folder lacks what task synthesis needs (contracts, entities, seed DB)."""


class ProfileError(TasksUserError):
    """A profiles file is malformed or its proportions cannot form a corpus."""


class TasksRuntimeError(TasksError, WeftRuntimeError):
    """Valid work failed for a reason outside the caller's input."""


class ExecutionError(TasksRuntimeError):
    """Running reference calls against MegaMCP failed for an infrastructure reason."""
