"""Recording and replaying chat models: a run with a model can be repeated without it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel

from weft_core.llm import (
    RecordingChatModel,
    RecordingError,
    ReplayChatModel,
    ReplayMissError,
    call_key,
)
from weft_core.testing import ScriptedChatModel, tool_call_message


class Verdict(BaseModel):
    coherent: bool
    objective: str


def _conversation(model: object) -> list[object]:
    """A small agent-like exchange: a tool call, its result, a final answer, a structured
    verdict."""
    llm = model.bind_tools(
        [
            {
                "type": "function",
                "function": {
                    "name": "get_order",
                    "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
                },
            }
        ]
    )  # type: ignore[attr-defined]
    prompt = [SystemMessage("You run a shop."), HumanMessage("Where is order O-1?")]
    first = llm.invoke(prompt)
    tool = ToolMessage('{"status": "shipped"}', tool_call_id=first.tool_calls[0]["id"])
    second = llm.invoke([*prompt, first, tool])
    verdict = model.with_structured_output(Verdict).invoke("Is CRM + helpdesk coherent?")  # type: ignore[attr-defined]
    return [first.tool_calls, second.content, verdict]


def _scripted() -> ScriptedChatModel:
    return ScriptedChatModel(
        [
            tool_call_message("get_order", {"id": "O-1"}, id="call_a"),
            "Order O-1 has shipped.",
            tool_call_message("Verdict", {"coherent": True, "objective": "help a customer"}),
        ]
    )


def test_a_recorded_run_replays_without_the_model(tmp_path: Path) -> None:
    path = tmp_path / "model-calls.jsonl"
    inner = _scripted()
    recorded = _conversation(RecordingChatModel(inner, path))
    inner.assert_exhausted()
    lines = path.read_text().splitlines()
    assert len(lines) == 3 and all(json.loads(x)["key"].startswith("sha256:") for x in lines)

    replay = ReplayChatModel(path)
    assert _conversation(replay) == recorded
    assert replay.remaining == 0


async def test_replay_answers_concurrent_calls_by_prompt_not_order(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    inner = ScriptedChatModel([lambda msgs: f"echo {msgs[-1].content}" for _ in range(5)])
    rec = RecordingChatModel(inner, path)
    asks = [f"q{i}" for i in range(5)]
    first = await asyncio.gather(*(rec.ainvoke(q) for q in asks))
    replay = ReplayChatModel(path)
    again = await asyncio.gather(*(replay.ainvoke(q) for q in reversed(asks)))
    assert [m.content for m in reversed(again)] == [m.content for m in first]


def test_a_diverging_replay_fails_with_the_prompt_named(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    RecordingChatModel(ScriptedChatModel(["yes"]), path).invoke("Is 2 prime?")
    replay = ReplayChatModel(path)
    with pytest.raises(ReplayMissError, match="Is 3 prime"):
        replay.invoke("Is 3 prime?")
    assert replay.invoke("Is 2 prime?").content == "yes"
    with pytest.raises(ReplayMissError):
        replay.invoke("Is 2 prime?")  # recorded once, replayed once


def test_keys_ignore_message_ids_and_provider_metadata() -> None:
    a = AIMessage("hi", id="run-1", response_metadata={"model": "x", "latency": 1.2})
    b = AIMessage("hi", id="run-2", response_metadata={"model": "y"})
    assert call_key([a]) == call_key([b])
    assert call_key([a]) != call_key([AIMessage("hello")])
    assert call_key([a], ["\n"]) != call_key([a])


def test_malformed_recordings_are_refused_with_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "weft-model-calls/1", "key": "k", "reply": {}}\n{torn\n')
    with pytest.raises(RecordingError, match=r"bad\.jsonl:2"):
        ReplayChatModel(bad)
    with pytest.raises(RecordingError, match="cannot read"):
        ReplayChatModel(tmp_path / "missing.jsonl")
