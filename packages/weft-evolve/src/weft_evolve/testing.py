"""A stochastic policy that makes genuine mistakes, for attribution benchmarks and tests.

`NoisyReferencePolicy` plays the reference policy inside any tool-calling loop (ReAct) but, at a
set rate, perturbs the call it is about to make: a wrong argument value (the next entity's id, an
edited text, a number off by one), a dropped argument, or another tool of the same MCP. It then
carries on as a model would — it reads the error of a failed mistake and retries the intended
call, and it uses whatever a wrong call that "worked" returned — so its failures are its own, and
a trajectory that passes may still hold the tool errors it recovered from. Mistakes are seeded
by the task, view and position in the conversation, so two rounds over an unchanged task make the
same mistakes and a changed error rate reflects a changed system. A `salt` (e.g. the round) draws
fresh samples instead, as a teacher sampled anew each round would: a mistake that never happened
in one round may happen in the next.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field

from weft_tasks.harness import HarnessTask, ReferencePolicyModel, split_tool_name

_MISTAKE = "_m"  # suffix of a perturbed call's id, so a failed mistake can be corrected
_NUMBERED = re.compile(r"^(.*?)(\d+)$")


def wrong_value(value: Any, rng: random.Random) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        m = _NUMBERED.match(value)
        if m:
            width = len(m.group(2))
            return f"{m.group(1)}{int(m.group(2)) + rng.randint(1, 3):0{width}d}"
        return value + " (draft)"
    return value


class NoisyReferencePolicy(BaseChatModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    inner: ReferencePolicyModel
    rate: float = 0.15
    seed: str = ""
    tool_names: list[str] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "weft-noisy-reference-policy"

    @property
    def model_name(self) -> str:
        return f"noisy-reference-p{self.rate:g}"

    def bind_tools(self, tools: Any, **kwargs: Any) -> NoisyReferencePolicy:
        names = []
        for t in tools:
            name = getattr(t, "name", None) or (
                t.get("function", {}).get("name") if isinstance(t, dict) else None
            )
            if name:
                names.append(str(name))
        self.tool_names = names
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self.inner._next(self._without_failed_mistakes(messages))
        if reply.tool_calls:
            rng = random.Random(f"{self.seed}:{len(messages)}")
            if rng.random() < self.rate:
                reply = self._perturb(reply, rng)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    @staticmethod
    def _without_failed_mistakes(messages: list[BaseMessage]) -> list[BaseMessage]:
        """The conversation as the policy reasons over it: a mistaken call that failed is seen
        and corrected (the next step retries the intended call); one that "worked" stands."""
        failed = {
            m.tool_call_id
            for m in messages
            if isinstance(m, ToolMessage)
            and m.status == "error"
            and m.tool_call_id.endswith(_MISTAKE)
        }
        if not failed:
            return messages
        out: list[BaseMessage] = []
        for m in messages:
            if isinstance(m, ToolMessage) and m.tool_call_id in failed:
                continue
            if (
                isinstance(m, AIMessage)
                and m.tool_calls
                and all(tc.get("id") in failed for tc in m.tool_calls)
            ):
                continue
            out.append(m)
        return out

    def _perturb(self, reply: AIMessage, rng: random.Random) -> AIMessage:
        call: dict[str, Any] = dict(reply.tool_calls[0])
        args: dict[str, Any] = dict(call.get("args") or {})
        mistake = rng.choice(["value", "value", "drop", "tool"])
        if mistake == "tool":
            mcps = self.inner.graph.mcps
            mine = split_tool_name(str(call["name"]), mcps)
            others = [
                n
                for n in self.tool_names
                if n != call["name"]
                and (split_tool_name(n, mcps) or ("", ""))[0] == (mine or ("?",))[0]
            ]
            if others:
                call["name"] = rng.choice(sorted(others))
            else:
                mistake = "value"
        if mistake == "drop" and args:
            args.pop(rng.choice(sorted(args)))
        elif mistake == "value" and args:
            key = rng.choice(sorted(args))
            args[key] = wrong_value(args[key], rng)
        call["args"] = args
        call["id"] = f"{call.get('id') or 'call'}{_MISTAKE}"
        return AIMessage(content=reply.content, tool_calls=[call])


def noisy_policy(rate: float, salt: Callable[[], str] | None = None) -> Any:
    """Model factory for `ReActHarness`: the noisy reference policy of each task and view.

    `salt()` is read when a rollout starts and mixed into the seed (None: the same mistakes in
    every round)."""

    def factory(task: HarnessTask) -> NoisyReferencePolicy:
        inner = ReferencePolicyModel(graph=task.graph, mode=task.mode)
        seed = f"{task.graph.id}:{task.view.mode.value}:{task.view.disclosure.value}"
        if salt is not None:
            seed = f"{seed}:{salt()}"
        return NoisyReferencePolicy(inner=inner, rate=rate, seed=seed)

    factory.__name__ = f"noisy_reference_p{rate:g}"
    return factory
