"""Agent harnesses (paper §3.1.3): the `Harness` contract, a ReAct agent over MegaMCP endpoints,
the reference-chain teacher, and a subprocess adapter for external harnesses."""

from weft_tasks.harness._errors import HarnessConfigError, HarnessRuntimeError
from weft_tasks.harness.mcp_tools import group_client, public_tool_name, split_tool_name
from weft_tasks.harness.messages import to_chat_message, to_chat_messages
from weft_tasks.harness.protocol import Harness, HarnessRun, HarnessTask, MCPEndpoint, TurnCallback
from weft_tasks.harness.react import ReActHarness
from weft_tasks.harness.reference_policy import ReferencePolicyModel, reference_policy
from weft_tasks.harness.subprocess_harness import SubprocessHarness
from weft_tasks.harness.teacher import ReferenceChainTeacher

__all__ = [
    "Harness",
    "HarnessConfigError",
    "HarnessRun",
    "HarnessRuntimeError",
    "HarnessTask",
    "MCPEndpoint",
    "ReActHarness",
    "ReferenceChainTeacher",
    "ReferencePolicyModel",
    "SubprocessHarness",
    "TurnCallback",
    "group_client",
    "public_tool_name",
    "reference_policy",
    "split_tool_name",
    "to_chat_message",
    "to_chat_messages",
]
