"""A byte-level BPE tokenizer built locally with the `tokenizers` library (no download).

The base vocabulary is the 256 byte symbols of GPT-2's byte-level alphabet, so every string encodes;
`merges` optionally learnt from a corpus shorten sequences. Learnt merges may cross word boundaries
(no regex pre-split): a tool block or system prompt repeated in every row then becomes a handful of
tokens, which is what lets a CPU train on whole trajectories. Values a policy must copy are kept
out of those merges: digits are always single tokens (as in Qwen's tokenizer) and an email address
is its own pre-token, so an id or an address tokenises the same in a request, a tool result and a
call, and a held-out customer's id is made of the digit tokens training saw. Special and tool tokens still split
the text, and a turn's role header is its own pre-token, so a message's tokens never depend on its
neighbours and the generation prompt's tokens are a prefix of every rendered reply. Special tokens follow Qwen's names
so the same template shape works for both.
"""

from __future__ import annotations

from collections.abc import Iterable

from tokenizers import (
    AddedToken,
    Regex,
    Tokenizer,
    decoders,
    models,
    pre_tokenizers,
    trainers,
)
from transformers import PreTrainedTokenizerFast

from weft_train.policy.template import SPECIAL_TOKENS, TOOL_TOKENS, chat_template

# An email address is one pre-token: merges may shorten it but never fuse it with the text around
# it (`{"email": "` + the address's first letters was a learnt token before this).
EMAIL = r"[\w.%+-]+@[\w.-]+[A-Za-z]"
# A turn's role header (`assistant\n` after `<|im_start|>`) is one pre-token: the generation prompt
# ends with it, so a merge fusing it with a reply's first word (`\nDone`) would give training a token
# sequence the policy can never produce after the prompt it is served (it then always opened a
# `<tool_call>`, the only reply start left unfused).
ROLE_HEADER = r"\A(?:system|user|assistant|tool)\n"


def build_tokenizer(
    corpus: Iterable[str] | None = None, merges: int = 0
) -> PreTrainedTokenizerFast:
    """A byte-level tokenizer with the chat template; `merges` BPE merges learnt from `corpus`."""
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    if corpus is not None and merges > 0:
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(ROLE_HEADER), "isolated"),
                pre_tokenizers.Split(Regex(EMAIL), "isolated"),
                pre_tokenizers.Digits(individual_digits=True),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
        trainer = trainers.BpeTrainer(
            vocab_size=len(alphabet) + len(SPECIAL_TOKENS) + merges,
            initial_alphabet=alphabet,
            special_tokens=SPECIAL_TOKENS,
            show_progress=False,
            max_token_length=64,
        )
        tok.train_from_iterator(corpus, trainer=trainer)
    else:
        vocab = {c: i for i, c in enumerate(alphabet)}
        tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        tok.add_special_tokens(
            [AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS]
        )
    tok.decoder = decoders.ByteLevel()
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in TOOL_TOKENS])
    fast = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
        unk_token=None,
    )
    fast.chat_template = chat_template()
    return fast
