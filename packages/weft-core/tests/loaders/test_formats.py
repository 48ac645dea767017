"""Format detection over every shape the loaders accept, and what they refuse."""

from __future__ import annotations

from typing import Any

import pytest

from weft_core.loaders import SpecFormat, detect_format

FN = {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {}}}
MCP_TOOL = {"name": "t", "description": "d", "inputSchema": {"type": "object"}}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"tools": [MCP_TOOL]}, SpecFormat.MCP_TOOLS_LIST),
        ({"tools": [MCP_TOOL], "nextCursor": None}, SpecFormat.MCP_TOOLS_LIST),
        ({"jsonrpc": "2.0", "id": 1, "result": {"tools": [MCP_TOOL]}}, SpecFormat.MCP_TOOLS_LIST),
        ([MCP_TOOL], SpecFormat.MCP_TOOLS_LIST),
        (MCP_TOOL, SpecFormat.MCP_TOOLS_LIST),
        ({"tools": [{"name": "no_args"}]}, SpecFormat.MCP_TOOLS_LIST),
        (FN, SpecFormat.OPENAI_FUNCTIONS),
        ([FN, FN], SpecFormat.OPENAI_FUNCTIONS),
        ({"type": "function", "function": FN}, SpecFormat.OPENAI_FUNCTIONS),
        ([{"type": "function", "function": FN}], SpecFormat.OPENAI_FUNCTIONS),
        ({"tools": [{"type": "function", "function": FN}]}, SpecFormat.OPENAI_FUNCTIONS),
        ({"functions": [FN]}, SpecFormat.OPENAI_FUNCTIONS),
        ({"id": "simple_1", "question": [], "function": [FN]}, SpecFormat.OPENAI_FUNCTIONS),
        ({"name": "s", "tools": [], "schema_version": 1}, SpecFormat.WEFT),
        ({"name": "s", "tools": [{"name": "t", "input_schema": {}}]}, SpecFormat.WEFT),
        ({"labels": {}, "metadata": {"server_info_crawled": {"tools": []}}}, SpecFormat.TOUCAN),
        ({"metadata": {"remote_server_response": {"tools": []}}}, SpecFormat.TOUCAN),
        ({"hello": "world"}, SpecFormat.UNKNOWN),
        ([], SpecFormat.UNKNOWN),
        ([1, 2], SpecFormat.UNKNOWN),
        ("tools", SpecFormat.UNKNOWN),
        (None, SpecFormat.UNKNOWN),
        (3.5, SpecFormat.UNKNOWN),
    ],
)
def test_detect_format(data: Any, expected: SpecFormat) -> None:
    assert detect_format(data) == expected.value
    assert isinstance(detect_format(data), str)
