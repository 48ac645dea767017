from __future__ import annotations

import pytest
from langchain_core.exceptions import OutputParserException
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from weft_core.testing import ScriptedChatModel, ScriptExhaustedError, tool_call_message


class Entity(BaseModel):
    name: str
    fields: list[str] = Field(min_length=1)


class Verdict(TypedDict):
    ok: bool
    reason: str


def test_plays_script_in_order_and_records_prompts() -> None:
    model = ScriptedChatModel(["first", AIMessage(content="second")])
    assert model.invoke("hello").content == "first"
    assert model.invoke([SystemMessage("sys"), HumanMessage("again")]).content == "second"
    assert model.calls == 2 and model.remaining == 0
    assert model.prompts[0][0].content == "hello"
    assert [m.content for m in model.prompts[1]] == ["sys", "again"]
    model.assert_exhausted()


def test_exhausted_script_raises_clearly() -> None:
    model = ScriptedChatModel(["only"])
    model.invoke("a")
    with pytest.raises(ScriptExhaustedError, match=r"call 2 but only 1 scripted replies.*'b'"):
        model.invoke("b")


def test_unused_replies_are_reported() -> None:
    model = ScriptedChatModel(["a", "b"])
    model.invoke("x")
    with pytest.raises(AssertionError, match="1 scripted"):
        model.assert_exhausted()


def test_dict_and_callable_and_exception_items() -> None:
    def echo(messages: list[BaseMessage]) -> str:
        return f"you said {messages[-1].content}"

    model = ScriptedChatModel([{"a": 1}, echo, RuntimeError("endpoint down")])
    assert model.invoke("x").content == '{"a": 1}'
    assert model.invoke("ping").content == "you said ping"
    with pytest.raises(RuntimeError, match="endpoint down"):
        model.invoke("y")


def test_bad_script_item_is_refused() -> None:
    with pytest.raises(TypeError, match="script item 1 is a int"):
        ScriptedChatModel(["ok", 3])


def test_tool_calls_get_ids_and_bind_tools_returns_self() -> None:
    model = ScriptedChatModel([tool_call_message("lookup", {"q": "ada"})])
    bound = model.bind_tools(
        [{"type": "function", "function": {"name": "lookup"}}], tool_choice="any"
    )
    assert bound is model
    reply = bound.invoke("find ada")
    assert isinstance(reply, AIMessage)
    assert reply.tool_calls[0]["name"] == "lookup"
    assert reply.tool_calls[0]["args"] == {"q": "ada"}
    assert reply.tool_calls[0]["id"] == "call_0_0"
    assert model.tool_choices == ["any"]
    assert len(model.bound_tools[0]) == 1


def test_structured_output_from_json_text_fenced_and_prose() -> None:
    model = ScriptedChatModel(
        [
            '{"name": "Customer", "fields": ["id", "email"]}',
            '```json\n{"name": "Order", "fields": ["id"]}\n```',
            'Sure! Here it is: {"name": "Ticket", "fields": ["id"]} Hope that helps.',
            {"name": "Invoice", "fields": ["id"]},
        ]
    )
    runnable = model.with_structured_output(Entity)
    names = [runnable.invoke("extract").name for _ in range(4)]
    assert names == ["Customer", "Order", "Ticket", "Invoice"]
    assert model.structured_schemas == [Entity]


def test_structured_output_from_tool_call_and_typed_dict() -> None:
    model = ScriptedChatModel([tool_call_message("Verdict", {"ok": True, "reason": "fine"})])
    assert model.with_structured_output(Verdict).invoke("judge") == {"ok": True, "reason": "fine"}


def test_structured_output_garbage_raises_like_a_real_parser() -> None:
    model = ScriptedChatModel(
        ["I cannot do that.", '{"name": "Customer", "fields": []}', '{"name": "X"}', '{"name": 1}']
    )
    runnable = model.with_structured_output(Entity)
    with pytest.raises(OutputParserException, match="not JSON"):
        runnable.invoke("x")
    with pytest.raises(OutputParserException, match="does not fit Entity"):
        runnable.invoke("x")  # fields must be non-empty
    with pytest.raises(OutputParserException, match="does not fit Entity"):
        runnable.invoke("x")
    schema = {"type": "object", "required": ["name", "fields"]}
    with pytest.raises(OutputParserException, match="lacks required"):
        model.with_structured_output(schema).invoke("x")


def test_structured_output_include_raw() -> None:
    model = ScriptedChatModel(["garbage", '{"name": "A", "fields": ["x"]}'])
    runnable = model.with_structured_output(Entity, include_raw=True)
    bad = runnable.invoke("x")
    assert bad["parsed"] is None and isinstance(bad["parsing_error"], OutputParserException)
    assert bad["raw"].content == "garbage"
    good = runnable.invoke("x")
    assert good["parsed"] == Entity(name="A", fields=["x"]) and good["parsing_error"] is None


async def test_async_invoke() -> None:
    model = ScriptedChatModel(["a", '{"name": "B", "fields": ["f"]}'])
    assert (await model.ainvoke("x")).content == "a"
    assert (await model.with_structured_output(Entity).ainvoke("y")).name == "B"


def test_drives_a_real_langchain_agent() -> None:
    agents = pytest.importorskip("langchain.agents")

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def answer(messages: list[BaseMessage]) -> AIMessage:
        result = next(m for m in reversed(messages) if isinstance(m, ToolMessage))
        return AIMessage(content=f"The sum is {result.content}")

    model = ScriptedChatModel([tool_call_message("add", {"a": 2, "b": 40}), answer])
    agent = agents.create_agent(model, tools=[add])
    out = agent.invoke({"messages": [HumanMessage("what is 2 + 40?")]})
    assert out["messages"][-1].content == "The sum is 42"
    assert [t.name for t in model.bound_tools[0]] == ["add"]
    model.assert_exhausted()
