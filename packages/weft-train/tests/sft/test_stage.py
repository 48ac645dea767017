"""The sft stage's sampling is resumable per task and writes TRL-readable JSONL."""

from __future__ import annotations

import pytest

from weft_core.models import ViewMode
from weft_core.testing import ScriptedChatModel
from weft_tasks.harness import ReferencePolicyModel
from weft_train.sft.data import read_sft_jsonl
from weft_train.sft.stage import sample_sft_data

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]


async def test_sampling_resumes_without_calling_the_teacher_again(megamcp, tmp_path):
    client, graph = megamcp

    def reference(g):  # type: ignore[no-untyped-def]
        return ReferencePolicyModel(graph=g, mode=ViewMode.SIMUSER)

    first = await sample_sft_data([graph], client, reference, tmp_path, reference_teacher=True)
    assert (first.tasks, first.accepted, first.resumed) == (1, 1, 0)
    assert first.reference_teacher
    rows, problems = read_sft_jsonl(first.rows_path)
    assert problems == [] and rows[0].task_id == graph.id
    # A rerun finds the task done: a teacher with an empty script would raise if it were called.
    again = await sample_sft_data([graph], client, ScriptedChatModel([]), tmp_path)
    assert (again.tasks, again.accepted, again.resumed) == (1, 1, 1)
    assert again.teacher_calls == first.teacher_calls
    # A torn last line (a crash mid-write) is ignored and that task sampled again.
    samples = tmp_path / "samples.jsonl"
    samples.write_text(samples.read_text() + '{"task_id": "x", "acc')
    third = await sample_sft_data([graph], client, ScriptedChatModel([]), tmp_path)
    assert third.accepted == 1
