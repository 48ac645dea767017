"""One entry point for every view: mode x disclosure x seed."""

from __future__ import annotations

from weft_core.models import Disclosure, TaskGraph, TaskView, ViewMode
from weft_tasks.views.agentic import build_agentic_view
from weft_tasks.views.simuser import build_simuser_view


def build_view(
    graph: TaskGraph,
    mode: ViewMode | str = ViewMode.AGENTIC,
    disclosure: Disclosure | str = Disclosure.FULL,
    seed: int | str = 0,
) -> TaskView:
    """The view of `graph` in `mode` at `disclosure`; the graph itself is never modified."""
    mode = ViewMode(mode)
    disclosure = Disclosure(disclosure)
    if mode is ViewMode.AGENTIC:
        return build_agentic_view(graph, disclosure)
    return build_simuser_view(graph, disclosure, seed)


def view_label(view: TaskView) -> str:
    """`agentic/full`, `simuser/vague`... as used in traces and summaries."""
    return f"{view.mode.value}/{view.disclosure.value}"
