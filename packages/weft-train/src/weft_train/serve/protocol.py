"""The request of `/v1/chat/completions` the server accepts (OpenAI's, plus vLLM's extras)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class StreamOptions(BaseModel):
    include_usage: bool = False


class ChatRequest(BaseModel):
    """OpenAI chat-completions fields a tool-calling client sends; unknown ones are ignored, like
    vLLM does for most of them."""

    model_config = ConfigDict(extra="ignore")

    model: str = ""
    messages: list[dict[str, Any]] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    temperature: float | None = Field(default=None, ge=0.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    seed: int | None = None
    n: int = Field(default=1, ge=1, le=1, description="One choice per request.")
    stream: bool = False
    stream_options: StreamOptions | None = None
    logprobs: bool = False
    top_logprobs: int | None = Field(default=None, ge=0, le=0)
    return_token_ids: bool = Field(
        default=False, description="vLLM: prompt_token_ids and choices[].token_ids."
    )
    return_tokens_as_token_ids: bool = Field(
        default=False, description='vLLM: logprob tokens as "token_id:<id>".'
    )
