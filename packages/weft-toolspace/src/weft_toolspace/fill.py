"""Filling a neighbour's arguments from the chain (§4.2.1, "admissible neighbours": a neighbour is
kept only if its next-step inputs can be filled from earlier returns or the current snapshot).

A recorded instance of the edge is re-bound to the actual chain: a data value is taken from the
same output path of o_t or of an earlier return (row-aligned), a token carried inside a string is
replaced by the actual value, a state edge's object name comes from the actual x_t. A value the
later call found as a substring of a text result (a ticket id in a note read back) is taken again
from the actual text: a recorded value of that argument the text mentions, else a token of the
same identifier shape (`TIC-0012` for a recorded `TIC-0003`)."""

from __future__ import annotations

import copy
import random
import re
from typing import Any

from weft_toolspace.graph import ToolGraph, leaves
from weft_toolspace.models import Binding, DataLink, EdgeExample, EdgeKind, EdgeRecord

__all__ = ["fill_arguments", "id_shape"]


def _shape(path: str) -> str:
    return re.sub(r"(^|\.)\d+(?=\.|$)", r"\1*", path)


def _get(value: Any, path: str) -> list[Any]:
    """Leaves of `value` at a dotted path; a list index matches any index (`entities.0.name`
    finds the name of every entity), so a route learnt on one output applies to another."""
    if path == "$":
        return [value]
    want = _shape(path)
    return [v for p, v in leaves(value) if _shape(p) == want]


def _set(args: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    cur: Any = args
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        key: Any = int(part) if part.isdigit() and isinstance(cur, list) else part
        if last:
            if isinstance(cur, list) and isinstance(key, int):
                if key < len(cur):
                    cur[key] = value
            else:
                cur[key] = value
            return
        cur = (
            cur[key]
            if (isinstance(cur, list) and isinstance(key, int) and key < len(cur))
            or (isinstance(cur, dict) and key in cur)
            else None
        )
        if cur is None:
            return


def _copy(value: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(value)


def _typed(value: Any, json_type: str) -> bool:
    if json_type == "string":
        return isinstance(value, str)
    if json_type == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return True


def fill_arguments(
    graph: ToolGraph,
    edge: EdgeRecord | None,
    prev_result: Any,
    rng: random.Random,
    prev_arguments: dict[str, Any] | None = None,
    earlier: list[Any] | None = None,
) -> dict[str, Any] | None:
    """Arguments for edge.target, or None when a routed argument has no value in o_t.

    With recorded instances of the edge, one is taken and each of its bindings gets the value the
    actual previous call produced (data: the leaf at the same output path) or touched (state: its
    argument at the same path, i.e. the same object); without, a node example and the edge's
    routes. A data value missing from o_t may come from an earlier return (`earlier`, newest
    first): the paper's "filled from earlier returns"."""
    node = graph.nodes[edge.target] if edge else None
    if edge is None or node is None or not node.examples:
        return None
    if edge.kind is EdgeKind.STATE:
        # The same pair seen carrying a value (create_ticket -> escalate_ticket: the ticket id
        # the create returned): its routes take that value from the actual o_t. A state edge's
        # own instance rebinds only what the two calls' *arguments* share, so the id stayed the
        # recorded one, a ticket this walk never made (walk log, seeds 1 and 7: "ticket
        # 'TIC-0008' not found"). The state relation is still checked on the call's outcome.
        twin = next(
            (
                e
                for e in graph.edges
                if e.kind is EdgeKind.DATA and (e.source, e.target) == (edge.source, edge.target)
            ),
            None,
        )
        if twin is not None:
            routed = fill_arguments(graph, twin, prev_result, rng, prev_arguments, earlier)
            if routed is not None:
                return routed
    if edge.examples:
        ex = rng.choice(edge.examples)
        returns = [prev_result, *(earlier or [])]
        return _from_example(ex, node.examples, edge.kind, returns, prev_arguments or {}, rng)
    args: dict[str, Any] = _copy(rng.choice(node.examples))
    if edge.kind is not EdgeKind.DATA:
        return args
    resolved = 0
    for link in edge.links:
        value = _route(link, node.examples, prev_result, rng)
        if value is not None:
            _set(args, link.argument, value)
            resolved += 1
    return args if resolved else None


def _index(path: str) -> str | None:
    first = path.split(".", 1)[0]
    return first if first.isdigit() else None


def _from_example(
    ex: EdgeExample,
    examples: list[dict[str, Any]],
    kind: EdgeKind,
    returns: list[Any],
    prev_args: dict[str, Any],
    rng: random.Random,
) -> dict[str, Any] | None:
    args = _copy(ex.arguments)
    anchor: str | None = None  # the row / entity index the first value came from
    for b in ex.bindings:
        if b.source.startswith("args:"):
            new = _same_object(b, prev_args)
        elif b.source.endswith("~"):
            link = DataLink(argument=b.argument, output=b.source, json_type="string")
            new = next(
                (v for o in returns if (v := _route(link, [ex.arguments, *examples], o, rng))),
                None,
            )
        else:
            path = b.source.rstrip("^")
            found = _same_field(returns, path, b.value)
            aligned = [(p, v) for p, v in found if anchor is not None and _index(p) == anchor]
            pick = rng.choice(aligned or found) if found else None
            if pick is not None and anchor is None:
                anchor = _index(pick[0])
            new = pick[1] if pick is not None else None
        if new is None:
            if kind is EdgeKind.DATA:
                return None  # not admissible: the value is not in o_t
            continue
        _bind(args, b, new)
    return args


def _same_field(returns: list[Any], path: str, value: Any) -> list[tuple[str, Any]]:
    """Leaves of the newest return that has the recorded output path (list indices match any),
    else of the newest with a leaf under the same field name: a server materialised from its
    definitions (an envsynth bundle of a server known only from traces) may nest the field it
    returns differently (`book.book_id` for a recorded `book_id`); it is the same field."""
    for o in returns:  # o_t first, then earlier returns
        found = [
            (p, v)
            for p, v in leaves(o)
            if ((path == "$" and p == "") or _shape(p) == _shape(path)) and type(v) is type(value)
        ]
        if found:
            return found
    key = path.rsplit(".", 1)[-1]
    if path == "$" or key.isdigit():
        return []
    for o in returns:
        found = [
            (p, v) for p, v in leaves(o) if p.rsplit(".", 1)[-1] == key and type(v) is type(value)
        ]
        if found:
            return found
    return []


def _same_object(b: Binding, prev_args: dict[str, Any]) -> Any:
    cur = _get(prev_args, b.source.removeprefix("args:"))
    if not cur:
        return None
    if b.whole:
        return cur[0]
    if not isinstance(cur[0], str) or b.context is None:
        return None
    # The recorded x_i with the token as a group, matched against the actual x_i.
    at = b.context.find(b.value)
    pattern = re.escape(b.context[:at]) + r"(\w+)" + re.escape(b.context[at + len(b.value) :])
    m = re.fullmatch(pattern, cur[0])
    return m.group(1) if m else None


def _bind(args: dict[str, Any], b: Binding, new: Any) -> None:
    if b.whole:
        _set(args, b.argument, new)
        return
    cur = _get(args, b.argument)
    if cur and isinstance(cur[0], str) and isinstance(b.value, str):
        pat = re.compile(rf"(?<![\w.-]){re.escape(b.value)}(?![\w-])")
        _set(args, b.argument, pat.sub(lambda _: str(new), cur[0]))


def id_shape(value: str) -> re.Pattern[str] | None:
    """The identifier shape of `value` as a whole-token pattern (its letters and punctuation kept,
    each digit any digit: `TIC-0003` -> `TIC-\\d\\d\\d\\d`); None unless the value is an id,
    i.e. one token of two or more letters and two or more digits (`alpha.md`, `2027`, `v2`
    and `Ada Lovelace` have none)."""
    v = value.strip()
    letters, digits = sum(ch.isalpha() for ch in v), sum(ch.isdigit() for ch in v)
    if not re.fullmatch(r"[A-Za-z][\w-]*", v) or letters < 2 or digits < 2:
        return None
    body = "".join(r"\d" if ch.isdigit() else re.escape(ch) for ch in v)
    return re.compile(rf"(?<![\w.-]){body}(?![\w-])")


def _route(link: DataLink, examples: list[dict[str, Any]], prev: Any, rng: random.Random) -> Any:
    if link.output.endswith("~"):
        # Substring route: a recorded value of this argument that the actual output mentions,
        # else a token of the same id shape (the ticket this chain wrote into a note and read
        # back is not the recorded one: the recorded id is not in the actual text).
        text = " ".join(str(v) for _, v in leaves(prev))
        seen = [v for ex in examples for v in _get(ex, link.argument) if isinstance(v, str)]
        present = [v for v in seen if re.search(rf"(?<![\w.-]){re.escape(v)}(?![\w-])", text)]
        if not present:
            shapes = {p.pattern: p for v in seen if (p := id_shape(v)) is not None}
            present = sorted({m for p in shapes.values() for m in p.findall(text)})
        return rng.choice(present) if present else None
    found = [v for v in _get(prev, link.output) if _typed(v, link.json_type)]
    return rng.choice(found) if found else None
