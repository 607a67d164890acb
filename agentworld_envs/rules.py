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
    """One enforced rule: ``tool`` may act only on rows where ``column`` satisfies it.

    A ``quota`` rule guards a ``create`` tool instead: at most ``value`` rows of ``table`` in
    ``states`` may share the parent named by the key column ``column`` (the argument of that name).
    """

    tool: str
    table: str
    kind: str          # "threshold" | "min_lead_time" | "max_age" | "quota"
    column: str
    op: str            # threshold: "max" | "min"; time rules: "hours" | "days"; quota: "max_active"
    value: float
    text: str
    states: tuple[str, ...] = ()

    def expr(self) -> str:
        c = f'"{self.column}"'
        if self.kind == "quota":
            return f"{self.active_count(':' + self.column)} < {int(self.value)}"
        if self.kind == "threshold":
            return f"{c} IS NOT NULL AND {c} {'<=' if self.op == 'max' else '>='} {self.value!r}"
        if self.kind == "min_lead_time":
            return f"{c} IS NOT NULL AND (julianday({c}) - julianday(:now)) * 24 >= {self.value!r}"
        return f"{c} IS NOT NULL AND julianday(:now) - julianday({c}) <= {self.value!r}"

    def active_count(self, parent: str) -> str:
        """SQL counting the rows in ``states`` under ``parent`` (a bound name or a column reference)."""
        states = ", ".join("'" + s.replace("'", "''") + "'" for s in self.states)
        return (f'(SELECT COUNT(*) FROM "{self.table}" AS quota_rows WHERE quota_rows."{self.column}" = {parent} '
                f'AND quota_rows."status" IN ({states}))')

    def precondition(self) -> dict[str, Any]:
        return {"expr": self.expr(), "message": f"Policy: {self.text}"}

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["states"] = list(self.states)
        if not self.states:
            del out["states"]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Rule":
        return cls(**{k: data[k] for k in ("tool", "table", "kind", "column", "op", "value", "text")},
                   states=tuple(data.get("states", ())))

    def sql(self, now: str) -> str:
        """The rule as a WHERE condition with ``now`` bound (to find rows that meet or break it)."""
        return self.expr().replace(":now", "'" + now.replace("'", "") + "'")
