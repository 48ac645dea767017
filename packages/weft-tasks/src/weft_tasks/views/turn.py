"""What one SimUser turn may and must say: shared by the request writers and the answerers."""

from __future__ import annotations

from dataclasses import dataclass

from weft_core.models import Disclosure, TaskGraph, TaskNode
from weft_tasks.views.personas import Persona

__all__ = ["TurnContext"]


@dataclass(frozen=True)
class TurnContext:
    """Everything a request writer may use for one turn, and what it must and must not say."""

    graph: TaskGraph
    node: TaskNode
    index: int
    persona: Persona
    disclosure: Disclosure
    required: list[str]
    forbidden: list[str]
    future_intents: list[str]
    template: str
