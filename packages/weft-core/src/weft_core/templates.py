"""The `{{name}}` template engine of reference calls and checks, and dotted-path binds.

One engine for every place a value flows from one call into another: atomic-task validation and
composed-task replays on the client, and MegaMCP's batches on the host (a batch that renders and
binds server-side replays a whole chained task in one request).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

_TEMPLATE = re.compile(r"\{\{\s*([A-Za-z0-9_.\-]+)\s*\}\}")


class TemplateError(ValueError):
    """A `{{name}}` template names a value that no input, earlier call, upstream output or
    binding provides; `name` is that name."""

    def __init__(self, name: str, known: Sequence[str] = ()) -> None:
        self.name = name
        super().__init__(f"template {{{{{name}}}}} has no value (known: {sorted(known)[:12]})")


def render(value: Any, env: Mapping[str, Any]) -> Any:
    """Fill `{{name}}` templates from `env`, recursively through dicts and lists (the one template
    engine of reference calls, checks and harness replays). A string that is exactly one template
    takes the value's own type (an integer id stays an integer); templates inside text are
    substituted. `name` is a key of `env`, else `key.path` into one (`customer.email`)."""
    if isinstance(value, str):
        whole = _TEMPLATE.fullmatch(value.strip())
        if whole:
            return _lookup(env, whole.group(1))
        return _TEMPLATE.sub(lambda m: _text(_lookup(env, m.group(1))), value)
    if isinstance(value, dict):
        return {k: render(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, env) for v in value]
    return value


def template_names(value: Any) -> set[str]:
    """Every name a value's templates refer to."""
    if isinstance(value, str):
        return set(_TEMPLATE.findall(value))
    if isinstance(value, dict):
        return set().union(*(template_names(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(template_names(v) for v in value)) if value else set()
    return set()


def _lookup(env: Mapping[str, Any], name: str) -> Any:
    if name in env:
        return env[name]
    head, _, rest = name.partition(".")
    if rest and head in env:
        found = _walk(env[head], rest.split("."))
        if found is not MISSING:
            return found
    raise TemplateError(name, list(env))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


MISSING = object()
"""What a path lookup returns when the value is absent (None is a value)."""


def extract(result: Any, path: str) -> Any:
    """Take a value out of a tool result by dotted path (`items.0.id`).

    When the exact path is absent, the last segment is looked for breadth-first, so `id` finds
    the id of `{"result": {"id": 3}}` or of the first row of a list: servers wrap results
    differently (FastMCP wraps non-object returns in `{"result": ...}`) and this keeps a reference
    solution portable across them.
    """
    value = _walk(result, path.split("."))
    if value is not MISSING:
        return value
    key = path.split(".")[-1]
    queue: list[Any] = [result]
    while queue:
        cur = queue.pop(0)
        if isinstance(cur, dict):
            if key in cur:
                return cur[key]
            queue.extend(cur.values())
        elif isinstance(cur, list):
            queue.extend(cur)
    raise KeyError(f"result has no {path!r}")


def _walk(value: Any, parts: Sequence[str]) -> Any:
    for part in parts:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif (
            isinstance(value, list)
            and part.lstrip("-").isdigit()
            and -len(value) <= int(part) < len(value)
        ):
            value = value[int(part)]
        else:
            return MISSING
    return value


def scoped(value: Any, prefix: str) -> Any:
    """`value` with every template name prefixed (`{{id}}` -> `{{<prefix>id}}`, paths kept), so
    several reference solutions can share one environment without their names meeting."""
    if isinstance(value, str):
        return _TEMPLATE.sub(lambda m: "{{" + prefix + m.group(1) + "}}", value)
    if isinstance(value, dict):
        return {k: scoped(v, prefix) for k, v in value.items()}
    if isinstance(value, list):
        return [scoped(v, prefix) for v in value]
    return value


def call_value(structured: Any, text: str) -> Any:
    """What binds read from a tool result: its structured content, else its text parsed as JSON,
    else the text."""
    if structured is not None or not text:
        return structured
    try:
        return json.loads(text)
    except ValueError:
        return text
