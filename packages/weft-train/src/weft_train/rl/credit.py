"""Selective credit masking (paper §3.3.2, App. B.1).

Deterministic checks flag an assistant message for malformed tool-call or reasoning structure,
interface violations, repeated tool interactions without progress, and excessive within-turn
repetition of text or tool calls, even in a segment that passed its checkpoint. A flagged message
keeps only negative credit: its tokens get `min(A, 0)`. Rewards, other messages (later recovery
included) and the KL term are untouched, which is why masking works on advantages and nowhere else.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from weft_core.models import ErrorKind, LedgerEntry


class CreditFlag(StrEnum):
    MALFORMED_TOOL_CALL = "malformed_tool_call"
    MALFORMED_REASONING = "malformed_reasoning"
    INTERFACE_VIOLATION = "interface_violation"
    NO_PROGRESS_REPEAT = "no_progress_repeat"
    EXCESSIVE_REPETITION = "excessive_repetition"


@dataclass(frozen=True)
class ParsedCall:
    """A tool call as the policy wrote it; `result` is its ledger entry once MegaMCP served it."""

    name: str
    arguments: Any  # what the JSON held; not necessarily an object (that is a violation)
    result: LedgerEntry | None = None


@dataclass(frozen=True)
class AssistantMessage:
    """One generated assistant message: the decoded text (markup included) and what parsed."""

    text: str
    calls: tuple[ParsedCall, ...] = ()
    parse_errors: tuple[str, ...] = ()  # tool-call markup that did not parse, with why


@dataclass(frozen=True)
class CreditRules:
    """Thresholds of the deterministic checks."""

    think_open: str = "<think>"
    think_close: str = "</think>"
    call_open: str = "<tool_call>"
    ngram: int = 4
    min_words: int = 16
    max_repeated_ngram_share: float = 0.5  # share of duplicate word n-grams in one message
    max_line_repeats: int = 3  # one non-empty line this many times in one message
    max_same_call_in_message: int = 1


_INTERFACE_ERRORS = (ErrorKind.UNKNOWN_TOOL, ErrorKind.INVALID_ARGUMENTS)
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


def _canonical(call: ParsedCall) -> str:
    return call.name + "\x00" + json.dumps(call.arguments, sort_keys=True, default=str)


def _reasoning_malformed(text: str, rules: CreditRules) -> bool:
    opens, closes = text.count(rules.think_open), text.count(rules.think_close)
    if opens != closes or opens > 1:
        return True
    if opens == 1:
        o, c = text.index(rules.think_open), text.index(rules.think_close)
        if c < o:
            return True
        # Reasoning comes before acting: a tool call opened inside or before the block is broken.
        first_call = text.find(rules.call_open)
        if first_call != -1 and first_call < c:
            return True
    return False


def _type_ok(value: Any, schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else []
    if not kinds:
        return True
    for k in kinds:
        if k == "null" and value is None:
            return True
        allowed = _JSON_TYPES.get(k)
        if allowed is None:
            return True
        if isinstance(value, bool) and k in ("integer", "number"):
            continue
        if isinstance(value, allowed):
            return True
    return False


def interface_violation(call: ParsedCall, tools: Mapping[str, Mapping[str, Any]]) -> str | None:
    """Why the call breaks the offered interface (name, argument object, schema), or None."""
    if call.result is not None and call.result.error_kind in _INTERFACE_ERRORS:
        return f"{call.name}: MegaMCP reported {call.result.error_kind.value}"
    schema = tools.get(call.name)
    if schema is None:
        return f"{call.name}: not an offered tool"
    if not isinstance(call.arguments, dict):
        return f"{call.name}: arguments are not an object"
    props = schema.get("properties") or {}
    missing = [r for r in schema.get("required") or [] if r not in call.arguments]
    if missing:
        return f"{call.name}: missing required {missing}"
    if props and schema.get("additionalProperties") is not True:
        unknown = sorted(set(call.arguments) - set(props))
        if unknown:
            return f"{call.name}: unknown arguments {unknown}"
    for name, value in call.arguments.items():
        if name in props and not _type_ok(value, props[name]):
            return f"{call.name}: argument {name!r} has the wrong type"
    return None


def _excessive_repetition(message: AssistantMessage, rules: CreditRules) -> bool:
    same_calls = Counter(_canonical(c) for c in message.calls)
    if same_calls and max(same_calls.values()) > rules.max_same_call_in_message:
        return True
    lines = Counter(ln.strip() for ln in message.text.splitlines() if ln.strip())
    if lines and max(lines.values()) >= rules.max_line_repeats:
        return True
    words = message.text.split()
    if len(words) < rules.min_words:
        return False
    grams = [tuple(words[i : i + rules.ngram]) for i in range(len(words) - rules.ngram + 1)]
    duplicates = len(grams) - len(set(grams))
    return duplicates / len(grams) >= rules.max_repeated_ngram_share


@dataclass
class SegmentFlags:
    """One set of flags per assistant message of a segment, and why each was raised."""

    flags: list[frozenset[CreditFlag]]
    reasons: list[list[str]] = field(default_factory=list)

    @property
    def any(self) -> bool:
        return any(self.flags)


def flag_segment(
    messages: Sequence[AssistantMessage],
    tools: Mapping[str, Mapping[str, Any]],
    rules: CreditRules | None = None,
) -> SegmentFlags:
    """Flags per assistant message of one segment (one candidate of one atomic turn).

    `tools` maps each offered tool name to its JSON input schema. A repeated call counts as "no
    progress" when the same tool with the same arguments was already called in this segment and
    no call since changed state (the ledger's `mutated`).
    """
    rules = rules or CreditRules()
    seen_since_progress: set[str] = set()
    out: list[frozenset[CreditFlag]] = []
    reasons: list[list[str]] = []
    for msg in messages:
        flags: set[CreditFlag] = set()
        why: list[str] = []
        if msg.parse_errors:
            flags.add(CreditFlag.MALFORMED_TOOL_CALL)
            why += list(msg.parse_errors)
        if _reasoning_malformed(msg.text, rules):
            flags.add(CreditFlag.MALFORMED_REASONING)
            why.append("unbalanced, repeated or misplaced reasoning block")
        for call in msg.calls:
            problem = interface_violation(call, tools)
            if problem:
                flags.add(CreditFlag.INTERFACE_VIOLATION)
                why.append(problem)
        for call in msg.calls:
            key = _canonical(call)
            if key in seen_since_progress:
                flags.add(CreditFlag.NO_PROGRESS_REPEAT)
                why.append(f"{call.name}: repeated with no state change since")
            seen_since_progress.add(key)
            if call.result is not None and call.result.mutated:
                seen_since_progress = {key}
        if _excessive_repetition(msg, rules):
            flags.add(CreditFlag.EXCESSIVE_REPETITION)
            why.append("excessive repetition within the message")
        out.append(frozenset(flags))
        reasons.append(why)
    return SegmentFlags(flags=out, reasons=reasons)


def mask_advantage(advantage: float, flagged: bool) -> float:
    """The credit mask on one token: a flagged message keeps only negative credit."""
    return min(advantage, 0.0) if flagged else advantage
