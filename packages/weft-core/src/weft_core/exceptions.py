"""Exceptions of weft-core.

`WeftError` is the base of every Weft exception. `UserError` means the input was wrong (a malformed
spec, a bad check, an unknown model string) and the message says what and where; `WeftRuntimeError`
means something failed while doing valid work. CLIs print either as one line.
"""

from __future__ import annotations


class WeftError(Exception):
    """Base of every Weft exception."""


class UserError(WeftError):
    """The input was wrong; the message names what was wrong and where."""


class WeftRuntimeError(WeftError):
    """Valid work failed for a reason outside the caller's input."""


class SpecError(UserError):
    """A tool specification could not be loaded or normalized."""

    def __init__(self, reason: str, *, source: str | None = None, tool: str | None = None) -> None:
        self.reason = reason
        self.source = source
        self.tool = tool
        where = ", ".join(
            p for p in (f"file {source}" if source else "", f"tool {tool!r}" if tool else "") if p
        )
        super().__init__(f"{where}: {reason}" if where else reason)


class ArtifactError(UserError):
    """An artifact file is malformed, of an unknown schema version, or fails its content hash."""


class CheckError(UserError):
    """A completion check is malformed or references a binding that does not exist."""


class ModelConfigError(UserError):
    """The LLM setting could not be turned into a chat model."""


class ModelOutputError(WeftRuntimeError):
    """A chat model's answer was unusable (not the asked-for object, or no answer at all)."""
