"""Consecutive model calls of one rollout -> token sequences, merged only on an exact prefix.

A harness re-renders its whole history through the chat template on every call, so call k+1's
prompt ids need not extend call k's prompt and completion ids (a template that drops reasoning,
a harness that rewrites a tool result or re-serialises tool-call arguments). Call k+1 joins call
k's sequence only when `prompt[k+1]` starts with `prompt[k] + completion[k]` token for token; the
ids in between (tool observations, template tokens) join with loss mask 0. Otherwise a new
sequence starts and the break is counted as a merge mismatch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from weft_core.models import CapturedCall


@dataclass
class TokenSequence:
    """One training sequence built from one or more calls."""

    token_ids: list[int] = field(default_factory=list)  # [T]
    loss_mask: list[int] = field(default_factory=list)  # [T], 1 = sampled by the policy
    logprobs: list[float | None] = field(default_factory=list)  # [T], None where not sampled
    calls: list[int] = field(default_factory=list)  # CapturedCall.index of each merged call


@dataclass
class MergeReport:
    sequences: list[TokenSequence]
    calls: int = 0
    calls_with_ids: int = 0
    merged: int = 0
    mismatches: int = 0
    # (call index, first token position where its prompt leaves the previous prompt+completion)
    diverged_at: list[tuple[int, int]] = field(default_factory=list)


def extends(previous: CapturedCall, current: CapturedCall) -> bool | None:
    """Whether `current`'s prompt starts with `previous`'s prompt + completion (None: no ids)."""
    if not (previous.has_token_ids and current.has_token_ids):
        return None
    assert previous.prompt_token_ids is not None and previous.completion_token_ids is not None
    assert current.prompt_token_ids is not None
    head = previous.prompt_token_ids + previous.completion_token_ids
    return current.prompt_token_ids[: len(head)] == head


def mark_merges(calls: Sequence[CapturedCall]) -> list[CapturedCall]:
    """Copies of `calls` (in order) with `merges_with_previous` filled in."""
    out: list[CapturedCall] = []
    for i, call in enumerate(calls):
        flag = extends(calls[i - 1], call) if i else None
        out.append(call.model_copy(update={"merges_with_previous": flag}))
    return out


def merge_calls(calls: Sequence[CapturedCall]) -> MergeReport:
    """Token sequences of one rollout's calls (calls without ids are left out)."""
    report = MergeReport(sequences=[], calls=len(calls))
    current: TokenSequence | None = None
    previous: CapturedCall | None = None
    for call in calls:
        if not call.has_token_ids:
            current, previous = None, None
            continue
        assert call.prompt_token_ids is not None and call.completion_token_ids is not None
        report.calls_with_ids += 1
        completion = call.completion_token_ids
        logprobs: list[float | None] = list(call.completion_logprobs or [])
        if len(logprobs) != len(completion):
            logprobs = [None] * len(completion)
        joined = previous is not None and current is not None and extends(previous, call)
        if joined and current is not None:
            gap = call.prompt_token_ids[len(current.token_ids) :]
            report.merged += 1
        else:
            if previous is not None:
                report.mismatches += 1
                report.diverged_at.append((call.index, _divergence(previous, call)))
            current = TokenSequence()
            report.sequences.append(current)
            gap = call.prompt_token_ids
        current.token_ids += gap + completion
        current.loss_mask += [0] * len(gap) + [1] * len(completion)
        current.logprobs += [None] * len(gap) + logprobs
        current.calls.append(call.index)
        previous = call
    return report


def _divergence(previous: CapturedCall, current: CapturedCall) -> int:
    head = (previous.prompt_token_ids or []) + (previous.completion_token_ids or [])
    prompt = current.prompt_token_ids or []
    for i, (a, b) in enumerate(zip(head, prompt, strict=False)):
        if a != b:
            return i
    return min(len(head), len(prompt))
