"""Exceptions of weft-train: one base, split into the caller's mistake and a runtime failure."""

from __future__ import annotations

from weft_core.exceptions import UserError, WeftRuntimeError


class TrainUserError(UserError):
    """The input was wrong (a model folder without a tokenizer, a malformed JSONL row, ...)."""


class TrainRuntimeError(WeftRuntimeError):
    """Valid training or sampling work failed (the policy server died, a verifier errored)."""
