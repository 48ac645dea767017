"""`train_sft_policy`: a from-scratch policy SFT-trained on teacher trajectories, written as a
model folder that `Policy.load`, `weft-train serve` and `AutoModelForCausalLM` load as is.

This is the SFT initialisation the benchmarks and atomic-turn GRPO start from: the tokenizer's BPE
merges are learnt from the rows' own rendered texts (so the tool block and prompts the policy sees in
every row become a few tokens), a Qwen3 of the given shape is initialised with `seed`, and the CPU
trainer fits the assistant tokens of the rows with a warm-up + cosine learning-rate schedule.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from weft_core.models import SFTRow
from weft_train.errors import TrainUserError
from weft_train.policy import PRESETS, Policy, PolicyShape, build_tokenizer, init_policy
from weft_train.sft.masks import row_messages
from weft_train.sft.trainer import SFTConfig, SFTReport, train_sft


class SFTRecipe(BaseModel):
    """How `train_sft_policy` builds and trains a policy (defaults: what `sft_learns.py` uses)."""

    preset: str | PolicyShape = Field(
        default="small", description="A shape preset name (see PRESETS) or a shape."
    )
    merges: int = Field(default=600, ge=0, description="BPE merges learnt from the rows.")
    max_position_embeddings: int = Field(default=2048, ge=64, description="Context, in tokens.")
    sft: SFTConfig = Field(
        default_factory=lambda: SFTConfig(
            lr=3e-3, epochs=30, batch_size=4, warmup_steps=10, schedule="cosine"
        ),
        description="Trainer settings (epochs, learning rate and its schedule, batch size).",
    )


def row_texts(rows: Sequence[SFTRow]) -> list[str]:
    """The rows rendered by the template on the plain byte tokenizer: the BPE training corpus."""
    plain: Any = build_tokenizer()
    return [
        str(plain.apply_chat_template(row_messages(r), tools=r.tools or None, tokenize=False))
        for r in rows
    ]


def init_sft_policy(
    rows: Sequence[SFTRow], out_dir: str | Path, *, seed: int = 0, recipe: SFTRecipe | None = None
) -> Policy:
    """The untrained policy `train_sft_policy` starts from (its tokenizer learnt from `rows`)."""
    recipe = recipe or SFTRecipe()
    if not rows:
        raise TrainUserError("train_sft_policy needs at least one SFT row")
    if isinstance(recipe.preset, PolicyShape):
        base = recipe.preset
    elif recipe.preset in PRESETS:
        base = PRESETS[recipe.preset]
    else:
        raise TrainUserError(f"unknown policy preset {recipe.preset!r} (known: {sorted(PRESETS)})")
    shape = base.model_copy(update={"max_position_embeddings": recipe.max_position_embeddings})
    folder = init_policy(
        out_dir,
        shape,
        seed=seed,
        corpus=row_texts(rows) if recipe.merges else None,
        merges=recipe.merges,
    )
    return Policy.load(folder)


def train_sft_policy(
    rows: Sequence[SFTRow],
    out_dir: str | Path,
    *,
    seed: int = 0,
    recipe: SFTRecipe | None = None,
    on_epoch: Callable[[int, Policy], None] | None = None,
) -> tuple[Path, SFTReport]:
    """Build a from-scratch policy from `rows` with `seed`, SFT-train it on them and save it to
    `out_dir`; returns (the model folder, the trainer's report). `on_epoch(epoch, policy)` runs
    before training (epoch 0) and after each epoch (1, 2, ...): held-out evaluation, checkpoints."""
    recipe = recipe or SFTRecipe()
    policy = init_sft_policy(rows, out_dir, seed=seed, recipe=recipe)
    config = recipe.sft.model_copy(update={"seed": seed})
    after: Callable[[int, Policy], None] | None = None
    if on_epoch is not None:
        on_epoch(0, policy)
        callback = on_epoch

        def after(epoch: int, p: Policy) -> None:
            callback(epoch + 1, p)

    report = train_sft(policy, rows, config, out_dir=out_dir, on_epoch=after)
    return Path(out_dir), report
