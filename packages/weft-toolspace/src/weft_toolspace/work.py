"""What a chain's step works on: its (tool, object) pair, the unit of "new work" for the walk's
repeat rule (`walk.WalkConfig.repeat_weight`) and its stop rule.

The object of a call is what the chain carried into it: the argument values (or tokens inside a
string argument) that an earlier step of the chain returned or was given: the ticket id an
`update_ticket` got from `create_ticket`, the path a `read_text_file` got from `write_file`, the
table name inside a SQL query. A call that carries nothing from the chain (the first call, a
retry's recovery) is its own object: its arguments as a whole. Two steps of one node on the same
object are the same work done twice (`update_ticket(TIC-3)` after `update_ticket(TIC-3)`, the
`create_ticket` repeated with the customer id its own result echoed); the same node on a new
object, or a node not yet called, is new work."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from weft_toolspace.graph import leaves, trivial

__all__ = ["Work", "carried_values", "work_of"]

Work = tuple[str, str]  # (node, object)

_TOKEN = re.compile(r"^[\w.@/:-]{4,}$")


def _token_in(token: str, text: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(token)}(?![\w-])", text) is not None


def carried_values(arguments: dict[str, Any], earlier: Iterable[Any]) -> list[str]:
    """The argument values of a call that the chain supplied: a non-trivial argument leaf equal
    to a leaf of an earlier step's result or arguments, or such an earlier identifier-shaped
    string leaf found as a whole token inside a string argument. Sorted, as JSON."""
    seen: set[tuple[str, Any]] = set()
    tokens: set[str] = set()
    for value in earlier:
        for _, leaf in leaves(value):
            if trivial(leaf):
                continue
            seen.add((type(leaf).__name__, leaf))
            if isinstance(leaf, str) and _TOKEN.match(leaf.strip()) and not leaf.isdigit():
                tokens.add(leaf.strip())
    out: set[str] = set()
    for _, value in leaves(arguments):
        if trivial(value):
            continue
        if (type(value).__name__, value) in seen:
            out.add(json.dumps(value))
        elif isinstance(value, str):
            out.update(json.dumps(t) for t in tokens if t != value and _token_in(t, value))
    return sorted(out)


def work_of(node: str, arguments: dict[str, Any], earlier: Iterable[Any]) -> Work:
    """(node, object) of a call with `arguments`, given the results and arguments of the chain's
    earlier steps (`earlier`)."""
    carried = carried_values(arguments, earlier)
    obj = json.dumps(carried) if carried else json.dumps(arguments, sort_keys=True, default=str)
    return node, obj
