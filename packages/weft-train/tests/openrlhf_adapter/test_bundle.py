from weft_train.openrlhf import ATOMIC_GROUPS, bundle, credit_flags, unbundle
from weft_train.rl.batch import collate
from weft_train.rl.credit import CreditFlag
from weft_train.rl.samples import ActionSpan, TurnSample

FLAG = frozenset({CreditFlag.MALFORMED_TOOL_CALL})


def groups() -> list[list[TurnSample]]:
    def s(turn: int, g: int, reward: float, flagged: bool) -> TurnSample:
        ids = list(range(1, 9 + turn * 4))
        spans = [ActionSpan(3, 5, FLAG if flagged else frozenset()), ActionSpan(6, 8)]
        lps = [0.0] * len(ids)
        lps[3:5], lps[6:8] = [-0.5, -0.6], [-0.7, -0.8]
        return TurnSample("task", turn, g, ids, spans, lps, reward, complete=g != 2)

    return [[s(0, 0, 1.0, True), s(0, 1, 0.0, False)], [s(1, 0, 0.0, False), s(1, 1, 1.0, False)]]


def test_bundle_holds_every_candidate_contiguously() -> None:
    b = bundle(groups(), "p", "task")
    assert len(b[ATOMIC_GROUPS]) == 2 and [len(g) for g in b[ATOMIC_GROUPS]] == [2, 2]
    assert b["observation_tokens"] == b[ATOMIC_GROUPS][0][0]["observation_tokens"]
    flat = [c for g in unbundle(b) for c in g]
    assert [c["reward"] for c in flat] == [1.0, 0.0, 0.0, 1.0]
    assert all(set(c["extra_logs"]) == {"turn", "flagged_messages"} for c in flat)
    assert unbundle({"observation_tokens": [1]}) == [[{"observation_tokens": [1]}]]


def test_bundle_masks_match_the_plain_torch_batch() -> None:
    gs = groups()
    flat_samples = [s for g in gs for s in g]
    batch = collate(flat_samples, [0.0] * 4, pad_id=0)
    for i, cand in enumerate(c for g in unbundle(bundle(gs, "p", "task")) for c in g):
        n = len(cand["observation_tokens"])
        assert credit_flags(cand, n) == batch.credit_mask[i, : n - 1].tolist()
        action = [0] * n
        for s, e in cand["action_ranges"]:
            action[s:e] = [1] * (e - s)
        assert action[1:] == batch.action_mask[i, : n - 1].tolist()
