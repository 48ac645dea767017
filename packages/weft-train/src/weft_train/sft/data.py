"""SFT data on disk (notes/sft-format.md).

* **Neutral JSONL** (`write_sft_jsonl`): one row per accepted trajectory, `messages` in OpenAI form with
  tool-call `arguments` as JSON strings and `tools` as a JSON string (Arrow unifies struct columns
  across rows, and per-tool dict shapes would widen or null-fill them), plus `task_id`, `trace_id`,
  `content_hash`. TRL's SFTTrainer reads it as is (it `json.loads` a string `tools`).
* **OpenRLHF flavour** (`export_openrlhf`): OpenRLHF 0.11.2's SFT dataset never passes `tools` to
  the chat template, so the tool block is rendered by the target tokenizer and folded into the system
  message; the prefix-preserving template goes to `--data.tokenizer_chat_template`. A `train_sft.sh`
  with the matching flags is written next to the data.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from weft_core.models import SFTRow, atomic_write_text
from weft_train.errors import TrainUserError


def row_dict(row: SFTRow) -> dict[str, Any]:
    """The neutral on-disk form of one row."""
    return {
        "messages": [
            m.model_dump(mode="json", exclude_none=True, exclude={"token_ids", "logprobs"})
            for m in row.messages
        ],
        "tools": json.dumps(row.tools),
        "task_id": row.task_id,
        "trace_id": row.trace_id,
        "content_hash": row.content_hash,
    }


def write_sft_jsonl(rows: Iterable[SFTRow], path: str | Path) -> int:
    """Write rows atomically; returns how many."""
    lines = [json.dumps(row_dict(r), ensure_ascii=False) for r in rows]
    atomic_write_text(Path(path), "".join(line + "\n" for line in lines))
    return len(lines)


def read_sft_jsonl(path: str | Path) -> tuple[list[SFTRow], list[str]]:
    """(rows, problems): a malformed line is reported as `FILE:LINE: why` and skipped."""
    rows: list[SFTRow] = []
    problems: list[str] = []
    p = Path(path)
    if not p.is_file():
        raise TrainUserError(f"{p}: no such SFT data file")
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            tools = data.get("tools") or []
            rows.append(
                SFTRow(
                    messages=data["messages"],
                    tools=json.loads(tools) if isinstance(tools, str) else tools,
                    task_id=data.get("task_id"),
                    trace_id=data.get("trace_id"),
                )
            )
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
            problems.append(f"{p}:{n}: not an SFT row ({type(exc).__name__}: {exc})")
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(x) for x in first["loc"])
            problems.append(f"{p}:{n}: {loc}: {first['msg']}")
    return rows, problems


def fold_tools_into_system(row: SFTRow, tokenizer: Any) -> list[dict[str, Any]]:
    """The row's messages with the tool block rendered into the system message (OpenRLHF)."""
    messages = [
        m.model_dump(mode="json", exclude_none=True, exclude={"token_ids", "logprobs"})
        for m in row.messages
    ]
    if not row.tools:
        return messages
    system = messages[0] if messages and messages[0]["role"] == "system" else None
    head = [system] if system else []
    rendered = tokenizer.apply_chat_template(head, tools=row.tools, tokenize=False)
    start, end = "<|im_start|>system\n", "<|im_end|>"
    if not rendered.startswith(start) or end not in rendered:
        raise TrainUserError("the tokenizer's template does not render tools into a system turn")
    body = rendered[len(start) : rendered.index(end)]
    folded = {"role": "system", "content": body}
    return [folded, *messages[1:]] if system else [folded, *messages]


def export_openrlhf(
    rows: Iterable[SFTRow], tokenizer: Any, out_dir: str | Path, *, model_path: str = "MODEL"
) -> Path:
    """Write `sft.jsonl`, `chat_template.jinja` and `train_sft.sh` for OpenRLHF 0.11.2's
    `openrlhf.cli.train_sft` into `out_dir`; returns the script path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps({"messages": fold_tools_into_system(r, tokenizer)}, ensure_ascii=False)
        for r in rows
    ]
    atomic_write_text(out / "sft.jsonl", "".join(line + "\n" for line in lines))
    atomic_write_text(out / "chat_template.jinja", str(tokenizer.chat_template))
    flags = [
        "--model.model_name_or_path", model_path,
        "--data.dataset", str(out / "sft.jsonl"),
        "--data.input_key", "messages",
        "--data.apply_chat_template",
        "--data.multiturn",
        "--data.max_len", "8192",
        "--train.batch_size", "64",
        "--train.micro_batch_size", "2",
        "--train.max_epochs", "2",
        "--adam.lr", "1e-5",
        "--ds.zero_stage", "2",
        "--ds.param_dtype", "bf16",
        "--ckpt.output_dir", str(out / "ckpt"),
        "--ckpt.save_hf",
    ]  # fmt: skip
    script = "\n".join(
        [
            "#!/usr/bin/env bash",
            "# OpenRLHF 0.11.2 SFT on Weft data (GPU). Tools are already folded into the system",
            "# message; the template is Weft's prefix-preserving one, so the per-message loss",
            "# ranges OpenRLHF computes from partial renders line up (notes/sft-format.md).",
            "set -euo pipefail",
            'HERE="$(cd "$(dirname "$0")" && pwd)"',
            "deepspeed --module openrlhf.cli.train_sft \\",
            "  " + " ".join(shlex.quote(f) for f in flags) + " \\",
            '  --data.tokenizer_chat_template "$(cat "$HERE/chat_template.jinja")" "$@"',
            "",
        ]
    )
    path = out / "train_sft.sh"
    atomic_write_text(path, script)
    path.chmod(0o755)
    return path
