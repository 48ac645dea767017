from __future__ import annotations

from pathlib import Path

import pytest

from weft_tasks.compose.profiles import DEFAULT_PROFILES, largest_remainder, load_profiles
from weft_tasks.exceptions import ProfileError


def test_largest_remainder_sums_exactly_and_breaks_ties_stably() -> None:
    assert largest_remainder(7, DEFAULT_PROFILES.targets) == {
        "Simple": 2,
        "Standard": 2,
        "Moderate": 1,
        "Complex": 1,
        "Expert": 1,
    }
    assert largest_remainder(1000, DEFAULT_PROFILES.targets) == {
        "Simple": 250,
        "Standard": 300,
        "Moderate": 200,
        "Complex": 150,
        "Expert": 100,
    }
    # three equal shares of 10: the single left-over seat goes to the first profile
    assert largest_remainder(10, {"a": 1, "b": 1, "c": 1}) == {"a": 4, "b": 3, "c": 3}
    for n in range(0, 60):
        q = largest_remainder(n, {"x": 0.13, "y": 0.52, "z": 0.35})
        assert sum(q.values()) == n
        assert all(abs(q[k] - n * w) < 1 for k, w in {"x": 0.13, "y": 0.52, "z": 0.35}.items())


def test_largest_remainder_rejects_bad_input() -> None:
    with pytest.raises(ProfileError):
        largest_remainder(-1, {"a": 1})
    with pytest.raises(ProfileError):
        largest_remainder(3, {"a": 0})


def test_profiles_file_toml_and_json(tmp_path: Path) -> None:
    toml = tmp_path / "p.toml"
    toml.write_text(
        '[[profiles]]\nname="Short"\ntasks=[2,3]\nmcps=[1,2]\ndomains=[1,1]\nproportion=3\n'
        '[[profiles]]\nname="Long"\ntasks=[5,8]\nmcps=[2,3]\ndomains=[1,2]\nproportion=1\n'
    )
    ps = load_profiles(toml)
    assert ps.targets == {"Short": 0.75, "Long": 0.25}
    js = tmp_path / "p.json"
    js.write_text('[{"name": "Only", "tasks": 2, "mcps": 1, "domains": 1, "proportion": 1}]')
    assert load_profiles(js).get("Only").tasks.min == 2


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (
            '[{"name": "A", "tasks": [3, 2], "mcps": 1, "domains": 1, "proportion": 1}]',
            "profiles.0.tasks",
        ),
        (
            '[{"name": "A", "tasks": [2, 3], "mcps": [4, 4], "domains": 1, "proportion": 1}]',
            "needs 4 MCPs",
        ),
        (
            '[{"name": "A", "tasks": 2, "mcps": 1, "domains": 1, "proportion": 1},'
            ' {"name": "A", "tasks": 2, "mcps": 1, "domains": 1, "proportion": 1}]',
            "repeat",
        ),
        ('{"profiles": [{"name": "A", "tasks": 2, "mcps": 1, "domains": 1}]}', "proportion"),
        ("not json", "not valid JSON"),
    ],
)
def test_bad_profiles_name_what_and_where(tmp_path: Path, text: str, fragment: str) -> None:
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(ProfileError, match=fragment) as err:
        load_profiles(p)
    assert "bad.json" in str(err.value)


def test_paper_preset_spans_the_papers_lengths() -> None:
    paper = load_profiles("paper")
    assert paper is load_profiles("paper") and paper.get("Expert").tasks.max >= 44
    # the corpus median of uniformly drawn lengths: the median over the quotas' span midpoints
    quotas = largest_remainder(100, paper.targets)
    mids = sorted(
        (p.tasks.min + p.tasks.max) / 2 for p in paper.profiles for _ in range(quotas[p.name])
    )
    assert mids[len(mids) // 2] >= 20
    assert paper.get("Expert").tasks.min >= 30  # the longest tenth stays long
