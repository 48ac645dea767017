"""The tool-calling chat template of Weft's own policies (Hermes/Qwen3 layout, no thinking).

Two properties matter for training and are tested:

* **prefix-preserving**: rendering `[..., assistant]` is a prefix of rendering
  `[..., assistant, tool, ...]`; an assistant turn renders the same whether it is the last message or
  history. So the ids a policy sampled stay the ids of the history (TITO) and OpenRLHF's multi-turn
  loss ranges (partial renders) line up (notes/sft-format.md).
* **`{% generation %}` markers** around exactly what the model emits: the assistant text, its tool
  calls and `<|im_end|>`; the role header and the newline between turns are template tokens
  and never trained. That newline opens the next turn (not closes this one), so OpenRLHF's SFT
  dataset, which trains whatever a partial render adds, trains exactly the same tokens. `return_assistant_tokens_mask=True` (TRL's `assistant_only_loss`) reads them.

Tool-call arguments given as a JSON string are written verbatim, so a call re-renders byte for byte
as the model wrote it; a dict is serialised with `tojson`. transformers renders with `trim_blocks`,
so a newline right after a block tag is written as an expression (`{{ '\\n' }}`).
"""

from __future__ import annotations

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Tool-call markers are ordinary added tokens (not special): they are part of the model's text.
TOOL_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]

TOOLS_HEADER = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
TOOLS_FOOTER = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    'arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": '
    '<function-name>, "arguments": <args-json-object>}\n</tool_call>'
)

CHAT_TEMPLATE = (
    # `ns.sep` is the newline between turns, written at the start of the *next* turn: a turn then
    # renders as `<|im_start|>role ... <|im_end|>` with nothing after it, so OpenRLHF's partial
    # renders (`render(msgs[:i+1])[len(render(msgs[:i], gen))]`) cover exactly the assistant's
    # tokens, the same ones the generation markers give.
    "{% set ns = namespace(sep='') %}"
    "{% if tools %}"
    "<|im_start|>system\n"
    "{% if messages[0].role == 'system' %}{{ messages[0].content }}\n\n{% endif %}"
    "{{ tools_header }}"
    "{% for tool in tools %}{{ '\\n' }}{{ tool | tojson }}{% endfor %}"
    "{{ tools_footer }}<|im_end|>{% set ns.sep = '\\n' %}"
    "{% elif messages[0].role == 'system' %}"
    "<|im_start|>system\n{{ messages[0].content }}<|im_end|>{% set ns.sep = '\\n' %}"
    "{% endif %}"
    "{% for message in messages %}"
    "{% if message.role == 'system' %}"
    "{% if not loop.first %}{{ ns.sep }}<|im_start|>system\n{{ message.content }}<|im_end|>"
    "{% set ns.sep = '\\n' %}{% endif %}"
    "{% elif message.role == 'user' %}"
    "{{ ns.sep }}<|im_start|>user\n{{ message.content }}<|im_end|>{% set ns.sep = '\\n' %}"
    "{% elif message.role == 'assistant' %}"
    "{{ ns.sep }}<|im_start|>assistant\n"
    "{% generation %}"
    "{% if message.content %}{{ message.content }}{% endif %}"
    "{% for call in message.tool_calls or [] %}"
    "{% set fn = call.function if call.function is defined else call %}"
    '<tool_call>\n{"name": "{{ fn.name }}", "arguments": '
    "{% if fn.arguments is string %}{{ fn.arguments }}"
    "{% else %}{{ fn.arguments | tojson }}{% endif %}"
    "}\n</tool_call>"
    "{% endfor %}"
    "<|im_end|>"
    "{% endgeneration %}{% set ns.sep = '\\n' %}"
    "{% elif message.role == 'tool' %}"
    "{{ ns.sep }}<|im_start|>tool\n<tool_response>\n{{ message.content }}\n</tool_response>"
    "<|im_end|>{% set ns.sep = '\\n' %}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ ns.sep }}<|im_start|>assistant\n{% endif %}"
)


def chat_template() -> str:
    """The template with its fixed prose inlined (HF templates cannot take extra globals)."""
    return CHAT_TEMPLATE.replace("{{ tools_header }}", _literal(TOOLS_HEADER)).replace(
        "{{ tools_footer }}", _literal(TOOLS_FOOTER)
    )


def _literal(text: str) -> str:
    # Jinja prints a quoted string expression as is; repr() quoting is valid Jinja string syntax.
    return "{{ " + repr(text) + " }}"
