"""`init_policy`: a from-scratch policy in a real Hugging Face architecture (Qwen3), written so that
`AutoModelForCausalLM.from_pretrained(DIR)` and `AutoTokenizer.from_pretrained(DIR)` load it exactly
like a downloaded checkpoint. No weights exist on these machines, so the policy is built here."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import torch
from pydantic import BaseModel, Field
from transformers import Qwen3Config, Qwen3ForCausalLM

from weft_train.errors import TrainUserError
from weft_train.policy.tokenizer import build_tokenizer

Preset = Literal["tiny", "mini", "small", "base"]


class PolicyShape(BaseModel):
    """Qwen3 dimensions; the presets span a few thousand to a few million parameters."""

    hidden_size: int = Field(description="Width of the residual stream.")
    intermediate_size: int = Field(description="Width of the MLP.")
    num_hidden_layers: int = Field(description="Transformer blocks.")
    num_attention_heads: int = Field(description="Query heads.")
    num_key_value_heads: int = Field(description="Key/value heads (grouped-query attention).")
    head_dim: int = Field(description="Width of one head.")
    max_position_embeddings: int = Field(default=4096, description="Longest sequence, in tokens.")


PRESETS: dict[str, PolicyShape] = {
    # ~27k parameters on the byte vocabulary: unit tests.
    "tiny": PolicyShape(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
    ),
    # ~0.2M with a 1,000-merge vocabulary: the SFT benchmark's policy. Two blocks are enough to
    # copy an id or an address from the context, and each step costs a fifth of `small`'s.
    "mini": PolicyShape(
        hidden_size=64,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
    ),
    # ~0.8M: CPU benchmarks that must train in minutes.
    "small": PolicyShape(
        hidden_size=128,
        intermediate_size=384,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=32,
    ),
    # ~3.2M: the largest that still trains on two cores.
    "base": PolicyShape(
        hidden_size=256,
        intermediate_size=768,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=4,
        head_dim=32,
    ),
}


def init_policy(
    out_dir: str | Path,
    preset: Preset | PolicyShape = "tiny",
    *,
    seed: int = 0,
    corpus: Iterable[str] | None = None,
    merges: int = 0,
) -> Path:
    """Write a randomly initialised Qwen3 policy with Weft's tokenizer and chat template to
    `out_dir`; returns the folder. `merges` > 0 learns that many BPE merges from `corpus`."""
    if isinstance(preset, str):
        if preset not in PRESETS:
            raise TrainUserError(f"unknown policy preset {preset!r} (known: {sorted(PRESETS)})")
        shape = PRESETS[preset]
    else:
        shape = preset
    if merges > 0 and corpus is None:
        raise TrainUserError("merges > 0 needs a corpus to learn them from")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(corpus, merges)
    model = build_model(
        len(tokenizer),
        shape,
        seed=seed,
        eos_id=tokenizer.eos_token_id,
        pad_id=tokenizer.pad_token_id,
    )
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def build_model(
    vocab_size: int,
    shape: Preset | PolicyShape = "tiny",
    *,
    seed: int = 0,
    eos_id: int | None = None,
    pad_id: int | None = None,
) -> Any:
    """A randomly initialised Qwen3 in memory (`init_policy` builds its model with this and
    writes it; tests and benchmarks that need no folder call it directly)."""
    if isinstance(shape, str):
        if shape not in PRESETS:
            raise TrainUserError(f"unknown policy preset {shape!r} (known: {sorted(PRESETS)})")
        shape = PRESETS[shape]
    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=vocab_size,
        tie_word_embeddings=True,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        bos_token_id=None,
        **shape.model_dump(),
    )
    model = Qwen3ForCausalLM(config)
    model.generation_config.eos_token_id = eos_id
    model.generation_config.pad_token_id = pad_id
    return model


def parameter_count(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
