"""Weft's OpenRLHF SFT export tokenized by OpenRLHF 0.11.2's own `SFTDataset` (parity venv only):
the same ids as Weft's tokenization and a loss on exactly the tokens Weft's mask trains."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from weft_core.models import SFTRow
from weft_train.policy import build_tokenizer
from weft_train.sft.data import export_openrlhf
from weft_train.sft.masks import tokenize_row

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "crm_get_customer_by_email",
            "description": "Find a customer.",
            "parameters": {"type": "object", "properties": {"email": {"type": "string"}}},
        },
    }
]


def call(i: int, email: str) -> dict[str, Any]:
    args = json.dumps({"email": email})
    return {
        "id": f"c{i}",
        "type": "function",
        "function": {"name": TOOLS[0]["function"]["name"], "arguments": args},
    }  # type: ignore[index]


def row() -> SFTRow:
    return SFTRow.model_validate(
        {
            "messages": [
                {"role": "system", "content": "Use tools."},
                {"role": "user", "content": "Find ada@example.com and bo@example.com"},
                {"role": "assistant", "tool_calls": [call(1, "ada@example.com")]},
                {"role": "tool", "tool_call_id": "c1", "content": '{"id": 1}'},
                {
                    "role": "assistant",
                    "content": "Next one.",
                    "tool_calls": [call(2, "bo@example.com")],
                },
                {"role": "tool", "tool_call_id": "c2", "content": '{"id": 2}'},
                {"role": "user", "content": "Thanks, which ids?"},
                {"role": "assistant", "content": "Ada is 1, Bo is 2."},
            ],
            "tools": TOOLS,
            "task_id": "t1",
        }
    )


@pytest.mark.parametrize("merges", [0, 300])
def test_openrlhf_sft_dataset_trains_exactly_weft_masks(tmp_path: Path, merges: int) -> None:
    from datasets import load_dataset
    from openrlhf.datasets.sft_dataset import SFTDataset

    r = row()
    corpus = [json.dumps(m.model_dump(mode="json")) for m in r.messages] * 20
    tok = build_tokenizer(corpus, merges) if merges else build_tokenizer()
    ours = tokenize_row(r, tok)
    export_openrlhf([r], tok, tmp_path / "orl")

    theirs_tok = build_tokenizer(corpus, merges) if merges else build_tokenizer()
    theirs_tok.chat_template = None  # the exported file must be what renders
    data = load_dataset("json", data_files=str(tmp_path / "orl" / "sft.jsonl"))["train"]
    args = SimpleNamespace(
        input_key="messages",
        output_key=None,
        apply_chat_template=True,
        tokenizer_chat_template=(tmp_path / "orl" / "chat_template.jinja").read_text(),
    )
    ds = SFTDataset(
        data, theirs_tok, 4096, SimpleNamespace(args=SimpleNamespace(data=args)),
        num_processors=1, multiturn=True,
    )  # fmt: skip
    ids, _, loss_mask = ds[0]
    assert ids[0].tolist() == ours.input_ids
    # OpenRLHF's loss_mask[j] trains the prediction of token j + 1.
    trained = [0, *[int(x) for x in loss_mask[0, :-1].tolist()]]
    assert trained == ours.loss_mask
    text = tok.decode([i for i, m in zip(ours.input_ids, ours.loss_mask, strict=True) if m])
    assert text.count("<|im_end|>") == 3 and "<|im_start|>" not in text and '{"id": 1}' not in text
