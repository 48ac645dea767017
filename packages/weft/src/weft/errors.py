"""Exceptions of the `weft` pipeline command."""

from __future__ import annotations

from weft_core.exceptions import UserError, WeftError, WeftRuntimeError


class PipelineError(WeftError):
    """Base of every `weft` pipeline exception."""


class ConfigError(PipelineError, UserError):
    """The pipeline config is malformed; the message names the file, the key and the problem."""


class StageError(PipelineError, WeftRuntimeError):
    """A pipeline stage could not produce its output."""
