"""Reverse task writing (§4.2.2): a task text q from a chain's verified effects that names no tool
and gives no call order. Two strategies behind one contract:

- `ProgrammaticTaskWriter` phrases each goal (what must hold at the end, what must be reported) and
  lists them in sorted order, so the text carries no call order;
- `LLMTaskWriter` asks any LangChain chat model; its reply is checked (no tool name, every required
  value present, not empty) and a reply that fails is rejected with the reason (the caller falls back).
"""

from __future__ import annotations

import re
from typing import Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from weft_toolspace.exceptions import ToolSpaceRuntimeError


class Goal(BaseModel):
    text: str = Field(description="The goal in words (no tool names).")
    required: list[str] = Field(default_factory=list, description="Literals q must contain.")


class TaskTextRejected(ToolSpaceRuntimeError):
    """A written task text broke the contract (names a tool, drops a required value, is empty)."""


class TaskWriter(Protocol):
    """Contract: returns a task text that contains every goal's required literals, names none of
    `tools` (as written or with spaces for underscores) and does not order the work; raises
    TaskTextRejected otherwise."""

    def write(self, goals: list[Goal], tools: list[str]) -> str: ...


def validate_task_text(text: str, goals: list[Goal], tools: list[str]) -> str:
    text = text.strip()
    if not text:
        raise TaskTextRejected("task text is empty")
    low = text.lower()
    for tool in tools:
        for form in {tool.lower(), tool.lower().replace("_", " ")}:
            if re.search(rf"(?<![\w]){re.escape(form)}(?![\w])", low):
                raise TaskTextRejected(f"task text names the tool {tool!r}")
    if re.search(r"\b(first|then|after that|next|finally|step \d)\b", low):
        raise TaskTextRejected("task text orders the work (first/then/next/finally)")
    for g in goals:
        for lit in g.required:
            if lit not in text:
                raise TaskTextRejected(f"task text drops the required value {lit!r}")
    return text


class ProgrammaticTaskWriter:
    def write(self, goals: list[Goal], tools: list[str]) -> str:
        body = "\n".join(f"- {g.text}" for g in sorted(goals, key=lambda g: g.text))
        return validate_task_text(
            "Using the tools available to you, bring the workspace to this end state and report "
            "what is asked:\n" + body,
            goals,
            tools,
        )


_SYSTEM = (
    "You turn a list of goals into one natural task request for an assistant with tools. "
    "Keep every quoted value exactly. Never mention tool or function names and never say in which "
    "order to work (no 'first', 'then', 'next', 'finally'). Reply with the task text only."
)


class LLMTaskWriter:
    def __init__(self, model: BaseChatModel) -> None:
        self.model = model

    def write(self, goals: list[Goal], tools: list[str]) -> str:
        listing = "\n".join(f"- {g.text}" for g in goals)
        reply = self.model.invoke(
            [
                SystemMessage(_SYSTEM),
                HumanMessage(
                    f"Goals:\n{listing}\n\nTools the text must not name: {', '.join(tools)}"
                ),
            ]
        )
        content = reply.content if isinstance(reply.content, str) else str(reply.content)
        return validate_task_text(content, goals, tools)
