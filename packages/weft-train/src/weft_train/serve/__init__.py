"""`weft-train serve`: an OpenAI-compatible policy server with vLLM 0.33's token fields."""

from weft_train.serve.app import build_app, serve
from weft_train.serve.protocol import ChatRequest

__all__ = ["ChatRequest", "build_app", "serve"]
