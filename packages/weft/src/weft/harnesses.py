"""The rollout stage's harnesses, built from the config: the reference teacher, ReAct over a
chat model (through a capture gateway when one fronts the model), the external agent harnesses
(Hermes, OpenClaw) and user-declared subprocess harnesses."""

from __future__ import annotations

import os
from typing import Any

from langchain_core.language_models import BaseChatModel

from weft.config import PipelineConfig
from weft.errors import ConfigError

EXTERNAL = ("hermes", "openclaw")


def gateway_upstream(model: str | None) -> tuple[str, str, str | None] | None:
    """(base URL, served model name, API key) when `model` is an OpenAI-compatible endpoint a
    capture gateway can front; None otherwise (no model, or another provider)."""
    from weft_core.llm import parse_model_spec
    from weft_core.llm._config import OPENAI_COMPATIBLE

    cfg = parse_model_spec(model or "")
    if cfg is None or cfg.provider not in OPENAI_COMPATIBLE:
        return None
    url = cfg.base_url or "https://api.openai.com/v1"
    key = cfg.api_key.get_secret_value() if cfg.api_key else os.environ.get("WEFT_LLM_API_KEY")
    if key is None and cfg.base_url is None:
        key = os.environ.get("OPENAI_API_KEY")
    return url, cfg.model, key


def build_harnesses(
    config: PipelineConfig,
    llm: BaseChatModel | None,
    *,
    model: str | None = None,
    gateway: Any = None,
) -> dict[str, Any]:
    """The configured harnesses. 'hermes' and 'openclaw' need `gateway` (a `CaptureGateway` in
    front of an OpenAI-compatible `model`); with one, ReAct's calls go through it too."""
    from weft_tasks.gateway import GatewayChatModels
    from weft_tasks.harness import (
        ReActHarness,
        ReferenceChainTeacher,
        SubprocessHarness,
        reference_policy,
    )
    from weft_tasks.harness.external import (
        HarnessSettings,
        HermesHarness,
        OpenClawHarness,
        installed,
    )

    upstream = gateway_upstream(model)
    harnesses: dict[str, Any] = {}
    external = {h.name: h for h in config.rollouts.external}
    for name in config.rollouts.harnesses:
        if name in external:
            h = external[name]
            harnesses[name] = SubprocessHarness(
                name, h.command, modes=frozenset(h.modes), env=h.env, gateway=gateway
            )
        elif name == "teacher":
            harnesses[name] = ReferenceChainTeacher()
        elif name == "react":
            if gateway is not None and upstream is not None:
                harnesses[name] = ReActHarness(GatewayChatModels(gateway, upstream[1]))
            else:
                harnesses[name] = ReActHarness(llm if llm is not None else reference_policy)
        elif name in EXTERNAL:
            if gateway is None or upstream is None:
                raise ConfigError(
                    f"[rollouts].harnesses: {name!r} needs an OpenAI-compatible model "
                    "(--model vllm:MODEL@URL or openai:MODEL); it has no programmatic policy"
                )
            settings = HarnessSettings()
            if installed(name, settings.home) is None:
                raise ConfigError(
                    f"[rollouts].harnesses: {name!r} is not installed under {settings.home}: "
                    f"run `uv run weft-tasks harness install {name}`"
                )
            adapter = HermesHarness if name == "hermes" else OpenClawHarness
            harnesses[name] = adapter(gateway, upstream[1], settings=settings)
        else:
            raise ConfigError(
                f"[rollouts].harnesses: unknown harness {name!r} (use 'teacher', 'react', "
                "'hermes', 'openclaw' or an [[rollouts.external]] name)"
            )
    return harnesses
