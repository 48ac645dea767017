"""Ask a chat model for one pydantic object, and catch it when the answer is not one.

Works with any LangChain chat model: the answer may arrive as a tool call (models with native
structured output / tool binding) or as JSON in the message text (plain models, fenced or not).
A wrong answer is fed back once per retry with the validation error, the way an agent
conversation would correct it; after the retries a `ModelOutputError` names what was wrong.
Callers that fall back to a programmatic strategy catch it; nothing else about a bad answer raises.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ValidationError

from weft_core.exceptions import ModelOutputError
from weft_core.llm._reply import reply_payload

M = TypeVar("M", bound=BaseModel)


def ask_structured(
    llm: BaseChatModel,
    schema: type[M],
    prompt: str,
    *,
    system: str | None = None,
    retries: int = 1,
    what: str = "answer",
) -> M:
    """Invoke `llm` and return a validated `schema` instance, retrying with the error shown."""
    try:
        model: Any = llm.bind_tools([schema])
    except (NotImplementedError, AttributeError):
        model = llm
    messages: list[BaseMessage] = [SystemMessage(system)] if system else []
    messages += [
        HumanMessage(
            f"{prompt}\n\nAnswer with one JSON object matching this JSON Schema:\n"
            f"{json.dumps(schema.model_json_schema())}"
        ),
    ]
    last_error = ""
    for _ in range(retries + 1):
        reply = model.invoke(messages)
        try:
            return schema.model_validate(reply_payload(reply))
        except (ValueError, ValidationError) as exc:
            last_error = _short(exc)
            messages += [
                reply,
                HumanMessage(
                    f"That {what} is invalid: {last_error}. Answer again with valid JSON."
                ),
            ]
    raise ModelOutputError(f"the model gave no valid {what}: {last_error}")


def _short(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "(root)"
        return f"{loc}: {err['msg']}"
    return str(exc)[:300]
