"""The `sft` stage of `weft run`: sample SFT data from composed tasks (prefix-preserving rejection
sampling), write it as neutral JSONL, and optionally fine-tune a local policy on it.

Resumable like the rollout stage: each task's sampling outcome is appended to `samples.jsonl` as soon
as it is known, and a rerun samples only the tasks not there yet (a torn last line is sampled again).
With no model configured the teacher is the reference policy, which reads the answer key; the stage
then says so (`reference_teacher`), since its acceptance rate holds by construction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from weft_core.models import SFTRow, TaskGraph
from weft_train.sft.data import write_sft_jsonl
from weft_train.sft.sampling import SamplingConfig, SamplingService, sample_trajectory

TeacherFactory = Callable[[TaskGraph], BaseChatModel]


class SampleRecord(BaseModel):
    """One task's line in samples.jsonl."""

    task_id: str
    accepted: bool
    attempts: int
    teacher_calls: int
    tokens: int
    rejected_at: str | None = None
    row: SFTRow | None = None


class SFTStageResult(BaseModel):
    tasks: int
    accepted: int
    teacher_calls: int
    tokens: int
    resumed: int = Field(description="Tasks whose outcome an earlier run had already recorded.")
    rows_path: str
    reference_teacher: bool
    trained_model: str | None = None


def _load(path: Path) -> dict[str, SampleRecord]:
    done: dict[str, SampleRecord] = {}
    if not path.exists():
        return done
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = SampleRecord.model_validate_json(line)
        except ValueError:
            continue  # a line torn by a crash: that task is sampled again
        done[rec.task_id] = rec
    return done


async def sample_sft_data(
    graphs: Sequence[TaskGraph],
    service: SamplingService,
    teacher: BaseChatModel | TeacherFactory,
    out_dir: Path,
    config: SamplingConfig | None = None,
    *,
    reference_teacher: bool = False,
) -> SFTStageResult:
    out_dir.mkdir(parents=True, exist_ok=True)
    samples = out_dir / "samples.jsonl"
    done = _load(samples)
    resumed = sum(1 for g in graphs if g.id in done)
    with samples.open("a", encoding="utf-8") as sink:
        for i, g in enumerate(graphs):
            if g.id in done:
                continue
            model = teacher if isinstance(teacher, BaseChatModel) else teacher(g)
            got = await sample_trajectory(g, service, model, config, seed=i)
            rec = SampleRecord(
                task_id=g.id,
                accepted=got.accepted,
                attempts=got.attempts,
                teacher_calls=got.teacher_calls,
                tokens=got.tokens,
                rejected_at=got.rejected_at,
                row=got.sft_row() if got.accepted else None,
            )
            sink.write(rec.model_dump_json() + "\n")
            sink.flush()
            done[g.id] = rec
    records = [done[g.id] for g in graphs if g.id in done]
    rows = [r.row for r in records if r.row is not None]
    path = out_dir / "sft.jsonl"
    write_sft_jsonl(rows, path)
    return SFTStageResult(
        tasks=len(records),
        accepted=len(rows),
        teacher_calls=sum(r.teacher_calls for r in records),
        tokens=sum(r.tokens for r in records),
        resumed=resumed,
        rows_path=str(path),
        reference_teacher=reference_teacher,
    )


def train_on_rows(rows_path: Path, policy_dir: Path, out_dir: Path, epochs: int, lr: float) -> str:
    """Fine-tune the policy in `policy_dir` on the JSONL rows; returns the trained folder."""
    from weft_train.policy import Policy
    from weft_train.sft.data import read_sft_jsonl
    from weft_train.sft.trainer import SFTConfig, train_sft

    rows, _ = read_sft_jsonl(rows_path)
    policy = Policy.load(policy_dir)
    train_sft(policy, rows, SFTConfig(epochs=epochs, lr=lr), out_dir=out_dir)
    return str(out_dir)
