"""Test utilities: a scripted OpenAI-compatible model server (real HTTP, token extras) and a
policy for it that plays a task's reference solution through any harness."""

from weft_tasks.testing.openai_server import ByteChatTemplate, Policy, ScriptedOpenAIServer
from weft_tasks.testing.reference_replies import reference_replies, reference_replies_by_brief

__all__ = [
    "ByteChatTemplate",
    "Policy",
    "ScriptedOpenAIServer",
    "reference_replies",
    "reference_replies_by_brief",
]
