import json

import pytest
from langchain_core.messages import BaseMessage

from weft_core.models import FailureKind, TraceFailure
from weft_core.testing import ScriptedChatModel
from weft_train.rl.consistency import (
    ConsistencySettings,
    filter_tasks,
    pearson,
    spearman,
)
from weft_train.rl.judges import LLMRubricJudge, ProgrammaticRubricJudge

from ._fixtures import FULL, HALF, crm_task, pilots, trace

INFRA_DOWN = TraceFailure(kind=FailureKind.INFRASTRUCTURE, message="ConnectError: refused")

# One judge call at a time, so scripted replies map to pilots in order.
SETTINGS = ConsistencySettings(min_pearson=0.6, min_spearman=0.6, min_scored=4, concurrency=1)


def test_correlations() -> None:
    assert pearson([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert spearman([1, 2, 3, 4], [10, 30, 20, 400]) == pytest.approx(0.8)
    assert spearman([1, 1, 2], [1, 1, 2]) == pytest.approx(1.0)  # ties share ranks
    assert pearson([1, 1, 1], [1, 2, 3]) is None


async def test_programmatic_judge_scores_from_evidence() -> None:
    judge = ProgrammaticRubricJudge()
    task = crm_task()
    full = await judge.judge(task, trace("a", FULL, (True, True)))
    half = await judge.judge(task, trace("b", HALF, (True, False)))
    wrong_args = await judge.judge(
        task, trace("c", [("find_customer", {"email": "bob@ex.com"}, False)], (False, False))
    )
    assert full.score == 1.0
    assert half.score is not None and wrong_args.score is not None
    assert 0 < wrong_args.score < half.score < 1.0


async def test_judge_never_reads_the_checks() -> None:
    judge = ProgrammaticRubricJudge()
    t = trace("a", HALF, (True, False))
    with_checks = await judge.judge(crm_task(), t)
    other_checks = await judge.judge(
        crm_task(checks=[{"kind": "row_count", "table": "x", "value": 9}]), t
    )
    assert with_checks == other_checks


async def test_consistent_verifier_is_kept_inconsistent_dropped() -> None:
    good, bad = crm_task("good"), crm_task("bad")
    report = await filter_tasks(
        [good, bad],
        {"good": pilots(True), "bad": pilots(False)},
        ProgrammaticRubricJudge(),
        SETTINGS,
    )
    by_id = {t.task_id: t for t in report.tasks}
    assert by_id["good"].kept and by_id["good"].pearson is not None and by_id["good"].pearson > 0.6
    assert not by_id["bad"].kept and "pearson" in by_id["bad"].reason
    assert report.kept == ["good"]


async def test_thresholds_apply_to_both_correlations() -> None:
    strict = ConsistencySettings(min_pearson=0.6, min_spearman=1.01, min_scored=4)
    report = await filter_tasks(
        [crm_task("good")], {"good": pilots(True)}, ProgrammaticRubricJudge(), strict
    )
    assert not report.tasks[0].kept


async def test_constant_scores_and_missing_pilots_are_not_kept() -> None:
    all_pass = [trace(f"p{i}", FULL, (True, True)) for i in range(6)]
    report = await filter_tasks(
        [crm_task("const"), crm_task("none")],
        {"const": all_pass},
        ProgrammaticRubricJudge(),
        SETTINGS,
    )
    const, none = report.tasks
    assert not const.kept and "constant" in const.reason
    assert not none.kept and none.pilots == 0


async def test_infrastructure_failures_are_excluded_not_scored_low() -> None:
    traces = [*pilots(True), trace("x", [], (False, False), failures=[INFRA_DOWN])]
    report = await filter_tasks(
        [crm_task("good")], {"good": traces}, ProgrammaticRubricJudge(), SETTINGS
    )
    task = report.tasks[0]
    assert task.kept and task.pilots == 9 and task.scored == 8
    assert any("infrastructure" in e for e in task.judge_errors)


def _llm_verdicts(scores: list[object]) -> ScriptedChatModel:
    """A fake judge model that answers each pilot in order, like a real model would."""
    replies: list[object] = []
    for s in scores:
        if isinstance(s, str):
            replies.append(s)
        else:
            replies.append(
                "```json\n"
                + json.dumps({"score": s, "items": {}, "reasoning": "checked the ledger"})
                + "\n```"
            )
    return ScriptedChatModel(replies)  # type: ignore[arg-type]


async def test_llm_judge_agreeing_verdicts_keep_the_task() -> None:
    model = _llm_verdicts([1.0, 1.0, 0.9, 0.5, 0.5, 0.0, 1.0, 0.4])
    report = await filter_tasks(
        [crm_task("good")], {"good": pilots(True)}, LLMRubricJudge(model), SETTINGS
    )
    assert report.tasks[0].kept and report.judge == "llm"
    prompt: list[BaseMessage] = model.prompts[0]  # type: ignore[attr-defined]
    text = "\n".join(str(m.content) for m in prompt)
    assert "update_tier" in text and "ann@ex.com" in text and "field_equals" not in text


async def test_llm_judge_wrong_verdicts_drop_the_task() -> None:
    # The model is confidently wrong: it rewards the empty rollouts and penalises complete ones.
    model = _llm_verdicts([0.0, 0.1, 0.0, 0.9, 1.0, 1.0, 0.2, 0.8])
    report = await filter_tasks(
        [crm_task("good")], {"good": pilots(True)}, LLMRubricJudge(model), SETTINGS
    )
    assert not report.tasks[0].kept


async def test_llm_judge_unusable_replies_are_reported_and_the_batch_goes_on() -> None:
    model = _llm_verdicts(["I think it went well!", 1.7, 1.0, 0.5, 0.5, 0.0, 1.0, 0.4])
    report = await filter_tasks(
        [crm_task("good")], {"good": pilots(True)}, LLMRubricJudge(model), SETTINGS
    )
    task = report.tasks[0]
    assert task.scored == 6 and len(task.judge_errors) == 2
    assert all("judge reply unusable" in e for e in task.judge_errors)


def test_report_saves_atomically(tmp_path: object) -> None:
    from pathlib import Path

    from weft_train.rl.consistency import ConsistencyReport, decide

    rep = ConsistencyReport(
        judge="programmatic", settings={}, tasks=[decide("t", 2, [(1, 1), (0, 0)], [], SETTINGS)]
    )
    out = Path(str(tmp_path)) / "consistency.json"
    rep.save(out)
    assert json.loads(out.read_text())["tasks"][0]["task_id"] == "t"
