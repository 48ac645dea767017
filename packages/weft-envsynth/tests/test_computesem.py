"""Compute tools: operations recognised from definitions, computed by the bundle, probed in validation."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from weft_core.models import MCPSpec, ToolSpec
from weft_envsynth.computesem import compute_semantics, lookup_reason

N = {"type": "number"}


def tool(name: str, desc: str, props: dict[str, Any], response: bool = True) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=desc,
        input_schema={"type": "object", "properties": props, "required": list(props)},
        output_schema={"type": "object", "properties": {"result": N}} if response else None,
    )


def test_operations_need_fitting_parameters() -> None:
    assert compute_semantics(tool("add", "Add two numbers.", {"a": N, "b": N})).op == "add"  # type: ignore[union-attr]
    sem = compute_semantics(tool("divide", "Divide one number by another.", {"a": N, "b": N}))
    assert sem is not None and sem.operands == ["a", "b"]
    # 'add' in the name, but a contact is not a number: a lookup, and the reason says why.
    contact = tool("add_contact", "Add a contact.", {"user_name": {"type": "string"}})
    assert compute_semantics(contact) is None
    assert "parameters do not fit" in lookup_reason(contact)
    stats = tool(
        "mean",
        "Calculate the mean of a list of numbers.",
        {"numbers": {"type": "array", "items": N}},
    )
    assert compute_semantics(stats).op == "mean"  # type: ignore[union-attr]
    words = tool(
        "mean", "Calculate the mean.", {"numbers": {"type": "array", "items": {"type": "string"}}}
    )
    assert compute_semantics(words) is None


def test_contradictory_name_and_description_is_not_guessed() -> None:
    # Named 'multiply', described as a square root: two operations, neither confirmed by both.
    t = tool("multiply", "Calculate the square root of a number.", {"x": N})
    assert compute_semantics(t) is None
    assert "several operations" in lookup_reason(t)


def test_conversion_needs_a_value_and_two_units() -> None:
    s = {"type": "string"}
    t = tool(
        "si_unit_conversion",
        "Convert a value from one SI unit to another.",
        {"value": N, "unit_in": s, "unit_out": s},
    )
    sem = compute_semantics(t)
    assert sem is not None and sem.unit_in == "unit_in" and sem.unit_out == "unit_out"


CALC = MCPSpec(
    name="calculator",
    tools=[
        tool("add", "Add two numbers.", {"a": N, "b": N}),
        tool("divide", "Divide one number by another.", {"a": N, "b": N}),
        tool(
            "standard_deviation",
            "Calculate the standard deviation of a list of numbers.",
            {"numbers": {"type": "array", "items": N}},
        ),
        tool(
            "round_number",
            "Round a number to a specified number of decimal places.",
            {"number": N, "decimal_places": {"type": "integer"}},
        ),
        tool(
            "lookup_rate",
            "Look up an exchange rate by currency code.",
            {"code": {"type": "string"}},
        ),
    ],
)


@pytest.fixture(scope="module")
def calc_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from weft_envsynth import synthesize_spec

    res = synthesize_spec(CALC, tmp_path_factory.mktemp("calc"))
    assert res.status == "certified", res.uncertified
    return Path(res.bundle or "")


def test_bundle_computes_and_refuses(calc_bundle: Path, tmp_path: Path) -> None:
    from fastmcp import Client

    from weft_core.binding import SessionBinding, bind_session, release_session
    from weft_envsynth.loader import import_bundle

    out: list[Any] = []

    async def go() -> None:
        with bind_session(SessionBinding("calc", tmp_path / "s.sqlite", tmp_path / "ws")):
            async with Client(import_bundle(calc_bundle).create_server()) as c:
                for name, args in [
                    ("add", {"a": 2.5, "b": 4}),
                    ("divide", {"a": 1, "b": 0}),
                    ("standard_deviation", {"numbers": [1, 2, 3, 4]}),
                    ("round_number", {"number": 3.14159, "decimal_places": 2}),
                ]:
                    r = await c.call_tool(name, args, raise_on_error=False)
                    out.append((r.is_error, r.structured_content or r.content[0].text))

    try:
        asyncio.run(go())
    finally:
        release_session("calc")
    assert out[0] == (False, {"result": 6.5})
    assert out[1][0] is True and "division by zero" in str(out[1][1])
    assert out[2][0] is False and abs(out[2][1]["result"] - 1.118034) < 1e-5
    assert out[3] == (False, {"result": 3.14})
    validation = json.loads((calc_bundle / "validation.json").read_text())
    names = {c["name"] for r in validation["rounds"] for c in r["checks"]}
    assert {"computes_add", "refuses_divide", "computes_stdev"} <= names
    semantics = validation["tool_semantics"]
    assert semantics["add"]["kind"] == "compute"
    assert semantics["lookup_rate"]["kind"] == "lookup" and semantics["lookup_rate"]["why"]


def test_a_name_word_alone_does_not_make_a_computation() -> None:
    s = {"type": "string"}
    # mcp-server-git's git_log: "log" in the name and one number, but the number is how many
    # entries to show and the repository path is no operand: a read of history, not a logarithm.
    git_log = ToolSpec(
        name="git_log",
        description="Shows the commit logs",
        input_schema={
            "type": "object",
            "properties": {
                "repo_path": s,
                "max_count": {"type": "integer", "default": 10},
                "start_timestamp": {"anyOf": [s, {"type": "null"}]},
            },
            "required": ["repo_path"],
        },
    )
    assert compute_semantics(git_log) is None
    reason = lookup_reason(git_log)
    assert "says otherwise" in reason and "repo_path" in reason
    # Only the count as its argument: still a listing option, not an operand.
    assert compute_semantics(tool("get_log", "Shows the log.", {"max_count": N})) is None
    assert compute_semantics(tool("log_entries", "", {"page_size": N})) is None
    # A logarithm by name alone, with nothing contradicting it, is still computed ...
    assert compute_semantics(tool("log", "", {"x": N})).op == "log"  # type: ignore[union-attr]
    assert compute_semantics(tool("abs", "Returns |x|.", {"number": N})).op == "abs"  # type: ignore[union-attr]
    # ... and a description naming the operation outweighs an extra required argument's doubt.
    both = tool("logarithm", "Compute the logarithm of a number.", {"value": N, "base": N})
    assert compute_semantics(both).op == "log"  # type: ignore[union-attr]
    # Hostile: a name-only 'add' whose second number is a page of results, and a 'log' whose
    # required argument is a message string: neither is arithmetic.
    assert compute_semantics(tool("add", "", {"x": N, "page": N})) is None
    msg = tool("log", "Write a message to the log.", {"message": s, "level": N})
    assert compute_semantics(msg) is None


def test_git_log_is_not_computed_in_a_tool_set() -> None:
    from weft_envsynth.analyze import analyze_programmatic

    s = {"type": "string"}
    spec = MCPSpec(
        name="vcs",
        tools=[
            ToolSpec(
                name="git_log",
                description="Shows the commit logs",
                input_schema={
                    "type": "object",
                    "properties": {"repo_path": s, "max_count": {"type": "integer"}},
                    "required": ["repo_path"],
                },
                annotations={"readOnlyHint": True},
            ),
            tool("add", "Add two numbers.", {"a": N, "b": N}),
        ],
    )
    ops = {e.tool: e.operation for e in analyze_programmatic(spec).tools}
    assert ops["add"] == "compute"
    assert compute_semantics(spec.tools[0]) is None
