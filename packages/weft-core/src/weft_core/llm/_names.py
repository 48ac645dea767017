"""How a chat model is named in manifests, traces and reports."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

PROGRAMMATIC = "programmatic"
"""The name recorded when no model ran: the node used its programmatic strategy."""

TITO_KEY = "weft_tito"
"""`AIMessage.response_metadata[TITO_KEY]`: the token-exact record of a `vllm:` model's reply."""


def model_display_name(llm: BaseChatModel | None) -> str:
    """The model's own name (`model_name` or `model`, as LangChain integrations spell it), else its
    class name; `programmatic` for no model."""
    if llm is None:
        return PROGRAMMATIC
    for attr in ("model_name", "model"):
        value = getattr(llm, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(llm).__name__
