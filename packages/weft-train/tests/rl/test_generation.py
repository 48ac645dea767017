import asyncio

import pytest
import torch

from weft_train.policy import SamplingParams, build_model, build_tokenizer
from weft_train.rl.generation import HFTokenGenerator
from weft_train.rl.loss import tis_weights, token_logprobs
from weft_train.rl.template import HermesTemplate


def test_hf_generation_logprobs_match_the_training_forward() -> None:
    tok = build_tokenizer()
    model = build_model(len(tok), seed=1)
    tpl = HermesTemplate(tok)
    end = tok.convert_tokens_to_ids("<|im_end|>")
    gen = HFTokenGenerator(model, stop_ids=[end], pad_id=tok.pad_token_id)
    prompts = [tpl.prompt("sys", "Add 3 units to B7."), tpl.prompt("s", "Hi")]
    outs = asyncio.run(gen.generate(prompts, SamplingParams(max_tokens=12, temperature=0.8)))
    for prompt, out in zip(prompts, outs, strict=True):
        assert len(out.token_ids) == len(out.logprobs) <= 12
        assert out.finish_reason == ("stop" if out.token_ids[-1] == end else "length")
        ids = torch.tensor([prompt + out.token_ids])
        with torch.no_grad():
            lp, _ = token_logprobs(model(input_ids=ids).logits, ids, temperature=0.8)
        train = lp[0, len(prompt) - 1 :]
        rollout = torch.tensor(out.logprobs)
        assert train.tolist() == pytest.approx(rollout.tolist(), abs=1e-4)
        keep, _ = tis_weights(train, rollout)
        assert bool(keep.all())


def test_template_parse_reports_malformed_calls() -> None:
    tok = build_tokenizer()
    tpl = HermesTemplate(tok)
    good = tpl.parse(
        tok.encode(
            '<tool_call>{"name":"st_add","arguments":{"sku":"B7","qty":3}}</tool_call><|im_end|>',
            add_special_tokens=False,
        )
    )
    assert good.calls[0].name == "st_add" and good.calls[0].arguments == {"sku": "B7", "qty": 3}
    assert not good.parse_errors and not good.text.endswith("<|im_end|>")
    bad = tpl.parse(
        tok.encode(
            '<tool_call>{"name":"st_add", "arguments": {</tool_call>', add_special_tokens=False
        )
    )
    assert not bad.calls and "not JSON" in bad.parse_errors[0]
    unclosed = tpl.parse(tok.encode('<tool_call>{"name":"x"}', add_special_tokens=False))
    assert unclosed.parse_errors
    # deltas are rendered on their own, never by re-rendering the history
    delta = tpl.observation_delta(['{"qty": 4}'])
    assert tpl.decode(delta).startswith("\n<|im_start|>tool\n<tool_response>")
    assert tpl.decode(delta).endswith("<|im_start|>assistant\n")
