import json
from pathlib import Path

from weft_train.rl.curves import plot_curves, save_curves


def test_curves_written_as_data_and_png(tmp_path: Path) -> None:
    rows = [
        {"rollout_tokens": 0, "heldout_pass_rate": 0.2},
        {"rollout_tokens": 500, "reward": 0.4, "entropy": 1.2, "kl": 0.0},
        {
            "rollout_tokens": 1000,
            "reward": 0.5,
            "entropy": 1.1,
            "kl": 0.01,
            "heldout_pass_rate": 0.3,
        },
    ]
    data = save_curves(tmp_path / "curves.json", rows)
    assert json.loads(data.read_text())[2]["kl"] == 0.01
    png = plot_curves(tmp_path / "curves.png", {"atomic_turn s0": rows, "trajectory s0": rows[:2]})
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
