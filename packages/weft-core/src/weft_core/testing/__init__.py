"""Public test helpers: a scripted chat model that stands in for an LLM in tests."""

from weft_core.testing._scripted import ScriptedChatModel, ScriptExhaustedError, tool_call_message

__all__ = ["ScriptExhaustedError", "ScriptedChatModel", "tool_call_message"]
