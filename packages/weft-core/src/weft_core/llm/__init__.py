"""LLM configuration: one setting (string or ModelConfig) -> a LangChain chat model, or None.

None means "no model": every LLM agent node then runs its programmatic strategy.
"""

from weft_core.llm._config import ModelConfig, parse_model_spec
from weft_core.llm._factory import make_chat_model, make_chat_model_from_env
from weft_core.llm._names import PROGRAMMATIC, TITO_KEY, model_display_name
from weft_core.llm._recording import (
    RecordingChatModel,
    RecordingError,
    ReplayChatModel,
    ReplayMissError,
    call_key,
)
from weft_core.llm._reply import reply_payload, reply_text
from weft_core.llm._settings import ModelSettings, WeftLLMSettings
from weft_core.llm._structured import ask_structured

__all__ = [
    "PROGRAMMATIC",
    "TITO_KEY",
    "ModelConfig",
    "ModelSettings",
    "RecordingChatModel",
    "RecordingError",
    "ReplayChatModel",
    "ReplayMissError",
    "WeftLLMSettings",
    "ask_structured",
    "call_key",
    "make_chat_model",
    "make_chat_model_from_env",
    "model_display_name",
    "parse_model_spec",
    "reply_payload",
    "reply_text",
]
