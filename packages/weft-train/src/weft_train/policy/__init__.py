"""A real policy on CPU: build (`init_policy`), load (`Policy.load`), render, sample with logprobs."""

from weft_train.policy.build import (
    PRESETS,
    PolicyShape,
    build_model,
    init_policy,
    parameter_count,
)
from weft_train.policy.generate import (
    Generation,
    Policy,
    SamplingParams,
    TokenGenerator,
    token_logprobs,
)
from weft_train.policy.template import chat_template
from weft_train.policy.tokenizer import build_tokenizer
from weft_train.policy.toolcalls import ParsedCall, ParsedReply, parse_reply

__all__ = [
    "PRESETS",
    "Generation",
    "ParsedCall",
    "ParsedReply",
    "Policy",
    "PolicyShape",
    "SamplingParams",
    "TokenGenerator",
    "build_model",
    "build_tokenizer",
    "chat_template",
    "init_policy",
    "parameter_count",
    "parse_reply",
    "token_logprobs",
]
