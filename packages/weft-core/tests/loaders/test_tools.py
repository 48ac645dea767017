"""Tool-level normalization: names, duplicates, descriptions, parameter tables, rejections."""

from __future__ import annotations

from typing import Any

import pytest

from weft_core.loaders._tools import (
    ToolOptions,
    normalize_tools,
    rewrite_name,
    synthesize_description,
)


def tool(name: Any, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"Does {name}.",
        "inputSchema": {"type": "object"},
        **extra,
    }


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("get-user", "get_user"),
        ("tickets.search", "tickets_search"),
        ("get contents by user", "get_contents_by_user"),
        ("!pg", "pg"),
        ("sentient-brain/orchestrate", "sentient_brain_orchestrate"),
        ("3d-render", "tool_3d_render"),
        ("长亭 IP 情报查询", "IP"),
        ("情报", "tool"),
        ("x" * 100, "x" * 64),
    ],
)
def test_rewrite_name(name: str, expected: str) -> None:
    assert rewrite_name(name) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("getUserProfile", "Get user profile."),
        ("get-user_profile", "Get user profile."),
        ("API-simple-price", "Api simple price."),
        ("!!!", "A tool."),
    ],
)
def test_synthesize_description(name: str, expected: str) -> None:
    assert synthesize_description(name) == expected


def test_rewritten_names_keep_original_and_warn() -> None:
    tools, rejected, warnings = normalize_tools([tool("list-items"), tool("ok_name")])
    assert [t.name for t in tools] == ["list_items", "ok_name"]
    assert tools[0].original_name == "list-items"
    assert tools[1].original_name is None
    assert rejected == []
    assert warnings == ["tool 'list-items': renamed 'list_items' (invalid name)"]


def test_identical_duplicates_dropped_different_ones_renamed() -> None:
    raw = [
        tool("search"),
        tool("search"),  # identical: dropped
        {**tool("search"), "description": "Another search."},  # different: renamed
    ]
    tools, _, warnings = normalize_tools(raw)
    assert [t.name for t in tools] == ["search", "search_2"]
    assert tools[1].original_name == "search"
    assert tools[1].description == "Another search."
    assert any("identical repeat of tool #0" in w for w in warnings)
    assert any("renamed 'search_2'" in w for w in warnings)


def test_source_valid_names_win_over_rewritten_ones() -> None:
    # 'get-item' rewrites to 'get_item', which a later tool already has in the source.
    tools, _, _ = normalize_tools([tool("get-item"), tool("get_item")])
    by_original = {t.original_name or t.name: t.name for t in tools}
    assert by_original == {"get-item": "get_item_2", "get_item": "get_item"}


def test_dedupe_is_deterministic() -> None:
    raw = [tool("a-b"), tool("a.b"), tool("a b"), tool("a_b"), tool("a_b_2")]
    first = [t.name for t in normalize_tools(raw)[0]]
    assert first == [t.name for t in normalize_tools(raw)[0]]
    assert len(set(first)) == 5
    assert "a_b" in first and "a_b_2" in first


def test_empty_or_missing_descriptions_are_synthesized() -> None:
    raw = [
        {"name": "listOrders", "inputSchema": {"type": "object"}},
        {"name": "get_order", "description": "   ", "inputSchema": {"type": "object"}},
        {"name": "cancel", "description": None},
        {"name": "refund", "description": ["not", "text"]},
    ]
    tools, _, warnings = normalize_tools(raw)
    assert [t.description for t in tools] == ["List orders.", "Get order.", "Cancel.", "Refund."]
    assert len([w for w in warnings if "synthesized" in w]) == 4
    assert any("description is a list" in w for w in warnings)


def test_unusable_tools_rejected_with_reasons() -> None:
    raw = [
        "not a tool",
        {"description": "no name"},
        {"name": "   "},
        {"name": "scalar_args", "inputSchema": {"type": "string"}},
        {"name": "list_schema", "inputSchema": 42},
        {
            "name": "bad_ref",
            "inputSchema": {"type": "object", "properties": {"a": {"$ref": "#/x"}}},
        },
        {"name": "bad_json_string", "parameters": "{not json"},
        tool("fine"),
    ]
    tools, rejected, _ = normalize_tools(raw)
    assert [t.name for t in tools] == ["fine"]
    reasons = {r.index: (r.name, r.reason) for r in rejected}
    assert reasons[0] == ("#0", "tool entry #0 is a str, not a JSON object")
    assert reasons[1] == ("#1", "tool entry #1 has no name")
    assert reasons[2][1] == "tool entry #2 has no name"
    assert reasons[3] == (
        "scalar_args",
        "input schema has type 'string'; tool arguments must be an object",
    )
    assert reasons[4] == ("list_schema", "'inputSchema' is a int, not a JSON Schema object")
    assert "unresolvable $ref '#/x'" in reasons[5][1]
    assert reasons[6][1] == "'parameters' is a string that is not JSON"
    assert [r.index for r in rejected] == [0, 1, 2, 3, 4, 5, 6]


def test_schema_given_as_json_string_is_decoded() -> None:
    tools, _, warnings = normalize_tools(
        [
            {
                "name": "t",
                "description": "d",
                "parameters": '{"type": "object", "properties": {"a": {"type": "int"}}}',
            }
        ]
    )
    assert tools[0].input_schema["properties"]["a"] == {"type": "integer"}
    assert any("JSON string" in w for w in warnings)


def test_missing_schema_means_no_arguments_and_type_is_added() -> None:
    tools, _, _ = normalize_tools(
        [
            {"name": "ping", "description": "d"},
            {"name": "p2", "description": "d", "inputSchema": {"properties": {}}},
        ]
    )
    assert tools[0].input_schema == {"type": "object", "properties": {}}
    assert tools[1].input_schema == {"type": "object", "properties": {}}


def test_openai_wrapper_and_output_schema_and_annotations() -> None:
    raw = [
        {
            "type": "function",
            "function": {
                "name": "f",
                "description": "d",
                "parameters": {"type": "object", "properties": {}},
            },
        },
        {
            "name": "g",
            "title": "Gee",
            "description": "d",
            "inputSchema": {"type": "object"},
            "outputSchema": {"type": "object", "properties": {"id": {"type": "int"}}},
            "annotations": {"readOnlyHint": True},
        },
        {"name": "h", "description": "d", "outputSchema": "text", "annotations": "loud"},
        {"name": "k", "description": "d", "outputSchema": {"$ref": "#/missing"}, "annotations": {}},
    ]
    tools, rejected, warnings = normalize_tools(raw)
    assert rejected == []
    assert tools[0].name == "f"
    assert tools[1].output_schema == {"type": "object", "properties": {"id": {"type": "integer"}}}
    assert tools[1].annotations == {"readOnlyHint": True, "title": "Gee"}
    assert tools[2].output_schema is None and tools[2].annotations is None
    assert tools[3].output_schema is None and tools[3].annotations is None
    assert any("output schema dropped" in w for w in warnings)


def test_parameter_tables_become_object_schemas() -> None:
    raw = [
        {
            "name": "update_page",
            "description": "Update a page.",
            "parameters": [
                {"name": "update_page", "required": False, "type": "string"},
                {"name": "page_id", "required": True, "type": "string"},
                {"name": "count", "required": False, "type": "int", "description": "How many."},
                {"name": "page_id", "required": False, "type": "string"},
                {"required": True},
            ],
        }
    ]
    scraped = ToolOptions(drop_self_named_param=True)
    tools, _, warnings = normalize_tools(raw, options=scraped)
    schema = tools[0].input_schema
    assert schema == {
        "type": "object",
        "properties": {
            "page_id": {"type": "string"},
            "count": {"type": "integer", "description": "How many."},
        },
        "required": ["page_id"],
    }
    assert any("repeating the tool's own name" in w for w in warnings)
    assert any("listed twice" in w for w in warnings)
    assert any("row #4 has no name" in w for w in warnings)
    # Without the scraped-source option a self-named parameter is a real parameter.
    plain, _, _ = normalize_tools(raw)
    assert "update_page" in plain[0].input_schema["properties"]


def test_not_tools_and_junk_descriptions() -> None:
    import re

    opts = ToolOptions(
        junk_descriptions=(re.compile("^Deploy Server"),),
        not_tools=frozenset({("Optional Settings", "Sign in.")}),
    )
    raw = [
        {"name": "Optional Settings", "description": "Sign in.", "parameters": []},
        {
            "name": "search_code",
            "description": "Deploy Server @x/github Try in Playground search_code",
        },
    ]
    tools, rejected, warnings = normalize_tools(raw, options=opts)
    assert rejected[0].name == "Optional Settings" and "not a tool" in rejected[0].reason
    assert tools[0].description == "Search code."
    assert any("scraped page text" in w for w in warnings)


def test_root_type_list_with_object_is_narrowed() -> None:
    raw = [
        {
            "name": "t",
            "description": "d",
            "inputSchema": {"type": ["object", "null"], "properties": {}},
        }
    ]
    tools, _, warnings = normalize_tools(raw)
    assert tools[0].input_schema["type"] == "object"
    assert any("narrowed to 'object'" in w for w in warnings)
    _, rejected, _ = normalize_tools([{"name": "u", "inputSchema": {"type": ["string", "null"]}}])
    assert "must be an object" in rejected[0].reason


def test_hostile_nesting_is_rejected_not_a_crash() -> None:
    value: Any = 0
    for _ in range(980):
        value = [value]
    schema = {"type": "object", "properties": {"a": {"type": "array", "default": value}}}
    raw = [{"name": "deep", "description": "d", "inputSchema": schema}, tool("fine")]
    tools, rejected, _ = normalize_tools(raw)
    assert [t.name for t in tools] == ["fine"]
    assert rejected[0].name == "deep" and "nested deeper than 200 levels" in rejected[0].reason
