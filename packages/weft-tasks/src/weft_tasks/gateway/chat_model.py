"""ReAct (any LangChain-model harness) behind the capture gateway: a model factory that builds
one ChatOpenAI per rollout pointed at `/r/<rollout_id>/v1`, so its calls are captured like an
external harness's."""

from __future__ import annotations

from typing import Any

from weft_tasks.gateway.app import CaptureGateway


class GatewayChatModels:
    """`ReActHarness(GatewayChatModels(gateway, served_model))`."""

    def __init__(self, gateway: CaptureGateway, served_model: str) -> None:
        self.gateway = gateway
        self.model_name = served_model

    def __call__(self, task: Any) -> Any:
        from weft_core.llm import ModelConfig, make_chat_model

        url = self.gateway.base_url(getattr(task, "rollout_id", "") or "react")
        return make_chat_model(ModelConfig(provider="vllm", model=self.model_name, base_url=url))
