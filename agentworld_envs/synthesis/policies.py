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
import re
from collections.abc import Sequence
from typing import Any

from ..engine.language import date_noun, figures, indefinite, number, participle, sentences, verb_phrase
from ..engine.rules import Rule
from .naming import title
from .semantics import date_rank, dependency_order, is_shut, made_by_date, sources


_AMOUNT_WORDS = ("total", "amount", "price", "fee", "cost", "value", "balance", "charge", "rate", "budget")
_WINDOWS = (7, 14, 30, 60, 90, 180, 365)


def nice(x: float) -> float:
    """A round number near ``x`` (two significant digits), as a person would state a limit."""
    if x <= 0:
        return 0
    mag = 10 ** (math.floor(math.log10(x)) - 1)
    out = round(x / mag) * mag
    return int(out) if out >= 1 else round(out, 2)


_YEAR = re.compile(r"(^|_)year$")


#: Places in a sequence (a version, the 12th instalment, a lesson's number, a floor), not amounts to bound.
_ORDINAL = re.compile(r"^(version|revision|floor|sequence|position|rank|round|attempt|step|page|seat_row)$|"
                      r"(installment|instalment|lesson|episode|season|issue|volume|chapter|line|sequence|week|"
                      r"sprint|release|build|step|round|stage|level|version)_(number|no|index|num)$")


def _numeric_candidates(ent: Any) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for col in ent.columns:
        gen = ent.gens.get(col["name"], {})
        if col["name"] in ent.refs or col["type"] not in ("INTEGER", "REAL") or gen.get("gen") not in ("int", "float", "money"):
            continue
        if gen["max"] - gen["min"] < 4 or gen["min"] < 0 or _YEAR.search(col["name"]) or _ORDINAL.search(col["name"]):
            continue     # a year or a place in a sequence is no limit ("a model year of at least 2,000", "a version of
            #              at least 9", "an installment number of at least 130")
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


def plan_rules(theme: dict[str, Any], entities: list[Any], tools: list[dict[str, Any]]) -> list[Rule]:
    """Pick at most two rules per workflow entity (one threshold, one time window) and one quota per
    theme, seeded per theme, and make the entities' generators obey them (:func:`constrain_history`),
    so the seeded history never shows a row its rule would have refused."""
    rng = random.Random(f"{theme['slug']}:rules")
    # The theme's own limits first: they narrow the ranges the planned limits are drawn from.
    stated = theme_rules(theme, entities, tools)
    for rule in stated:
        constrain_history(rule, next(e for e in entities if e.table == rule.table))
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
        read = {c for g in ent.gens.values() for c in sources(g)}
        nums = [n for n in _numeric_candidates(ent) if n[0] not in read or _only_caps(ent, n[0])]
        dates = _date_candidates(ent)
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
            rules.append(Rule(tool["name"], ent.table, "threshold", col, op, float(value), text,
                              guards=guarded_states(ent.workflow, tool["impl"]["to"])))
            used.add(tool["name"])
        rest = [t for t in transitions if t["name"] not in used]
        fitting = [(d, t) for d in dates for t in rest
                   if _verb_of(t, ent).split("_")[0] in (_LEAD_VERBS if d[1] == "min_lead_time" else _WINDOW_VERBS)]
        if fitting and "status_changed_at" in ent.gens:
            (col, kind, value), tool = rng.choice(fitting)
            act = verb_phrase(_verb_of(tool, ent), indefinite(title(ent.singular)))
            if kind == "min_lead_time":
                text = f"Never {act} less than {number(value)} hours before {date_noun(col)}."
            else:
                text = f"Only {act} within {number(value)} days of {date_noun(col)}."
            # Only the tool's own target: a status further on changed later than the rule's moment.
            rules.append(Rule(tool["name"], ent.table, kind, col, "hours" if kind == "min_lead_time" else "days",
                              float(value), text, guards=(tool["impl"]["to"],)))
    quotas = [q for ent in entities for q in _quota_rules(ent, entities, tools)]
    if quotas:
        rules.append(rng.choice(quotas))
    guarded = {r.tool for r in stated + rules}
    duties = _duty_rules(entities, [t for t in tools if t["name"] not in guarded])
    if duties:
        rules.append(rng.choice(duties))
    for rule in rules:
        constrain_history(rule, next(e for e in entities if e.table == rule.table))
    return stated + rules


def theme_rules(theme: dict[str, Any], entities: list[Any], tools: list[dict[str, Any]]) -> list[Rule]:
    """The limits the theme's own description states, authored as data (``words/themes.json``,
    ``"rules"``): ``{"entity": "suitcase", "column": "weight_kg", "op": "max", "value": 30, "text":
    "Bags over 30 kg are refused."}``. Each guards every create or update tool that sets the column, and
    every seeded row keeps to it."""
    import env_registry

    out = []
    by_singular = {e.singular: e for e in entities}
    for raw in env_registry.words("themes").get(theme["slug"], {}).get("rules", ()):
        ent = by_singular.get(raw["entity"])
        if ent is None or ent.column(raw["column"]) is None:
            continue
        setters = [t for t in tools if t["impl"]["kind"] in ("create", "update") and t["impl"]["table"] == ent.table
                   and raw["column"] in t["parameters"].get("properties", {})]
        for tool in setters:
            out.append(Rule(tool["name"], ent.table, "bound", raw["column"], raw["op"], float(raw["value"]), raw["text"],
                            source="theme"))
        if not setters:
            # Nothing can set it: the data keeps to it all the same.
            constrain_history(Rule("", ent.table, "bound", raw["column"], raw["op"], float(raw["value"]), raw["text"]), ent)
    return out


def _only_caps(ent: Any, col: str) -> bool:
    """Whether the only generators reading ``col`` cap another column by it (``seats_booked`` <=
    ``capacity``): a rule may then move it, the capped column follows."""
    readers = [g for g in ent.gens.values() if col in sources(g)]
    return all(g.get("gen") == "at_most" and g.get("of") == col for g in readers)


def guarded_states(workflow: dict[str, Any] | None, to: str) -> tuple[str, ...]:
    """``to`` and every status reachable only through it from the workflow's first status: a row there
    passed the transition into ``to``, so it passed the rule on that transition."""
    if not workflow:
        return (to,)
    nexts: dict[str, set[str]] = {}
    for tr in workflow["transitions"]:
        for f in tr["from"]:
            nexts.setdefault(f, set()).add(tr["to"])
    start = workflow["states"][0]

    def reach(avoid: str | None) -> set[str]:
        seen, todo = {start}, [start]
        while todo:
            for n in nexts.get(todo.pop(), ()):
                if n not in seen and n != avoid:
                    seen.add(n)
                    todo.append(n)
        return seen

    if to == start:
        return (to,)
    everywhere, without = reach(None), reach(to)
    return tuple([to] + [s for s in workflow["states"] if s in everywhere - without and s != to])


def constrain_history(rule: Rule, ent: Any) -> None:
    """Rewrite ``ent``'s generators so its seeded rows obey ``rule`` (part (c) of a rule: the history).

    A threshold bounds the value of rows in the guarded statuses; a lead time or window bounds when a
    row reached the rule's status (``status_changed_at``); a quota caps the open children per parent.
    """
    gens = ent.gens
    if rule.kind == "threshold":
        gen = gens[rule.column]
        lo, hi = gen["min"], gen["max"]
        if rule.op == "max":
            lo, hi = min(lo, rule.value), min(hi, rule.value)
        else:
            lo, hi = max(lo, rule.value), max(hi, rule.value)
        if gen["gen"] == "int":
            lo, hi = math.ceil(lo), math.floor(hi)
            lo = min(lo, hi)
        # the figure a rule reads is always there: a request with no amount cannot be held to an amount's bound
        bounded = {**{k: v for k, v in gen.items() if k not in ("unique", "null_p")}, "min": lo, "max": hi}
        gens[rule.column] = {"gen": "by", "column": "status", "default": {k: v for k, v in gen.items() if k != "null_p"},
                             "cases": {s: bounded for s in rule.guards}}
    elif rule.kind in ("min_lead_time", "max_age"):
        changed = gens.get("status_changed_at")
        if changed is None or changed.get("gen") != "changed":
            return
        window = {"before": rule.column, "hours": rule.value} if rule.kind == "min_lead_time" \
            else {"after": rule.column, "days": rule.value}
        changed.setdefault("windows", {})[rule.guards[0]] = window
        if rule.kind == "min_lead_time":
            # the change comes before the window's date, so the records the row belongs to were made by that
            # date (a grant withdrawn 72 hours before its start names a researcher who had joined by then)
            for parent in changed.get("parents", ()):
                made_by_date(gens, parent["via"], rule.column)
    elif rule.kind == "bound":
        inner = gens.get(rule.column, {})
        while inner.get("gen") in ("at_most", "part_of", "within") and "inner" in inner:
            inner = inner["inner"]     # the drawn figure under a cap, a share of a whole or a parent's bound
        if inner and inner.get("gen") == "choice" and all(isinstance(v, (int, float)) for v in inner["values"]):
            ok = [i for i, v in enumerate(inner["values"]) if (v <= rule.value if rule.op == "max" else v >= rule.value)]
            if ok:
                if inner.get("weights"):
                    inner["weights"] = [inner["weights"][i] for i in ok]
                inner["values"] = [inner["values"][i] for i in ok]
            else:  # no listed value keeps to the limit: any whole number up to it (or from it)
                limit = int(rule.value)
                inner.clear()
                inner.update({"gen": "int", "min": max(1, limit // 2), "max": limit} if rule.op == "max"
                             else {"gen": "int", "min": limit, "max": limit * 2})
        elif inner and inner.get("gen") in ("int", "float", "money"):
            key, limit = ("max", min) if rule.op == "max" else ("min", max)
            inner[key] = limit(inner[key], int(rule.value) if inner["gen"] == "int" else rule.value)
            other = "min" if key == "max" else "max"
            inner[other] = min(inner[other], inner[key]) if key == "max" else max(inner[other], inner[key])
    elif rule.kind == "duty":
        # an open child never sits under a parent the trigger has closed (nor, kept from synthesis, one shut)
        have = gens[rule.column].get("open_parent", {"in": [], "parent_not_in": []})
        gens[rule.column] = {**gens[rule.column], "open_parent": {
            "column": "status", "in": sorted({*have["in"], *rule.states}),
            "parent_not_in": sorted({*have["parent_not_in"], *rule.guards})}}
    elif rule.kind == "quota":
        gen = gens[rule.column]
        gens[rule.column] = {**gen, "quota": {"column": "status", "in": list(rule.states), "cap": int(rule.value)},
                             "nullable": (ent.column(rule.column) or {}).get("nullable") is not False}
    ent.gens = dependency_order(gens)


#: Statuses in which a record no longer counts against a quota, even where a later move exists (return, reopen).
_FINISHED = frozenset({"delivered", "completed", "complete", "closed", "resolved", "done", "paid", "archived", "retired",
                       "expired", "cancelled", "canceled", "returned", "rejected", "denied", "withdrawn", "failed", "void",
                       "voided", "refunded", "settled", "discontinued", "inactive", "terminated", "ended", "finished",
                       "fulfilled", "published", "released", "merged", "solved", "checked_out", "no_show", "dispatched"})


#: Verbs of a create tool a quota's text may use ("opened", "booked"); any other reads "created".
_CREATE_VERBS = frozenset({"create", "add", "open", "book", "register", "log", "file", "place", "issue", "schedule",
                           "record", "submit", "enroll", "enrol", "request", "reserve", "start", "raise", "list", "post"})


def _quota_rules(ent: Any, entities: list[Any], tools: list[dict[str, Any]]) -> list[Rule]:
    """"No new booking may be made for a member that already has 3 requested or confirmed bookings": a cap on
    a parent's open children, checked when one is created. The cap is the 75th percentile of the open children a
    parent would hold unconstrained (Poisson), with room for every open row, so some parents are at it
    (a request must be refused) and most are below it; the seeded data then never exceeds it."""
    if not ent.workflow or "status" not in ent.gens:
        return []
    create = next((t for t in tools if t["impl"]["kind"] == "create" and t["impl"]["table"] == ent.table), None)
    if create is None:
        return []
    wf = ent.workflow
    active = [s for s in wf["states"] if any(s in tr["from"] for tr in wf["transitions"]) and s not in _FINISHED]
    if not active or wf["states"][0] not in active:
        return []
    status = ent.gens["status"]
    weights = dict(zip(status["values"], status.get("weights") or [1] * len(status["values"])))
    p_active = sum(weights.get(s, 0) for s in active) / sum(weights.values())
    by_table = {e.table: e for e in entities}
    out = []
    for fk in create["parameters"].get("required", []):
        parent = by_table.get(ent.refs.get(fk, ""))
        gen = ent.gens.get(fk, {})
        # a record drawn among the parents already started by its date (``not_after``) crowds onto the early ones:
        # no cap can hold there
        if parent is None or not (parent.column(parent.label) or {}).get("unique") or gen.get("gen") != "ref" \
                or "same" in gen or "not_after" in gen or parent.rows < 5:
            continue
        # only a parent still open takes new records (a closed one's open children are closed with it): the
        # cap leaves room on the open ones
        per_parent = ent.rows * (1 - gen.get("null_p", 0)) * p_active / max(1.0, parent.rows * _open_share(parent))
        if per_parent <= 0:
            continue
        cap = max(1, _poisson_quantile(per_parent, 0.75), math.ceil(1.3 * per_parent))
        names = [title(s) for s in active]
        states = (", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]) if len(names) <= 3 else "open"
        records = title(ent.table) if cap > 1 else title(ent.singular)
        # the text says what the create tool checks, no more: a record renewed or reopened by another tool is no
        # new one (blind round 75: "at most 2 at a time" read as barring a renewal the tools allowed)
        head = create["name"].split("_")[0]
        made = participle(head if head in _CREATE_VERBS else "create")
        text = (f"No new {title(ent.singular)} may be {made} for {indefinite(title(parent.singular))} that already has "
                f"{cap} {states} {records}.")
        out.append(Rule(create["name"], ent.table, "quota", fk, "max_active", float(cap), text, tuple(active)))
    return out


#: Statuses of a record closed for good, that takes no new records.
_SHUT = re.compile(r"inactiv|cancel|terminat|discontinu|closed|retir|archiv|void|revok|suspend|withdr|expir|deactiv|"
                   r"decommission|churn|lost|reject|denied|declin")


def _open_share(ent: Any) -> float:
    """The share of a table's records its status weights leave open (1.0 without a status), less two standard
    deviations of the share its rows draw: the records still open leave room for every open child even when
    fewer of them are drawn open than the weights promise."""
    status = ent.gens.get("status") or {}
    values = status.get("values") or []
    if status.get("gen") != "choice" or not values:
        return 1.0
    weights = status.get("weights") or [1] * len(values)
    shut = sum(w for v, w in zip(values, weights) if _SHUT.search(str(v)) or is_shut(str(v)))
    share = 1 - shut / sum(weights)
    return max(0.2, share - 2 * math.sqrt(share * (1 - share) / max(1, ent.rows)))


#: Verbs that close a record for good: the trigger of a follow-up duty, and the follow-up itself.
_CLOSING_VERBS = ("cancel", "close", "retire", "terminate", "deactivate", "discontinue", "withdraw", "archive",
                  "decommission", "void", "revoke", "suspend")
_FOLLOW_VERBS = ("cancel", "withdraw", "close", "void", "reject", "decline", "release", "discontinue", "deactivate",
                 "retire", "archive", "revoke", "suspend")


def child_listings(tools: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """(table, column) pairs the first full listing of each table filters by equality: how an agent lists
    a parent's children (and the listing the task model reads them with)."""
    first: dict[str, dict[str, Any]] = {}
    for t in tools:
        if t["impl"]["kind"] in ("list", "search") and not t["impl"].get("columns"):
            first.setdefault(t["impl"]["table"], t)
    return {(table, f["column"]) for table, t in first.items() for f in t["impl"].get("filters", [])
            if f.get("op", "eq") == "eq"}


def _duty_rules(entities: list[Any], tools: list[dict[str, Any]]) -> list[Rule]:
    """Follow-ups no tool carries out: "When you cancel a flight, also cancel each of its bookings that is
    still requested or confirmed." The trigger closes a parent; the follow-up closes its open children,
    which the agent finds by listing them (a search filtered by the parent). Same verbs pair first (cancel a
    flight, cancel its bookings)."""
    by_table = {e.table: e for e in entities}
    moves: dict[str, list[dict[str, Any]]] = {}
    for tool in tools:
        if tool["impl"]["kind"] == "transition" and tool["impl"].get("column") == "status":
            moves.setdefault(tool["impl"]["table"], []).append(tool)
    listable = child_listings(tools)
    out: list[tuple[int, Rule]] = []
    for child in entities:
        status = child.gens.get("status", {})
        if status.get("gen") != "choice" or not child.workflow:
            continue
        for fk, ptable in child.refs.items():
            parent = by_table.get(ptable)
            if list(child.refs.values()).count(ptable) > 1:
                continue   # "its conversions" is no list where a conversion names two wallets
            gen = child.gens.get(fk, {})
            if parent is None or parent is child or not parent.workflow or gen.get("gen") != "ref" \
                    or (child.table, fk) not in listable or "status" not in parent.gens:
                continue
            for trigger in moves.get(ptable, ()):
                tverb = _verb_of(trigger, parent)
                if tverb.split("_")[0] not in _CLOSING_VERBS:
                    continue
                for follow in moves.get(child.table, ()):
                    fverb = _verb_of(follow, child)
                    open_states = tuple(s for s in follow["impl"]["from"] if s in status["values"])
                    if fverb.split("_")[0] not in _FOLLOW_VERBS or not open_states or follow["impl"]["to"] in open_states:
                        continue
                    names = [title(s) for s in open_states]
                    states = ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]
                    text = (f"When you {verb_phrase(tverb, indefinite(title(parent.singular)))}, also "
                            f"{verb_phrase(fverb, 'each of its ' + title(child.table))} that is still {states}.")
                    rule = Rule(trigger["name"], child.table, "duty", fk, "follow", 0.0, text, open_states,
                                guarded_states(parent.workflow, trigger["impl"]["to"]), follow=follow["name"],
                                parent=ptable)
                    out.append((0 if fverb == tverb else 1, rule))
    best = min((rank for rank, _ in out), default=None)
    return [rule for rank, rule in out if rank == best]


def _poisson_quantile(lam: float, q: float) -> int:
    if lam > 50:  # normal approximation (exp(-lam) underflows further on)
        return math.ceil(lam + 0.674 * math.sqrt(lam))
    k, p = 0, math.exp(-lam)
    total = p
    while total < q and k < 10_000:
        k += 1
        p *= lam / k
        total += p
    return k


def _verb_of(tool: dict[str, Any], ent: Any) -> str:
    name = tool["name"]
    suffix = "_" + ent.singular
    return name[: -len(suffix)] if name.endswith(suffix) else name


#: Words that make a sentence of a theme's description a rule ("bags over 30 kg are refused").
_NORMATIVE = re.compile(
    r"\b(must|cannot|can't|can only|only|not allowed|refused|rejected|required|requires?|needs?|may not|never|"
    r"no more than|at least|at most|up to|within|limits?|maximum|minimum|mandatory|forbidden|prohibited|"
    r"not accepted|charged|fee|penalt(y|ies)|deadline|expire|expires|unless|before|after|cap|caps|capped)\b", re.I)


def about_text(description: str, enforced: Sequence[Rule] = ()) -> str:
    """The theme's description as the policy's background: what the service is, without the rules it
    states. A stated rule the world enforces is a line of the policy's rules (its own ``text``); one it
    does not enforce is left out, so the policy never states a figure no rule or column backs."""
    keep = []
    for sentence in sentences(description):
        if figures(sentence) or _NORMATIVE.search(sentence):
            continue
        keep.append(sentence)
    return " ".join(keep)
