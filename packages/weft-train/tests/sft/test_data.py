"""SFT rows on disk, loss masks, the OpenRLHF export and the CPU trainer."""

from __future__ import annotations

import json

import pytest

from weft_core.models import SFTRow
from weft_train.policy import Policy, SamplingParams, build_tokenizer, parse_reply
from weft_train.sft.data import (
    export_openrlhf,
    fold_tools_into_system,
    read_sft_jsonl,
    write_sft_jsonl,
)
from weft_train.sft.masks import tokenize_row
from weft_train.sft.trainer import SFTConfig, train_sft

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


def _row() -> SFTRow:
    return SFTRow.model_validate(
        {
            "messages": [
                {"role": "system", "content": "Use tools."},
                {"role": "user", "content": "Find ada@example.com"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {
                                "name": "crm_get_customer_by_email",
                                "arguments": '{"email": "ada@example.com"}',
                            },
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": '{"id": 1, "tier": "gold"}'},
                {"role": "assistant", "content": "Ada is customer 1."},
            ],
            "tools": TOOLS,
            "task_id": "t1",
            "trace_id": "r1",
        }
    )


def _ids(tok, msgs, tools=TOOLS, **kw):  # type: ignore[no-untyped-def]
    return tok.apply_chat_template(msgs, tools=tools, return_dict=True, **kw)["input_ids"]


def test_jsonl_round_trip_keeps_argument_strings_and_reports_bad_lines(tmp_path):
    path = tmp_path / "sft.jsonl"
    assert write_sft_jsonl([_row(), _row()], path) == 2
    first = json.loads(path.read_text().splitlines()[0])
    assert isinstance(first["tools"], str)  # one Arrow type for every row
    call = first["messages"][2]["tool_calls"][0]["function"]
    assert call["arguments"] == '{"email": "ada@example.com"}'
    with path.open("a") as f:
        f.write("{broken\n")
        f.write(json.dumps({"messages": [{"role": "wizard", "content": "x"}]}) + "\n")
    rows, problems = read_sft_jsonl(path)
    assert len(rows) == 2 and rows[0].messages == _row().messages and rows[0].tools == TOOLS
    assert len(problems) == 2
    assert problems[0].startswith(f"{path}:3: not an SFT row")
    assert problems[1].startswith(f"{path}:4: messages.0.role")


def test_loss_mask_covers_exactly_the_assistant_tokens():
    tok = build_tokenizer()
    row = _row()
    t = tokenize_row(row, tok)
    trained = tok.decode([i for i, m in zip(t.input_ids, t.loss_mask, strict=True) if m])
    assert trained == (
        '<tool_call>\n{"name": "crm_get_customer_by_email", "arguments": '
        '{"email": "ada@example.com"}}\n</tool_call><|im_end|>Ada is customer 1.<|im_end|>'
    )
    # The same spans by OpenRLHF's method (what a partial render adds), with nothing left over:
    # the newline between turns opens the next turn.
    msgs = [m.model_dump(exclude_none=True) for m in row.messages]
    expected = [0] * len(t.input_ids)
    for i, m in enumerate(msgs):
        if m["role"] != "assistant":
            continue
        prompt = _ids(tok, msgs[:i], add_generation_prompt=True)
        upto = _ids(tok, msgs[: i + 1])
        assert upto[: len(prompt)] == prompt and tok.decode(upto[-1:]) == "<|im_end|>"
        expected[len(prompt) : len(upto)] = [1] * (len(upto) - len(prompt))
    assert t.loss_mask == expected


def test_openrlhf_export_folds_tools_into_the_system_message(tmp_path):
    tok = build_tokenizer()
    row = _row()
    folded = fold_tools_into_system(row, tok)
    assert "<tools>" in folded[0]["content"] and "crm_get_customer_by_email" in folded[0]["content"]
    # Rendering the folded messages WITHOUT tools (what OpenRLHF does) gives the same ids.
    plain = [m.model_dump(exclude_none=True) for m in row.messages]
    assert _ids(tok, folded, tools=None) == _ids(tok, plain)
    script = export_openrlhf([row], tok, tmp_path / "orl", model_path="/models/policy")
    text = script.read_text()
    assert "openrlhf.cli.train_sft" in text and "--data.multiturn" in text
    assert "--data.tokenizer_chat_template" in text
    assert (tmp_path / "orl" / "chat_template.jinja").read_text() == tok.chat_template
    line = json.loads((tmp_path / "orl" / "sft.jsonl").read_text())
    assert set(line) == {"messages"}


def test_trainer_teaches_a_tiny_policy_to_make_the_call(tiny_policy_dir, tmp_path):
    policy = Policy.load(tiny_policy_dir)
    row = _row()
    prompt = policy.render([m.model_dump(exclude_none=True) for m in row.messages[:2]], TOOLS)
    report = train_sft(
        policy,
        [row],
        SFTConfig(lr=1e-2, epochs=100, batch_size=1, warmup_steps=5),
        out_dir=tmp_path / "trained",
    )
    assert report.target_tokens == sum(tokenize_row(row, policy.tokenizer).loss_mask)
    assert report.losses[-1] < 0.2 * report.losses[0]
    again = Policy.load(tmp_path / "trained")
    gen = again.sample(prompt, SamplingParams(temperature=0, max_tokens=96))
    reply = parse_reply(gen.text)
    assert [(c.name, json.loads(c.arguments)) for c in reply.calls] == [
        ("crm_get_customer_by_email", {"email": "ada@example.com"})
    ]


def test_trainer_refuses_no_rows(tiny_policy):
    from weft_train.errors import TrainUserError

    with pytest.raises(TrainUserError, match="at least one row"):
        train_sft(tiny_policy, [])
