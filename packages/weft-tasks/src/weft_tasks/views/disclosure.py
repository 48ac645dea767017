"""Which input values a request states at each disclosure level.

Disclosure varies how explicit a request is, never what the task is (paper §3.1.3):

- full: every known value is stated, including values the agent could otherwise retrieve;
- partial: every value the user gives is stated; values marked `retrieved` are described only;
- vague: like partial, and given values that merely restate attributes of a business object the
  user already identified (an entity binding) are described instead of stated, because the agent
  can look them up from the identifying value. One identifying value per object always remains,
  so user-known inputs are never lost.

Upstream inputs are referred to by the step they come from; at full disclosure a value the
earlier step reads from the initial state is also stated (one created during the rollout has no
value before it and is only ever referred to).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from weft_core.models import Disclosure, EntityBinding, TaskInput, TaskNode

Treatment = Literal["stated", "described", "upstream"]


@dataclass(frozen=True)
class InputDisclosure:
    """How one input of a node appears in a request."""

    input: TaskInput
    treatment: Treatment
    text: str

    @property
    def stated_value(self) -> str | None:
        return format_value(self.input.value) if self.treatment == "stated" else None


def format_value(value: Any) -> str:
    """A value as a user would type it: strings bare, everything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _binding_of(value: Any, bindings: list[EntityBinding]) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    for b in bindings:
        if any(v == value for v in b.value.values()):
            return b.name
    return None


def _label(inp: TaskInput) -> str:
    return (inp.description or inp.name.replace("_", " ")).rstrip(".")


def disclose_inputs(
    node: TaskNode,
    disclosure: Disclosure,
    bindings: list[EntityBinding],
    node_intents: dict[str, str] | None = None,
) -> list[InputDisclosure]:
    """Decide, per input of `node`, whether the request states its value, describes it, or points
    at the upstream step that produces it."""
    disclosure = Disclosure(disclosure)
    intents = node_intents or {}
    out: list[InputDisclosure] = []
    # Identifiers the intent itself states (an object's email, a value the user gives): an input
    # described as an attribute of one of them ("employee_id of employee a@b.c") is a lookup.
    named_ids = [
        v
        for v in [*(x for b in bindings for x in b.value.values()), *(i.value for i in node.inputs)]
        if isinstance(v, str) and len(v) >= 3 and v in node.intent
    ]
    # An object the intent already names (e.g. by its email) is identified: every other value
    # of it the inputs carry is a lookup at vague level.
    kept_per_binding: set[str] = {
        b.name
        for b in bindings
        if any(isinstance(v, str) and len(v) >= 3 and v in node.intent for v in b.value.values())
    }
    for inp in node.inputs:
        label = _label(inp)
        if inp.source == "upstream":
            step = intents.get(inp.from_node or "", inp.from_node or "an earlier step")
            what = (inp.from_output or inp.name).replace("_", " ")
            if disclosure is Disclosure.FULL and inp.value is not None:
                # full gives everything: the value an earlier step finds in the initial state
                # is known, so it is stated next to where it comes from
                out.append(
                    InputDisclosure(
                        inp,
                        "stated",
                        f"{label}: {format_value(inp.value)} (the {what} from '{step}')",
                    )
                )
                continue
            out.append(InputDisclosure(inp, "upstream", f"{label}: use the {what} from '{step}'"))
            continue
        if inp.value is None:
            out.append(InputDisclosure(inp, "described", f"{label}: look it up"))
            continue
        stated = True
        if inp.source == "retrieved":
            stated = disclosure is Disclosure.FULL
        elif disclosure is Disclosure.VAGUE:
            owner = _binding_of(inp.value, bindings)
            named = isinstance(inp.value, str) and inp.value in node.intent
            about_named = any(v in (inp.description or "") and v != inp.value for v in named_ids)
            if about_named and not named:
                stated = False
            elif owner is not None and not named:
                # The first value of each business object identifies it (or the value the
                # intent names); the rest are lookups.
                stated = owner not in kept_per_binding
                kept_per_binding.add(owner)
        if stated:
            out.append(InputDisclosure(inp, "stated", f"{label}: {format_value(inp.value)}"))
        else:
            out.append(InputDisclosure(inp, "described", f"{label}: find it with the tools"))
    return out


def intent_text(node: TaskNode, disclosure: Disclosure, bindings: list[EntityBinding]) -> str:
    """The node's intent with the values this level hides replaced by what they are, so a
    request never states a value its own disclosure level withholds."""
    disclosure = Disclosure(disclosure)
    text = node.intent.rstrip(".")
    for d in disclose_inputs(node, disclosure, bindings):
        if d.treatment == "described" and d.input.value is not None:
            value = format_value(d.input.value)
            if len(value) >= 3:
                text = text.replace(value, f"the {_label(d.input)}")
    return text


def required_values(
    node: TaskNode, disclosure: Disclosure, bindings: list[EntityBinding]
) -> list[str]:
    """The values a request for `node` must state at this disclosure level."""
    return [
        d.stated_value
        for d in disclose_inputs(node, disclosure, bindings)
        if d.stated_value is not None
    ]


def hidden_values(
    node: TaskNode, disclosure: Disclosure, bindings: list[EntityBinding]
) -> list[str]:
    """Known values a request for `node` must not state at this disclosure level."""
    return [
        format_value(d.input.value)
        for d in disclose_inputs(node, disclosure, bindings)
        if d.treatment == "described" and d.input.value is not None
    ]
