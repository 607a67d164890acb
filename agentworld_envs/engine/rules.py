"""Business rules a tool enforces: the record behind a spec's ``rules`` entries.

A rule is one SQL precondition of one tool (see :mod:`agentworld_envs.synthesis.policies`, which
plans them per theme). It lives here, outside synthesis, because task generation and the linter
read rules from built specs too.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


#: The policy line that makes the details a request gives about a record binding (synthesised worlds state
#: it): the record is found by its code, and a detail that disagrees with it means the request is not about it.
VERIFY_RULE = ("Act on a record only when every detail the request gives about it matches what the record holds; "
               "where one does not, change nothing for that record and say what the record holds instead.")


@dataclass(frozen=True)
class Rule:
    """One enforced rule: ``tool`` may act only on rows where ``column`` satisfies it.

    A ``quota`` rule guards a ``create`` tool instead: at most ``value`` rows of ``table`` in
    ``states`` may share the parent named by the key column ``column`` (the argument of that name).
    A ``bound`` rule (a limit a theme states: "bags over 30 kg are refused") holds for every row and
    guards a ``create`` or ``update`` tool that sets ``column``: its argument must keep to the limit.

    A ``duty`` rule is one no tool enforces: a follow-up the agent owes ("when you cancel a flight, also
    cancel each of its bookings that is still requested or confirmed"). ``tool`` closes a record of
    ``parent``; every row of ``table`` whose key ``column`` points at it and whose status is in ``states``
    must then go through the ``follow`` tool. ``guards`` are the parent's statuses that passed ``tool``: no
    seeded parent there keeps a child in ``states``.
    """

    tool: str
    table: str
    kind: str          # "threshold" | "min_lead_time" | "max_age" | "quota" | "bound" | "duty"
    column: str
    op: str            # threshold: "max" | "min"; time rules: "hours" | "days"; quota: "max_active"; duty: "follow"
    value: float
    text: str
    states: tuple[str, ...] = ()
    #: Statuses a row reaches only by passing this rule (the tool's target, and what lies only beyond
    #: it): the seeded history obeys the rule there, except rows a task sets up (``data.setups``).
    guards: tuple[str, ...] = ()
    #: ``"theme"`` when the theme's own description states the rule, else ``"planned"``.
    source: str = "planned"
    #: A duty's follow-up tool (on ``table``) and the table its trigger ``tool`` closes records of.
    follow: str = ""
    parent: str = ""

    @property
    def enforced(self) -> bool:
        """Whether a tool checks the rule (a precondition); a duty is the agent's own to carry out."""
        return self.kind != "duty"

    def expr(self) -> str:
        c = f'"{self.column}"'
        if self.kind == "quota":
            return f"{self.active_count(':' + self.column)} < {int(self.value)}"
        if self.kind == "bound":
            return f"(:{self.column} IS NULL OR :{self.column} {'<=' if self.op == 'max' else '>='} {self.value!r})"
        if self.kind == "threshold":
            return f"{c} IS NOT NULL AND {c} {'<=' if self.op == 'max' else '>='} {self.value!r}"
        if self.kind == "min_lead_time":
            return f"{c} IS NOT NULL AND (julianday({c}) - julianday(:now)) * 24 >= {self.value!r}"
        return f"{c} IS NOT NULL AND julianday(:now) - julianday({c}) <= {self.value!r}"

    def active_count(self, parent: str) -> str:
        """SQL counting the rows in ``states`` under ``parent`` (a bound name or a column reference)."""
        states = _listed(self.states)
        return (f'(SELECT COUNT(*) FROM "{self.table}" AS quota_rows WHERE quota_rows."{self.column}" = {parent} '
                f'AND quota_rows."status" IN ({states}))')

    #: The task shapes that exercise each kind of rule (allowed case and trap), for task generation.
    SHAPES = {"threshold": ("rule_threshold",), "min_lead_time": ("time_window",), "max_age": ("time_window",),
              "quota": ("quota",), "bound": ("create_record",), "duty": ("duty_sweep",)}

    @property
    def shapes(self) -> tuple[str, ...]:
        return self.SHAPES.get(self.kind, ())

    def history_breaks(self, now: str) -> str | None:
        """A WHERE condition over ``table`` for seeded rows whose history breaks the rule: a row in a
        guarded status that could not have got there under it (a ``done`` investigation above the fee
        limit; a session cancelled less than 48 hours before it departed). ``None`` for quotas (see
        :meth:`over_quota`)."""
        c = f'"{self.column}"'
        if self.kind == "bound":
            return f"NOT {self.sql(now)}"
        if self.kind == "duty":
            return (f'"status" IN ({_listed(self.states)}) AND {c} IN '
                    f'(SELECT id FROM "{self.parent}" WHERE "status" IN ({_listed(self.guards)}))')
        if self.kind == "quota" or not self.guards:
            return None
        states = _listed(self.guards)
        if self.kind == "threshold":
            bad = f"{c} IS NOT NULL AND NOT ({self.sql(now)})"
        elif self.kind == "min_lead_time":
            bad = (f"{c} IS NOT NULL AND status_changed_at IS NOT NULL AND "
                   f"(julianday({c}) - julianday(status_changed_at)) * 24 < {self.value!r}")
        else:
            bad = (f"{c} IS NOT NULL AND status_changed_at IS NOT NULL AND "
                   f"julianday(status_changed_at) - julianday({c}) > {self.value!r}")
        return f'"status" IN ({states}) AND {bad}'

    def over_quota(self) -> str:
        """SQL listing ``(parent, open children)`` for parents holding more than the quota allows."""
        states = _listed(self.states)
        return (f'SELECT "{self.column}", COUNT(*) FROM "{self.table}" WHERE "{self.column}" IS NOT NULL AND '
                f'"status" IN ({states}) GROUP BY "{self.column}" HAVING COUNT(*) > {int(self.value)}')

    def precondition(self) -> dict[str, Any]:
        if not self.enforced:
            raise ValueError(f"a {self.kind} rule is no tool's precondition")
        return {"expr": self.expr(), "message": f"Policy: {self.text}"}

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("states", "guards"):
            out[key] = list(getattr(self, key))
            if not out[key]:
                del out[key]
        if self.source == "planned":
            del out["source"]
        for key in ("follow", "parent"):
            if not out[key]:
                del out[key]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Rule":
        return cls(**{k: data[k] for k in ("tool", "table", "kind", "column", "op", "value", "text")},
                   states=tuple(data.get("states", ())), guards=tuple(data.get("guards", ())),
                   source=data.get("source", "planned"), follow=data.get("follow", ""), parent=data.get("parent", ""))

    def sql(self, now: str) -> str:
        """The rule as a WHERE condition with ``now`` bound (to find rows that meet or break it); for a
        ``bound``, the row's own value against the limit (its precondition reads the tool's argument)."""
        if not self.enforced:
            raise ValueError(f"a {self.kind} rule is no condition on the row a tool acts on")
        if self.kind == "bound":
            c = f'"{self.column}"'
            return f"({c} IS NULL OR {c} {'<=' if self.op == 'max' else '>='} {self.value!r})"
        return self.expr().replace(":now", "'" + now.replace("'", "") + "'")


def _listed(values: tuple[str, ...]) -> str:
    """Statuses as an SQL list of quoted strings."""
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values)
