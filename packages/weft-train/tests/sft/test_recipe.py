"""train_sft_policy (the SFT initialisation), the learning-rate schedule and value-preserving BPE."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from weft_core.models import SFTRow
from weft_train.errors import TrainUserError
from weft_train.policy import Policy, PolicyShape, build_tokenizer
from weft_train.sft.recipe import SFTRecipe, row_texts, train_sft_policy
from weft_train.sft.trainer import SFTConfig, lr_scale


def _row(email: str, cid: int) -> SFTRow:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "crm_get_customer_by_email", "arguments": f'{{"email": "{email}"}}'},
    }
    return SFTRow.model_validate(
        {
            "messages": [
                {"role": "system", "content": "Use tools."},
                {"role": "user", "content": f"Look up the customer with email {email}."},
                {"role": "assistant", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": f'{{"id": {cid}}}'},
                {"role": "assistant", "content": f"Done (customer_id={cid})"},
            ],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "crm_get_customer_by_email",
                        "description": "Find a customer.",
                        "parameters": {
                            "type": "object",
                            "properties": {"email": {"type": "string"}},
                        },
                    },
                }
            ],
            "task_id": f"t{cid}",
        }
    )


ROWS = [_row(f"{n}{i}@example.com", i) for i, n in enumerate(["ada", "alan", "grace"] * 4, 3)]
MICRO = PolicyShape(
    hidden_size=16,
    intermediate_size=32,
    num_hidden_layers=1,
    num_attention_heads=2,
    num_key_value_heads=1,
    head_dim=8,
)


def test_train_sft_policy_writes_a_loadable_trained_policy(tmp_path: Path) -> None:
    seen: list[int] = []
    recipe = SFTRecipe(
        preset=MICRO,
        merges=60,
        sft=SFTConfig(lr=1e-2, epochs=2, batch_size=4, warmup_steps=1, schedule="cosine"),
    )
    folder, report = train_sft_policy(
        ROWS, tmp_path / "p", seed=3, recipe=recipe, on_epoch=lambda e, _: seen.append(e)
    )
    assert seen == [0, 1, 2]  # before training, then after each epoch
    assert report.steps == 6 and len(report.losses) == 6
    policy = Policy.load(folder)
    assert len(policy.tokenizer) > 256 + 60 // 2  # learnt merges were saved with the model
    assert policy.model.config.hidden_size == 16


def test_train_sft_policy_refuses_no_rows_and_unknown_preset(tmp_path: Path) -> None:
    with pytest.raises(TrainUserError, match="at least one"):
        train_sft_policy([], tmp_path / "a")
    with pytest.raises(TrainUserError, match="unknown policy preset"):
        train_sft_policy(ROWS, tmp_path / "b", recipe=SFTRecipe(preset="huge"))


def test_learnt_merges_never_fuse_a_value_with_its_context() -> None:
    tok = build_tokenizer(row_texts(ROWS), merges=400)
    for text in ('{"email": "zed99@example.com"}', "with email zed99@example.com."):
        pieces = tok.tokenize(text)
        # The address is its own run of tokens and every digit is a token of its own.
        assert "".join(p.replace("Ġ", " ") for p in pieces) == text
        assert "9" in pieces and not any(len(p) > 1 and any(c.isdigit() for c in p) for p in pieces)
        start = next(i for i, p in enumerate(pieces) if p.startswith("z") or p == "zed")
        assert "".join(pieces[start:]).startswith("zed99@example.com")
    assert tok.tokenize("customer_id=12")[-2:] == ["1", "2"]


def test_cosine_schedule_warms_up_then_decays_to_the_floor() -> None:
    config = SFTConfig(lr=1.0, warmup_steps=2, schedule="cosine", min_lr_ratio=0.1)
    scales = [lr_scale(config, s, 12) for s in range(12)]
    assert scales[:2] == [0.5, 1.0]
    assert scales[2] == pytest.approx(1.0)
    assert all(a >= b for a, b in itertools.pairwise(scales[1:]))
    assert scales[-1] == pytest.approx(0.1, abs=0.03)
    constant = SFTConfig(lr=1.0, warmup_steps=2)
    assert [lr_scale(constant, s, 12) for s in (0, 5, 11)] == [0.5, 1.0, 1.0]
