"""Tokenise an SFT row with its loss mask: 1 exactly on the tokens the assistant wrote (its text, its
tool calls and its end-of-turn token), 0 on prompts, tool observations and template tokens. The
mask comes from the template's `{% generation %}` markers, so it is the same one TRL's
`assistant_only_loss` uses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from weft_core.models import SFTRow
from weft_train.errors import TrainUserError


@dataclass(frozen=True)
class TokenizedRow:
    input_ids: list[int]  # (T,)
    loss_mask: list[int]  # (T,) 1 on assistant-written tokens


def row_messages(row: SFTRow) -> list[dict[str, Any]]:
    return [
        m.model_dump(mode="json", exclude_none=True, exclude={"token_ids", "logprobs"})
        for m in row.messages
    ]


def tokenize_row(row: SFTRow, tokenizer: Any, max_length: int | None = None) -> TokenizedRow:
    out = tokenizer.apply_chat_template(
        row_messages(row),
        tools=row.tools or None,
        tokenize=True,
        return_dict=True,
        return_assistant_tokens_mask=True,
    )
    ids = [int(i) for i in out["input_ids"]]
    mask = [int(m) for m in out["assistant_masks"]]
    if not any(mask) and any(m.role == "assistant" for m in row.messages):
        raise TrainUserError(
            f"row {row.trace_id or row.task_id}: the chat template marks no assistant tokens "
            "(it needs {% generation %} markers)"
        )
    if max_length is not None:
        ids, mask = ids[:max_length], mask[:max_length]
    return TokenizedRow(input_ids=ids, loss_mask=mask)
