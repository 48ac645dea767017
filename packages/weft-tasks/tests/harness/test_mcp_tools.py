import json

from weft_tasks.harness.mcp_tools import openai_tool


def test_a_tool_block_is_the_same_bytes_whichever_runtime_ordered_its_schema():
    # two runtimes serving the same tool ordered its schema differently (test_reproducible)
    live = {"properties": {"id": {"type": "string"}}, "required": ["id"], "type": "object"}
    recorded = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
    a = json.dumps(openai_tool("get", "Get one.", live))
    b = json.dumps(openai_tool("get", "Get one.", recorded))
    assert a == b
    assert list(json.loads(a)["function"]["parameters"]) == ["type", "properties", "required"]


def test_a_schema_without_a_type_is_an_object():
    tool = openai_tool("ping", "", {"properties": {}})
    assert tool["function"]["parameters"] == {"type": "object", "properties": {}}
