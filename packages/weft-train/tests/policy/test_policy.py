from __future__ import annotations

import json

import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from weft_train.errors import TrainUserError
from weft_train.policy import (
    Policy,
    SamplingParams,
    TokenGenerator,
    build_tokenizer,
    parameter_count,
    parse_reply,
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "crm__get_customer",
            "description": "Find a customer by email.",
            "parameters": {"type": "object", "properties": {"email": {"type": "string"}}},
        },
    }
]
CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Find ada@example.com"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {
                    "name": "crm__get_customer",
                    "arguments": '{"email":  "ada@example.com"}',
                },
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": '{"id": 7}'},
    {"role": "assistant", "content": "Found customer 7."},
    {"role": "user", "content": "Thanks"},
    {"role": "assistant", "content": "You are welcome."},
]


def test_loads_with_auto_classes_like_a_downloaded_checkpoint(tiny_policy_dir):
    model = AutoModelForCausalLM.from_pretrained(tiny_policy_dir)
    tok = AutoTokenizer.from_pretrained(tiny_policy_dir)
    assert type(model).__name__ == "Qwen3ForCausalLM"
    assert 5_000 < parameter_count(model) < 100_000
    assert tok.eos_token == "<|im_end|>"
    text = 'naïve 東京 {"a": 1}'
    assert tok.decode(tok(text)["input_ids"]) == text  # byte-level: every string round-trips


@pytest.mark.parametrize("merges", [0, 64])
def test_template_is_prefix_preserving(merges):
    tok = build_tokenizer([json.dumps(CONVERSATION)] * 4, merges) if merges else build_tokenizer()
    full = tok.apply_chat_template(CONVERSATION, tools=TOOLS, tokenize=False)
    for i, message in enumerate(CONVERSATION, start=1):
        assert full.startswith(
            tok.apply_chat_template(CONVERSATION[:i], tools=TOOLS, tokenize=False)
        )
        if message["role"] == "assistant":
            prompt = tok.apply_chat_template(
                CONVERSATION[: i - 1], tools=TOOLS, tokenize=False, add_generation_prompt=True
            )
            assert full.startswith(prompt)
    # Arguments given as a string are written verbatim (odd spacing kept).
    assert '"arguments": {"email":  "ada@example.com"}}' in full


def test_generation_prompt_tokens_are_a_prefix_of_the_reply_turn():
    """A served or rolled-out policy generates right after the generation prompt's tokens, so
    training must see those same tokens before every reply: merges learnt from rows whose replies
    start alike may not fuse the role header with a reply's first word."""
    rows = [
        [*CONVERSATION[:4], {"role": "assistant", "content": f"Done: found customer {i}."}]
        for i in range(8)
    ]
    plain = build_tokenizer()
    tok = build_tokenizer(
        [plain.apply_chat_template(r, tools=TOOLS, tokenize=False) for r in rows], 300
    )

    def ids(messages: list[dict], generation_prompt: bool = False) -> list[int]:
        text = tok.apply_chat_template(
            messages, tools=TOOLS, tokenize=False, add_generation_prompt=generation_prompt
        )
        return tok.encode(text, add_special_tokens=False)

    for row in rows:
        full = ids(row)
        for i, message in enumerate(row):
            if message["role"] == "assistant":
                prompt = ids(row[:i], generation_prompt=True)
                assert full[: len(prompt)] == prompt, tok.convert_ids_to_tokens(
                    full[len(prompt) - 2 : len(prompt) + 1]
                )


def test_generation_markers_cover_exactly_what_the_model_writes():
    tok = build_tokenizer()
    out = tok.apply_chat_template(
        CONVERSATION, tools=TOOLS, return_dict=True, return_assistant_tokens_mask=True
    )
    ids, mask = out["input_ids"], out["assistant_masks"]
    trained = tok.decode([i for i, m in zip(ids, mask, strict=True) if m])
    assert trained == (
        '<tool_call>\n{"name": "crm__get_customer", "arguments": {"email":  "ada@example.com"}}'
        "\n</tool_call><|im_end|>Found customer 7.<|im_end|>You are welcome.<|im_end|>"
    )


def test_generate_logprobs_equal_a_forward_pass(tiny_policy):
    assert isinstance(tiny_policy, TokenGenerator)
    prompt = tiny_policy.render(CONVERSATION[:2], TOOLS)
    for temperature in (1.0, 0.7):
        gen = tiny_policy.sample(
            prompt, SamplingParams(temperature=temperature, max_tokens=24, seed=3)
        )
        assert len(gen.token_ids) == len(gen.logprobs) == 24 or gen.finish_reason == "stop"
        scored = tiny_policy.score(prompt, gen.token_ids, temperature)
        assert max(abs(a - b) for a, b in zip(scored, gen.logprobs, strict=True)) < 1e-5


def test_seeded_sampling_is_reproducible_and_unseeded_varies(tiny_policy):
    prompt = tiny_policy.render(CONVERSATION[:2], TOOLS)
    a = tiny_policy.sample(prompt, SamplingParams(max_tokens=16, seed=5))
    b = tiny_policy.sample(prompt, SamplingParams(max_tokens=16, seed=5))
    c = tiny_policy.sample(prompt, SamplingParams(max_tokens=16, seed=6))
    assert a.token_ids == b.token_ids
    assert a.token_ids != c.token_ids


def test_policy_is_the_batched_token_generator(tiny_policy):
    """One protocol: a batch through `generate` is `sample` row by row, seed + i per row."""
    import asyncio

    from weft_train.rl.generation import HFTokenGenerator

    assert isinstance(HFTokenGenerator(tiny_policy.model, stop_ids=[0], pad_id=0), TokenGenerator)
    prompt = tiny_policy.render(CONVERSATION[:2], TOOLS)
    params = SamplingParams(max_tokens=12, seed=11)
    rows = asyncio.run(tiny_policy.generate([prompt, prompt], params))
    assert [r.token_ids for r in rows] == [
        tiny_policy.sample(prompt, params.model_copy(update={"seed": 11 + i})).token_ids
        for i in range(2)
    ]
    assert rows[0].token_ids != rows[1].token_ids


def test_overlong_prompt_is_a_user_error(tiny_policy):
    with pytest.raises(TrainUserError, match="does not fit"):
        tiny_policy.sample([1] * (tiny_policy.max_length + 1), SamplingParams())


def test_load_refuses_a_folder_without_a_model(tmp_path):
    with pytest.raises(TrainUserError, match=r"no config\.json"):
        Policy.load(tmp_path)


def test_parse_reply_keeps_arguments_verbatim():
    text = (
        'Looking.<tool_call>\n{"name": "a", "arguments": {"x":  [1, 2]}}\n</tool_call>'
        '<tool_call>\n{"name": "b", "arguments": {}}\n</tool_call><|im_end|>'
    )
    reply = parse_reply(text)
    assert reply.content == "Looking."
    assert [(c.name, c.arguments) for c in reply.calls] == [("a", '{"x":  [1, 2]}'), ("b", "{}")]
    bad = parse_reply('<tool_call>\n{"name": 3}\n</tool_call><|im_end|>')
    assert bad.calls == [] and bad.content == '<tool_call>\n{"name": 3}\n</tool_call>'
    assert parse_reply("<|im_end|>").content is None
