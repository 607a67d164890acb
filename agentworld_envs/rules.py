"""Business rules a tool enforces: the record behind a spec's ``rules`` entries.

A rule is one SQL precondition of one tool (see :mod:`agentworld_envs.synthesis.policies`, which
plans them per theme). It lives here, outside synthesis, because task generation and the linter
read rules from built specs too.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Rule:
    """One enforced rule: ``tool`` may act only on rows where ``column`` satisfies it."""

    tool: str
    table: str
    kind: str          # "threshold" | "min_lead_time" | "max_age"
    column: str
    op: str            # threshold: "max" | "min"; time rules: "hours" | "days"
    value: float
    text: str

    def expr(self) -> str:
        c = f'"{self.column}"'
        if self.kind == "threshold":
            return f"{c} IS NOT NULL AND {c} {'<=' if self.op == 'max' else '>='} {self.value!r}"
        if self.kind == "min_lead_time":
            return f"{c} IS NOT NULL AND (julianday({c}) - julianday(:now)) * 24 >= {self.value!r}"
        return f"{c} IS NOT NULL AND julianday(:now) - julianday({c}) <= {self.value!r}"

    def precondition(self) -> dict[str, Any]:
        return {"expr": self.expr(), "message": f"Policy: {self.text}"}

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Rule":
        return cls(**{k: data[k] for k in ("tool", "table", "kind", "column", "op", "value", "text")})

    def sql(self, now: str) -> str:
        """The rule as a WHERE condition with ``now`` bound (to find rows that meet or break it)."""
        return self.expr().replace(":now", "'" + now.replace("'", "") + "'")
