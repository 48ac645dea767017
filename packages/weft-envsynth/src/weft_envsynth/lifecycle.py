"""Status lifecycles read from the definitions: which states each transition may leave.

An `action` tool (`cancel_order`, `close_ticket`) moves an entity's status field to one value. The
states it may leave are what makes a lifecycle: an order that has shipped cannot be cancelled, a
cancelled order is not shipped, an account is unfrozen only when it is frozen. They come, in
order of authority, from

1. the tool's own words: "Cancel an order that has not shipped" excludes `shipped` and what
   follows it; "Approve a pending leave request", "only open tickets" name the states it leaves;
2. the verb and where each documented state stands in a lifecycle (drafted, opened, in progress,
   dispatched, done, closed; terminal refusals such as cancelled or rejected; reversible holds
   such as frozen or locked), so `ship` leaves paid orders, `reopen` leaves closed ones, `unlock`
   leaves locked ones and nothing leaves a terminal state but a verb that revives it.

States the rules do not know (a domain word such as `triaged`) are treated as ordinary open
states: the lifecycle never refuses more than the definitions say.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from weft_core.models import EntityField, MCPSpec, StateTransition, ToolSpec
from weft_envsynth._internal import words as W

# Where a state stands on the main line of a lifecycle (drafted -> done -> closed).
_RANK: dict[str, int] = {
    **dict.fromkeys(["draft", "unpublished"], 0),
    **dict.fromkeys(
        ["new", "open", "pending", "submitted", "requested", "placed", "created", "todo",
         "to_do", "scheduled", "unpaid", "queued", "waiting", "received", "reported",
         "awaiting_payment", "planned", "proposed", "backlog", "reserved", "booked", "unread"],
        1,
    ),
    **dict.fromkeys(
        ["in_progress", "processing", "confirmed", "approved", "accepted", "assigned", "paid",
         "active", "escalated", "started", "enabled", "published", "reviewed", "in_review",
         "under_review", "ongoing", "running", "checked_in", "sent", "read", "released",
         "authorized", "verified", "packed", "ready"],
        2,
    ),
    **dict.fromkeys(["shipped", "dispatched", "in_transit", "out_for_delivery", "checked_out"], 3),
    **dict.fromkeys(
        ["delivered", "completed", "resolved", "fulfilled", "settled", "done", "finished",
         "returned", "answered", "closed_won"],
        4,
    ),
    **dict.fromkeys(["closed", "archived"], 5),
}  # fmt: skip
# States nothing leaves except a verb that revives (reopen, restore, reactivate).
_TERMINAL = {
    "cancelled", "canceled", "rejected", "declined", "void", "voided", "terminated", "refunded",
    "failed", "expired", "deleted", "revoked", "withdrawn", "closed", "archived", "denied",
    "aborted", "lost", "closed_lost", "discontinued", "retired", "dismissed",
}  # fmt: skip
# Reversible holds beside the main line: entered from an open state, left by their inverse verb.
_HELD = {
    "frozen", "locked", "blocked", "suspended", "on_hold", "paused", "disabled", "inactive",
    "deactivated", "held", "muted", "snoozed", "flagged",
}  # fmt: skip
_PAYMENT = {"paid", "settled", "authorized", "charged"}

# Verbs that leave a hold, and the holds they leave.
_LEAVES_HOLD: dict[str, set[str]] = {
    "unfreeze": {"frozen"},
    "unlock": {"locked"},
    "unblock": {"blocked"},
    "unsuspend": {"suspended"},
    "resume": {"paused", "on_hold", "suspended"},
    "release": {"on_hold", "held", "reserved"},
    "enable": {"disabled"},
    "activate": {"inactive", "deactivated", "suspended", "disabled", "pending", "new", "draft"},
    "reactivate": {"inactive", "deactivated", "suspended", "closed", "cancelled", "canceled"},
    "unarchive": {"archived"},
    "unmute": {"muted"},
    "unflag": {"flagged"},
}
_ENDS_RELATIONSHIP = {"terminate", "suspend", "deactivate", "freeze", "expire", "revoke", "disable"}
_REVIVE = {"reopen", "restore", "undelete", "unarchive", "reactivate", "recover", "reinstate"}
_ENTER_HOLD = {
    "freeze", "lock", "block", "suspend", "hold", "pause", "disable", "deactivate", "mute",
    "snooze", "flag",
}  # fmt: skip
_REVIEW = {"approve", "reject", "decline", "deny", "accept", "confirm", "verify", "review"}
_FINISH = {"complete", "finish", "fulfill", "resolve", "settle", "done", "mark_done"}
_CANCEL = {"cancel", "void", "withdraw", "abort", "revoke"}
_BEGIN = {"start", "begin", "assign", "process", "pay", "charge", "submit", "book", "schedule"}

_NEGATION = (
    r"(?:not|never|n't|no\s+longer)\s+(?:yet\s+)?(?:been\s+|be\s+|become\s+)?(?:already\s+)?"
)


def _canon(value: str) -> str:
    v = value.strip().lower().replace("-", "_").replace(" ", "_")
    return "cancelled" if v == "canceled" else v


def rank(state: str) -> int | None:
    return _RANK.get(_canon(state))


def _place(state: str) -> int:
    # An unknown state is an open one: no rule refuses what the definitions did not say.
    r = rank(state)
    return 1 if r is None else r


def terminal(state: str) -> bool:
    return _canon(state) in _TERMINAL


def held(state: str) -> bool:
    return _canon(state) in _HELD


def _forms(state: str) -> list[str]:
    """How a state is written in prose: `in_progress` -> 'in progress', 'in-progress'."""
    c = _canon(state)
    out = {c, c.replace("_", " "), c.replace("_", "-")}
    if c == "cancelled":
        out.add("canceled")
    return sorted(out, key=len, reverse=True)


def _mentions(text: str, states: Iterable[str], pattern: str) -> set[str]:
    """States named in `text` where `pattern` (with `{s}` for the state's words) matches."""
    found: set[str] = set()
    for s in states:
        for form in _forms(s):
            if re.search(pattern.replace("{s}", re.escape(form)), text):
                found.add(s)
                break
    return found


def described_states(
    tool: ToolSpec, entity: str, states: Iterable[str]
) -> tuple[set[str], set[str]]:
    """(states the tool's words say it leaves, states they say it does not leave).

    Positive: "a pending leave request", "only open tickets", "must be active", "that is paid",
    "in the draft state". Negative: "that has not shipped", "not yet paid", "unless closed".
    """
    text = " ".join(
        [tool.description or ""]
        + [str((s or {}).get("description") or "") for s in tool.properties.values()]
    ).lower()
    if not text.strip():
        return set(), set()
    nouns = "|".join(
        re.escape(w) for w in {*entity.split("_"), entity.replace("_", " ")} if len(w) > 2
    )
    states = list(states)
    # "a paid or pending order": the adjectives before the entity's noun.
    positive: set[str] = set()
    for m in (
        ()
        if not nouns
        else re.finditer(
            rf"\b(?:a|an|the|only|any|all|every)\s+((?:[\w-]+(?:\s*,\s*|\s+or\s+|\s+and\s+))*"
            rf"[\w-]+)\s+(?:\w+\s+)?(?:{nouns})",
            text,
        )
    ):
        positive |= _mentions(m.group(1), states, r"(?<![\w-])(?:{s})(?![\w-])")
    positive |= _mentions(
        text,
        states,
        r"\b(?:only|must\s+be|must\s+be\s+in|that\s+(?:is|are)|which\s+(?:is|are)|"
        r"if\s+(?:it|the\s+\w+)\s+is|while\s+(?:it\s+is\s+)?|in\s+(?:the\s+)?)"
        r"\s*(?:(?:in|the|an?)\s+)?(?:\w+\s+or\s+)?(?:{s})\b(?!\s+(?:yet|again))",
    )
    positive |= _mentions(text, states, r"\b(?:{s})\s+(?:or\s+\w+\s+)?(?:\w+\s+)?(?:only)\b")
    negative = _mentions(text, states, rf"{_NEGATION}(?:{{s}})\b")
    negative |= _mentions(text, states, r"\bunless\s+(?:it\s+is\s+|already\s+)?(?:{s})\b")
    negative |= _mentions(text, states, r"\balready\s+(?:{s})\b[^.]*\b(?:cannot|can't|fails?)")
    # "not yet shipped" read positively by the adjective rule ("the shipped order") is a negation.
    return positive - negative, negative


def _main_line_after(states: list[str], s: str) -> set[str]:
    """`s` and the states that follow it on the main line (has not shipped -> nor delivered)."""
    r = rank(s)
    if r is None or r < 3:
        return {s}
    return {s} | {x for x in states if (rank(x) or -1) >= r and not held(x)}


def rule_sources(verb: str, to_value: str, states: list[str]) -> list[str]:
    """The states a transition by `verb` to `to_value` may leave, by the verb and the lifecycle."""
    others = [s for s in states if s != to_value]
    live = [s for s in others if not terminal(s)]

    def ranked(lo: int, hi: int, *, holds: bool = False) -> list[str]:
        return [s for s in live if (held(s) and holds) or (not held(s) and lo <= _place(s) <= hi)]

    chosen: list[str]
    if verb in _LEAVES_HOLD:
        chosen = [s for s in others if _canon(s) in _LEAVES_HOLD[verb]]
        if not chosen:
            chosen = [s for s in others if held(s)] or live
    elif verb in _REVIVE or verb == "reopen":
        chosen = [s for s in others if terminal(s) or (rank(s) or 0) >= 4 or held(s)]
    elif verb in _ENTER_HOLD:
        chosen = ranked(0, 4)
    elif verb in _CANCEL:
        chosen = ranked(0, 2, holds=True)
    elif verb in _REVIEW:
        chosen = ranked(0, 1) + [
            s for s in live if _canon(s) in {"escalated", "in_review", "under_review"}
        ]
    elif verb in {"ship", "dispatch"}:
        paid = [
            s
            for s in ranked(2, 2)
            if _canon(s) in _PAYMENT
            or _canon(s) in {"confirmed", "processing", "packed", "ready", "approved"}
        ]
        chosen = paid or ranked(0, 2)
    elif verb == "deliver":
        chosen = ranked(3, 3) or ranked(0, 3)
    elif verb in {"refund", "return", "chargeback"}:
        chosen = [s for s in live if _canon(s) in _PAYMENT or (rank(s) or 0) in {3, 4}]
    elif verb in _FINISH:
        chosen = ranked(0, 3)
    elif verb == "close":
        chosen = ranked(0, 4, holds=True)
    elif verb == "escalate":
        chosen = ranked(0, 3)
    elif verb in _BEGIN or verb == "publish":
        chosen = ranked(0, 1)
    elif verb == "unpublish":
        chosen = [s for s in others if _canon(s) == "published"]
    elif verb == "archive":
        chosen = others
    else:
        chosen = live
    if not chosen:
        chosen = live or others
    return [s for s in states if s in set(chosen)]


def sources(tool: ToolSpec, entity: str, verb: str, to_value: str, states: list[str]) -> list[str]:
    """The states `tool` may move `entity` out of: its words first, then the verb's rule."""
    positive, negative = described_states(tool, entity, states)
    positive.discard(to_value)
    if positive:
        return [s for s in states if s in positive]
    chosen = rule_sources(verb, to_value, states)
    excluded: set[str] = set()
    for s in negative:
        excluded |= _main_line_after(states, s)
    kept = [s for s in chosen if s not in excluded]
    return kept or chosen


def described_initial(
    tools: Iterable[ToolSpec], entity: str, verbs: Iterable[str | None] = ()
) -> str | None:
    """The state a new entity starts in when the definitions name one but document no enum:
    "Approve a pending leave request" -> `pending`; an entity that can be terminated, suspended
    or deactivated is an ongoing relationship, active until then."""
    if set(verbs) & _ENDS_RELATIONSHIP:
        return "active"
    nouns = "|".join(
        re.escape(w) for w in {*entity.split("_"), entity.replace("_", " ")} if len(w) > 2
    )
    if not nouns:
        return None
    starts = [s for s, r in _RANK.items() if r <= 1]
    for t in tools:
        text = (t.description or "").lower()
        for s in starts:
            for form in _forms(s):
                if re.search(rf"\b(?:a|an|the)\s+{re.escape(form)}\s+(?:\w+\s+)?(?:{nouns})", text):
                    return s
    return None


def status_transitions(
    spec: MCPSpec,
    ops: Mapping[str, tuple[str, str | None]],
    tool_entity: Mapping[str, str | None],
    fields: Mapping[str, dict[str, EntityField]],
) -> dict[str, list[StateTransition]]:
    """Per `action` tool, the transition it makes on its entity's status field (`fields` is
    updated in place: the field is added when undocumented, its enum gains each target state)."""
    transitions: dict[str, list[StateTransition]] = {}
    moves: dict[str, tuple[ToolSpec, str]] = {}
    for t in spec.tools:
        op, verb = ops[t.name]
        ent = tool_entity[t.name]
        if op != "action" or ent is None or verb is None:
            continue
        own = fields[ent]
        to_value = W.TRANSITION_VERBS.get(verb, f"{verb}ed")
        status_field = next((f for f in ("status", "state", "stage") if f in own), "status")
        f = own.get(status_field)
        if f is None or f.type != "string":
            # No documented states: a new record starts where the definitions say ("approve a
            # pending request"), else open.
            mine = [x for x in spec.tools if tool_entity[x.name] == ent]
            first = described_initial(mine, ent, [ops[x.name][1] for x in mine])
            f = EntityField(
                name=status_field,
                type="string",
                enum=[first or "open"],
                description="Lifecycle state.",
            )
        enum = list(f.enum or [])
        match = next(
            (v for v in enum if v.lower() in {to_value, to_value.replace("ll", "l")}), None
        )
        if match is None:
            match = to_value
            enum.append(to_value)
        own[status_field] = f.model_copy(update={"enum": enum})
        transitions.setdefault(t.name, []).append(
            StateTransition(entity=ent, field=status_field, to_value=match)
        )
        moves[t.name] = (t, verb)
    for name, trs in transitions.items():
        tool, verb = moves[name]
        for tr in trs:
            states = fields[tr.entity][tr.field].enum or []
            tr.from_values = sources(tool, tr.entity, verb, tr.to_value or "", states)
    return transitions
