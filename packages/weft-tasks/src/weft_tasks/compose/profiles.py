"""Difficulty profiles and largest-remainder quotas (paper App. A.2).

Each profile gives ranges for atomic-task count (task length), MCP count (services to
coordinate) and domain breadth, and a target share of the corpus. A profiles file (TOML or JSON)
or a preset name (`default`, `paper`: corpus median >= 20 turns) replaces the defaults:

    [[profiles]]
    name = "Simple"
    tasks = [2, 3]
    mcps = [1, 2]
    domains = [1, 1]
    proportion = 0.25
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from weft_tasks.exceptions import ProfileError


class Span(BaseModel):
    """An inclusive integer range."""

    min: int = Field(ge=1)
    max: int = Field(ge=1)

    @model_validator(mode="before")
    @classmethod
    def _from_pair(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            if len(value) != 2:
                raise ValueError(f"a range is [min, max], got {list(value)}")
            return {"min": value[0], "max": value[1]}
        if isinstance(value, int):
            return {"min": value, "max": value}
        return value

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.min > self.max:
            raise ValueError(f"min {self.min} > max {self.max}")
        return self

    def clip(self, hi: int) -> range:
        return range(self.min, min(self.max, hi) + 1)


class Profile(BaseModel):
    name: str = Field(min_length=1)
    tasks: Span = Field(description="Atomic tasks (nodes) per composed task.")
    mcps: Span = Field(description="Distinct MCPs per composed task.")
    domains: Span = Field(description="Distinct domains per composed task.")
    proportion: float = Field(ge=0, description="Target share of the corpus.")

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.mcps.min > self.tasks.max:
            raise ValueError(
                f"profile {self.name}: needs {self.mcps.min} MCPs but at most {self.tasks.max} tasks"
            )
        if self.domains.min > self.mcps.max:
            raise ValueError(
                f"profile {self.name}: needs {self.domains.min} domains but at most {self.mcps.max} MCPs"
            )
        return self


class ProfileSet(BaseModel):
    profiles: list[Profile] = Field(min_length=1)

    @field_validator("profiles")
    @classmethod
    def _names_and_shares(cls, profiles: list[Profile]) -> list[Profile]:
        names = [p.name for p in profiles]
        if len(set(names)) != len(names):
            raise ValueError(f"profile names repeat: {names}")
        if sum(p.proportion for p in profiles) <= 0:
            raise ValueError("proportions sum to 0")
        return profiles

    def get(self, name: str) -> Profile:
        for p in self.profiles:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def targets(self) -> dict[str, float]:
        """Proportions normalized to sum to 1."""
        total = sum(p.proportion for p in self.profiles)
        return {p.name: p.proportion / total for p in self.profiles}


DEFAULT_PROFILES = ProfileSet(
    profiles=[
        Profile(
            name="Simple",
            tasks=Span(min=2, max=3),
            mcps=Span(min=1, max=2),
            domains=Span(min=1, max=1),
            proportion=0.25,
        ),
        Profile(
            name="Standard",
            tasks=Span(min=3, max=4),
            mcps=Span(min=2, max=2),
            domains=Span(min=1, max=2),
            proportion=0.30,
        ),
        Profile(
            name="Moderate",
            tasks=Span(min=4, max=5),
            mcps=Span(min=2, max=3),
            domains=Span(min=2, max=2),
            proportion=0.20,
        ),
        Profile(
            name="Complex",
            tasks=Span(min=5, max=7),
            mcps=Span(min=3, max=3),
            domains=Span(min=2, max=3),
            proportion=0.15,
        ),
        Profile(
            name="Expert",
            tasks=Span(min=8, max=16),
            mcps=Span(min=3, max=6),
            domains=Span(min=3, max=6),
            proportion=0.10,
        ),
    ]
)

# The paper's scale (§3.1.2: a median of 20 atomic-task turns): long tasks across many MCPs.
# Feasible when the libraries of the combination hold k tasks of distinct chains (ideally
# ceil(k * (1 + surplus))), so the longest profile needs most MCPs of the nine examples (57
# retained atomic tasks). Expert spans 34-44 so that a corpus reaches 40 turns and more: with
# 30-40, ten Expert tasks drew no 40 about a third of the time.
PAPER_PROFILES = ProfileSet(
    profiles=[
        Profile(
            name="Standard",
            tasks=Span(min=12, max=19),
            mcps=Span(min=3, max=5),
            domains=Span(min=3, max=5),
            proportion=0.30,
        ),
        Profile(
            name="Complex",
            tasks=Span(min=20, max=28),
            mcps=Span(min=5, max=7),
            domains=Span(min=5, max=7),
            proportion=0.45,
        ),
        Profile(
            name="Expert",
            tasks=Span(min=34, max=44),
            mcps=Span(min=7, max=9),
            domains=Span(min=7, max=9),
            proportion=0.25,
        ),
    ]
)

PRESETS = {"default": DEFAULT_PROFILES, "paper": PAPER_PROFILES}


def load_profiles(path: str | Path) -> ProfileSet:
    """Read a TOML or JSON profiles file, or a preset by name (`default`, `paper`) when no such
    file exists; a bad file names the file and the field."""
    p = Path(path)
    if str(path) in PRESETS and not p.exists():
        return PRESETS[str(path)]
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ProfileError(f"{p}: cannot read profiles file: {exc.strerror}") from None
    try:
        data = tomllib.loads(text) if p.suffix.lower() == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ProfileError(
            f"{p}: not valid {'TOML' if p.suffix.lower() == '.toml' else 'JSON'}: {exc}"
        ) from None
    if isinstance(data, list):
        data = {"profiles": data}
    try:
        return ProfileSet.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"]) or "(root)"
        raise ProfileError(f"{p}: {loc}: {err['msg']}") from None


def largest_remainder(total: int, proportions: Mapping[str, float]) -> dict[str, int]:
    """Integer quotas summing to `total`: floors first, then one more for the largest remainders
    (ties go to the earlier profile, so the allocation is stable)."""
    if total < 0:
        raise ProfileError(f"corpus size must be >= 0, got {total}")
    weight = sum(proportions.values())
    if weight <= 0:
        raise ProfileError("proportions sum to 0")
    exact = {k: total * v / weight for k, v in proportions.items()}
    quotas = {k: math.floor(x) for k, x in exact.items()}
    left = total - sum(quotas.values())
    order = sorted(exact, key=lambda k: (-(exact[k] - quotas[k]), list(exact).index(k)))
    for k in order[:left]:
        quotas[k] += 1
    return quotas
