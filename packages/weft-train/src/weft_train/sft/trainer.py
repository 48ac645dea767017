"""A plain torch/transformers SFT trainer for CPU: masked next-token cross-entropy over the
assistant tokens of each row (`masks.tokenize_row`), AdamW, linear warm-up, gradient clipping."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch
from pydantic import BaseModel, Field

from weft_core.models import SFTRow
from weft_train.errors import TrainUserError
from weft_train.policy import Policy
from weft_train.sft.masks import TokenizedRow, tokenize_row


class SFTConfig(BaseModel):
    lr: float = Field(default=2e-3, gt=0, description="Peak AdamW learning rate.")
    epochs: int = Field(default=3, ge=1, description="Passes over the rows.")
    batch_size: int = Field(default=4, ge=1, description="Rows per optimiser step.")
    max_length: int = Field(default=2048, ge=8, description="Rows are cut to this many tokens.")
    warmup_steps: int = Field(default=10, ge=0, description="Linear warm-up steps.")
    schedule: Literal["constant", "cosine"] = Field(
        default="constant",
        description="After warm-up: keep the peak rate, or decay it along a cosine to "
        "`min_lr_ratio` of the peak by the last step.",
    )
    min_lr_ratio: float = Field(
        default=0.1, ge=0, le=1, description="The cosine schedule's final rate, over the peak."
    )
    weight_decay: float = Field(default=0.0, ge=0, description="AdamW weight decay.")
    grad_clip: float = Field(default=1.0, gt=0, description="Gradient-norm clip.")
    seed: int = Field(default=0, description="Shuffling seed.")


@dataclass
class SFTBatch:
    input_ids: torch.Tensor  # (B, T) long, right-padded
    attention_mask: torch.Tensor  # (B, T) long
    loss_mask: torch.Tensor  # (B, T) float, 1 where the token is a target


def collate(rows: Sequence[TokenizedRow], pad_id: int) -> SFTBatch:
    width = max(len(r.input_ids) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    att = torch.zeros((len(rows), width), dtype=torch.long)
    loss = torch.zeros((len(rows), width), dtype=torch.float)
    for i, r in enumerate(rows):
        n = len(r.input_ids)
        ids[i, :n] = torch.tensor(r.input_ids)
        att[i, :n] = 1
        loss[i, :n] = torch.tensor(r.loss_mask, dtype=torch.float)
    return SFTBatch(input_ids=ids, attention_mask=att, loss_mask=loss)


def sft_loss(model: torch.nn.Module, batch: SFTBatch) -> tuple[torch.Tensor, int]:
    """(mean cross-entropy over target tokens, number of target tokens)."""
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    pred = logits[:, :-1].float()  # token t+1 is predicted at position t
    target = batch.input_ids[:, 1:]
    weight = batch.loss_mask[:, 1:]
    ce = torch.nn.functional.cross_entropy(
        pred.reshape(-1, pred.size(-1)), target.reshape(-1), reduction="none"
    ).view_as(weight)
    n = int(weight.sum())
    return (ce * weight).sum() / max(n, 1), n


def lr_scale(config: SFTConfig, step: int, total: int) -> float:
    """The learning rate of optimiser step `step` (0-based) of `total`, over the peak."""
    if config.warmup_steps and step < config.warmup_steps:
        return (step + 1) / config.warmup_steps
    if config.schedule == "constant":
        return 1.0
    span = max(total - config.warmup_steps, 1)
    done = min(max(step - config.warmup_steps, 0) / span, 1.0)
    floor = config.min_lr_ratio
    return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * done))


class SFTReport(BaseModel):
    steps: int
    rows: int
    target_tokens: int = Field(description="Assistant tokens trained on, per epoch.")
    losses: list[float] = Field(description="Loss per optimiser step.")


def train_sft(
    policy: Policy,
    rows: Sequence[SFTRow],
    config: SFTConfig | None = None,
    *,
    out_dir: str | Path | None = None,
    on_epoch: Callable[[int, Policy], None] | None = None,
) -> SFTReport:
    """Fine-tune `policy.model` in place on `rows`; saves model + tokenizer to `out_dir` if given.
    `on_epoch(epoch, policy)` runs after each epoch (evaluation, checkpoints)."""
    config = config or SFTConfig()
    if not rows:
        raise TrainUserError("SFT needs at least one row")
    data = [tokenize_row(r, policy.tokenizer, config.max_length) for r in rows]
    pad = int(policy.tokenizer.pad_token_id)
    model = policy.model
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    rng = random.Random(config.seed)
    total = config.epochs * math.ceil(len(data) / config.batch_size)
    losses: list[float] = []
    step = 0
    for epoch in range(config.epochs):
        model.train()
        order = list(range(len(data)))
        rng.shuffle(order)
        for start in range(0, len(order), config.batch_size):
            batch = collate([data[i] for i in order[start : start + config.batch_size]], pad)
            scale = lr_scale(config, step, total)
            for group in opt.param_groups:
                group["lr"] = config.lr * scale
            loss, _ = sft_loss(model, batch)
            opt.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            opt.step()
            losses.append(float(loss.detach()))
            step += 1
        model.eval()
        if on_epoch is not None:
            on_epoch(epoch, policy)
    if out_dir is not None:
        model.save_pretrained(out_dir)
        policy.tokenizer.save_pretrained(out_dir)
    return SFTReport(
        steps=step,
        rows=len(data),
        target_tokens=sum(sum(d.loss_mask) for d in data),
        losses=losses,
    )
