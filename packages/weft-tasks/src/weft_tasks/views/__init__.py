"""Task views (paper §3.1.3): the agentic brief and the SimUser simulator, at three disclosure
levels, with objectives, dependencies, initial state, checks and MCP interfaces held fixed."""

from weft_tasks.views._errors import ViewError
from weft_tasks.views._order import disclosure_order
from weft_tasks.views.agentic import build_agentic_view, render_brief
from weft_tasks.views.answers import (
    Answer,
    AnswerContext,
    Answerer,
    Fact,
    LLMAnswerer,
    ProgrammaticAnswerer,
    programmatic_answer,
    user_facts,
    validate_answer,
)
from weft_tasks.views.build import build_view, view_label
from weft_tasks.views.disclosure import disclose_inputs, hidden_values, required_values
from weft_tasks.views.invariants import invariants_hash, task_invariants
from weft_tasks.views.personas import PERSONAS, Persona, sample_persona
from weft_tasks.views.questions import Question, read_reply
from weft_tasks.views.simuser import (
    DisclosedTurn,
    Exchange,
    LLMRequestWriter,
    ProgrammaticRequestWriter,
    RequestWriter,
    SimUser,
    build_simuser_graph,
    build_simuser_view,
    persona_of,
    render_request,
    validate_request,
)
from weft_tasks.views.turn import TurnContext

__all__ = [
    "PERSONAS",
    "Answer",
    "AnswerContext",
    "Answerer",
    "DisclosedTurn",
    "Exchange",
    "Fact",
    "LLMAnswerer",
    "LLMRequestWriter",
    "Persona",
    "ProgrammaticAnswerer",
    "ProgrammaticRequestWriter",
    "Question",
    "RequestWriter",
    "SimUser",
    "TurnContext",
    "ViewError",
    "build_agentic_view",
    "build_simuser_graph",
    "build_simuser_view",
    "build_view",
    "disclose_inputs",
    "disclosure_order",
    "hidden_values",
    "invariants_hash",
    "persona_of",
    "programmatic_answer",
    "read_reply",
    "render_brief",
    "render_request",
    "required_values",
    "sample_persona",
    "task_invariants",
    "user_facts",
    "validate_answer",
    "validate_request",
    "view_label",
]
