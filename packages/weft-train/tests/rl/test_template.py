"""The RL turn template renders from the policy's own chat template: the ids a rollout assembles
(prompt, sampled ids, observation and user deltas) are the ids the policy's template gives the
same conversation, so RL observes `tool` turns exactly as SFT trained and the server serves."""

from __future__ import annotations

import pytest

from weft_train.errors import TrainUserError
from weft_train.policy import Policy, build_model, build_tokenizer
from weft_train.rl.template import HermesTemplate

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "st_add",
            "description": "Add units of a SKU.",
            "parameters": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
            },
        },
    }
]
CALL = '{"sku": "B7", "qty": 3}'


def test_rollout_ids_equal_the_policy_template_render() -> None:
    tok = build_tokenizer()
    policy = Policy(build_model(len(tok), seed=0), tok)
    tpl = HermesTemplate(tok, tools=TOOLS)
    assistant = f'<tool_call>\n{{"name": "st_add", "arguments": {CALL}}}\n</tool_call><|im_end|>'
    history = tpl.prompt("Stock clerk.", "Add 3 units to B7.")
    history += tpl.encode(assistant)
    obs = tpl.observation_delta(['{"qty": 8}', "Error: B8 unknown"])
    history += obs
    history += tpl.encode("Done.<|im_end|>")
    history += tpl.user_delta("Now remove 1 from A1.")
    messages = [
        {"role": "system", "content": "Stock clerk."},
        {"role": "user", "content": "Add 3 units to B7."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": "st_add", "arguments": CALL}}],
        },
        {"role": "tool", "content": '{"qty": 8}'},
        {"role": "tool", "content": "Error: B8 unknown"},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "Now remove 1 from A1."},
    ]
    assert history == policy.render(messages, TOOLS)
    text = tpl.decode(obs)
    assert text.count("<|im_start|>tool\n<tool_response>") == 2 and "<|im_start|>user" not in text


def test_deltas_equal_the_template_suffix_with_learnt_merges() -> None:
    # merges learnt across word boundaries: a delta must still be the render's own suffix ids
    corpus = ['<tool_response>\n{"qty": 8}\n</tool_response> user\nNow remove 1 from A1.'] * 50
    tok = build_tokenizer(corpus, merges=120)
    tpl = HermesTemplate(tok)
    base = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "U"},
        {"role": "assistant", "content": "A"},
    ]
    before = tok.apply_chat_template(base, tokenize=True, return_dict=False)
    for tail, delta in (
        ([{"role": "tool", "content": '{"qty": 8}'}], tpl.observation_delta(['{"qty": 8}'])),
        (
            [{"role": "user", "content": "Now remove 1 from A1."}],
            tpl.user_delta("Now remove 1 from A1."),
        ),
    ):
        after = tok.apply_chat_template(
            base + tail, tokenize=True, return_dict=False, add_generation_prompt=True
        )
        assert list(after[: len(before)]) == list(before)
        assert delta == list(after[len(before) :])


def test_a_template_that_is_not_prefix_preserving_is_refused() -> None:
    tok = build_tokenizer()
    # re-renders the last assistant turn differently from history (as a thinking template does)
    tok.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
        "{% if loop.last %}!{% endif %}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    with pytest.raises(TrainUserError, match="not prefix-preserving"):
        HermesTemplate(tok).observation_delta(["x"])
