"""A theme's business rules: stated in its policy, enforced by its tools, exercised by its tasks.

Besides the lifecycle ("only pending orders can be cancelled"), real services gate actions on
thresholds ("refunds above 500 need a manager") and time windows ("no cancellations within 24
hours of the start"). Each rule here is one precondition of one workflow transition tool, written
three ways from the same record: the sentence in the policy, the SQL precondition the tool checks,
and the structured ``rules`` entry of the spec that task generation reads to build the allowed
case and the trap.
"""

from __future__ import annotations

import math
import random
from typing import Any

from ..language import date_noun, indefinite, number, verb_phrase
from ..rules import Rule
from .naming import title
from .semantics import date_rank


_AMOUNT_WORDS = ("total", "amount", "price", "fee", "cost", "value", "balance", "charge", "rate", "budget")
_WINDOWS = (7, 14, 30, 60, 90, 180, 365)


def nice(x: float) -> float:
    """A round number near ``x`` (two significant digits), as a person would state a limit."""
    if x <= 0:
        return 0
    mag = 10 ** (math.floor(math.log10(x)) - 1)
    out = round(x / mag) * mag
    return int(out) if out >= 1 else round(out, 2)


def _numeric_candidates(ent: Any) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for col in ent.columns:
        gen = ent.gens.get(col["name"], {})
        if col["name"] in ent.refs or col["type"] not in ("INTEGER", "REAL") or gen.get("gen") not in ("int", "float", "money"):
            continue
        if gen["max"] - gen["min"] < 4 or gen["min"] < 0:
            continue
        out.append((col["name"], gen))
    return out


#: Actions that only make sense ahead of a record's start ("no cancellations within 24 hours").
_LEAD_VERBS = ("cancel", "reschedule", "withdraw", "drop", "release", "void", "decline", "pause", "hold", "change")
#: Actions a service allows only for a while after a record is created ("returns within 30 days").
_WINDOW_VERBS = ("return", "refund", "cancel", "appeal", "reopen", "void", "withdraw", "approve", "reject", "deny",
                 "renew", "confirm", "process", "settle", "resolve", "dispute", "review", "accept", "decide")


def _date_candidates(ent: Any) -> list[tuple[str, str, float]]:
    """(column, kind, value) time rules the entity's dates support."""
    out = []
    for col in ent.columns:
        gen = ent.gens.get(col["name"], {})
        if gen.get("gen") not in ("date", "datetime"):
            continue
        lo, hi = gen.get("days", [-365, 0])
        rank = date_rank(col["name"])
        if rank == 1 and hi > 3 and lo < 0:
            out.append((col["name"], "min_lead_time", float(random.Random(col["name"]).choice([24, 48, 72]))))
        elif rank == 0 and hi <= 0 and lo <= -20:
            days = min(_WINDOWS, key=lambda d: abs(d - (-lo) / 3))
            out.append((col["name"], "max_age", float(days)))
    return out


def plan_rules(theme: dict[str, Any], entities: list[Any], tools: list[dict[str, Any]], conn: Any = None) -> list[Rule]:
    """Pick at most two rules per workflow entity (one threshold, one time window) and one quota per
    theme, seeded per theme. ``conn`` (the golden state) sets the quota's limit from the data."""
    rng = random.Random(f"{theme['slug']}:rules")
    by_table: dict[str, list[dict[str, Any]]] = {}
    for tool in tools:
        impl = tool["impl"]
        if impl["kind"] == "transition" and impl["to"] not in ("active", "open", "pending", "draft"):
            by_table.setdefault(impl["table"], []).append(tool)
    rules: list[Rule] = []
    for ent in entities:
        transitions = by_table.get(ent.table, [])
        if not transitions:
            continue
        rng.shuffle(transitions)
        nums, dates = _numeric_candidates(ent), _date_candidates(ent)
        used: set[str] = set()
        money = [n for n in nums if n[1]["gen"] == "money" or any(w in n[0] for w in _AMOUNT_WORDS)]
        if nums:
            col, gen = rng.choice(money or nums)
            tool = transitions[0]
            # Amounts carry approval limits (at most); counts and scores carry minimums (at least).
            op = "max" if (col, gen) in money else "min"
            frac = 0.65 if op == "max" else 0.35
            value = nice(gen["min"] + frac * (gen["max"] - gen["min"]))
            act = verb_phrase(_verb_of(tool, ent), indefinite(title(ent.singular)))
            limit = "at most" if op == "max" else "at least"
            text = f"Only {act} when its {title(col)} is {limit} {number(value)}."
            rules.append(Rule(tool["name"], ent.table, "threshold", col, op, float(value), text))
            used.add(tool["name"])
        rest = [t for t in transitions if t["name"] not in used]
        fitting = [(d, t) for d in dates for t in rest
                   if _verb_of(t, ent).split("_")[0] in (_LEAD_VERBS if d[1] == "min_lead_time" else _WINDOW_VERBS)]
        if fitting:
            (col, kind, value), tool = rng.choice(fitting)
            act = verb_phrase(_verb_of(tool, ent), indefinite(title(ent.singular)))
            if kind == "min_lead_time":
                text = f"Never {act} less than {number(value)} hours before {date_noun(col)}."
            else:
                text = f"Only {act} within {number(value)} days of {date_noun(col)}."
            rules.append(Rule(tool["name"], ent.table, kind, col, "hours" if kind == "min_lead_time" else "days",
                              float(value), text))
    if conn is not None:
        quotas = [q for ent in entities for q in _quota_rules(ent, entities, tools, conn)]
        if quotas:
            rules.append(rng.choice(quotas))
    return rules


#: Statuses in which a record no longer counts against a quota, even where a later move exists (return, reopen).
_FINISHED = frozenset({"delivered", "completed", "complete", "closed", "resolved", "done", "paid", "archived", "retired",
                       "expired", "cancelled", "canceled", "returned", "rejected", "denied", "withdrawn", "failed", "void",
                       "voided", "refunded", "settled", "discontinued", "inactive", "terminated", "ended", "finished",
                       "fulfilled", "published", "released", "merged", "solved", "checked_out", "no_show", "dispatched"})


def _quota_rules(ent: Any, entities: list[Any], tools: list[dict[str, Any]], conn: Any) -> list[Rule]:
    """"A member may have at most 3 requested or confirmed bookings at a time": a cap on a parent's
    open children, checked when one is created. The cap is the data's 75th percentile, so some
    parents are at it (a request must be refused) and most are below it."""
    if not ent.workflow:
        return []
    create = next((t for t in tools if t["impl"]["kind"] == "create" and t["impl"]["table"] == ent.table), None)
    if create is None:
        return []
    wf = ent.workflow
    active = [s for s in wf["states"] if any(s in tr["from"] for tr in wf["transitions"]) and s not in _FINISHED]
    if not active or wf["states"][0] not in active:
        return []
    by_table = {e.table: e for e in entities}
    out = []
    for fk in create["parameters"].get("required", []):
        parent = by_table.get(ent.refs.get(fk, ""))
        if parent is None or not (parent.column(parent.label) or {}).get("unique"):
            continue
        marks = ", ".join("?" * len(active))
        counts = sorted(n for (n,) in conn.execute(
            f'SELECT COUNT(*) FROM "{ent.table}" WHERE "{fk}" IS NOT NULL AND status IN ({marks}) GROUP BY "{fk}"',
            tuple(active)))
        if len(counts) < 5:
            continue
        cap = max(1, counts[(len(counts) * 3) // 4])
        names = [title(s) for s in active]
        states = (", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]) if len(names) <= 3 else "open"
        records = title(ent.table) if cap > 1 else title(ent.singular)
        text = f"{indefinite(title(parent.singular)).capitalize()} may have at most {cap} {states} {records} at a time."
        out.append(Rule(create["name"], ent.table, "quota", fk, "max_active", float(cap), text, tuple(active)))
    return out


def _verb_of(tool: dict[str, Any], ent: Any) -> str:
    name = tool["name"]
    suffix = "_" + ent.singular
    return name[: -len(suffix)] if name.endswith(suffix) else name
