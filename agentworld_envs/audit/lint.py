"""``agentworld lint``: does a built environment make sense as a world?

Mechanical checks over a spec, its golden database and its tasks, each a named rule:

==================  ==============================================================================
``fk_naming``       a foreign-key column is named after the table it references (``<role>_<target>_id``)
``vocab_leak``      an enum/choice value belongs to a vocabulary of another, unrelated category
``column_misfit``   a column the vocabulary registry says does not belong in this category
``tool_name``       numbered or placeholder tool names (``_2``, ``_x``)
``tool_returns``    a tool description that does not say what the tool returns
``date_order``      paired dates out of order (an end before its start, an update before creation)
``status_stamp``    a status timestamp missing for a record in that status, or set before it got there
``value_range``     a value outside its semantic range (percentages, temperatures, readings, ages, counts), or
                    more of a figure than accrues in the days since its row's date (hours played, citations)
``impossible``      amounts that must add up and do not (total = subtotal + tax + shipping; quantity x price;
                    a payslip's net = gross - tax withheld - deductions);
                    a VIN that is none (I, O or Q in it, or a wrong check digit); a route that ends where it
                    starts (a flight from JFK to JFK); a payment in a status its method never reaches
                    (authorized cash) or with a processor fee on cash or a cheque
``mime_mismatch``   a file's MIME type that does not match its extension
``word_salad``      free text of four or more words with no function word ("owner east ball Republican")
``grammar``         instruction smells: "the is <flag>", doubled words, dangling prepositions,
                    snake_case column names, "Hi, Please"
``clock_status``    a date that contradicts its record's status on the world's clock (an overdue
                    payment not yet due, an active membership that has ended, a scheduled session in
                    the past, a done one in the future), or a creation/status-change time after now
``over_cap``        a used amount above its cap in the same row (seats booked > capacity), or a paid
                    amount that does not fit its status (partially paid not strictly between 0 and due)
``same_parent``     a row naming an owner and one of its records, where the record is another owner's
``rule_history``    a seeded row in a status its business rule forbids reaching (a done investigation
                    above the fee limit; cancelled less than 48 hours before the start), except rows a
                    task set up (``data.setups``)
``over_quota``      a parent holding more open children than its quota rule allows
``prose_number``    a number in the policy that no rule and no clock backs ("up to eight guests")
``policy_clock``    a policy that does not state the world's date
``foreign_vocab``   a value from another trade: a job title or record kind that is not the theme's
                    (Faker job titles, a renamed record's generic kinds without the theme's words), a
                    car's columns or makers on a craft that is no road vehicle (a boat with a VIN)
``prestart_stamp``  a record that has not got that far carrying a later event's stamp or an outcome (a
                    queued job with a start time or an exit code, a draft with a sent date); or work done
                    under one that has not started (a task done under a project still in its backlog)
``parent_start``    a due date before the start of the record it belongs to (rent due before the lease)
``transition_stamp`` a status change that clears the stamp of an earlier status it moves on from, or
                    writes another status's stamp (acknowledging an alarm erasing when it was triggered)
``email_name``      an e-mail address that shares no word with the name on its row
``undecided_outcome`` a finished record whose outcome still says it is not decided
``part_over_whole`` the parts of a whole (the payments of an invoice) that add up to more than it
``before_parent``   something done to or by a record before the record it belongs to was made; a record
                    last active before the latest record made under it (an account and its transactions)
``stale_status``    a record held in a passing status longer than it lasts: a session in progress that
                    started days ago, an order processing for months, a device provisioning for years; or
                    a timed event (a session, a shift, a visit) called off after it began, or done before
                    its duration was over; or a record approved, put in force or cut short after its end
                    date (a quote approved once it ran out)
``copied_figure``   a figure that is the figure of the record it points at and differs from it (a rental's
                    daily rate, an appointment's fee, an invoice's total); a claim on a payment above it; a
                    total below one of what it is for; pieces that weigh more together than their whole;
                    a hire's charge that is not its daily rate times its days, or that does not run whole days;
                    a subtotal that is not its lines', a pay run's totals that are not its payslips'
``shut_parent``     a record still open (active, scheduled, in progress) under one shut (inactive,
                    discontinued, cancelled, dropped), or made under it after the day it was shut, or
                    whose work took place there after that day (a route driven on a retired vehicle, a shift
                    run on a beamline offline since; ``semantics.down_states``); or
                    sent in after the record it was sent to closed (a survey response after its closing day)
``outside_term``    what happened under a record's cover or during its run dated outside its term (a claim's
                    incident before its policy took effect or after it expired; a conversion after its
                    campaign ended)
``unreleased_parent`` something taken up from a record never put out: a bid on a draft lot (or one in review, or
                    scheduled and not open yet), a payment of a draft invoice, a review of an unpublished listing
                    (``semantics.takes_up``)
``uncompleted_parent`` something that follows a record's completion under one that never completed: a refund
                    or a dispute of a charge never captured, a return of an order not delivered, a repayment
                    or a draw on a loan still under review, denied or withdrawn (``semantics.uncompleted_states``)
``completion_order`` something that follows a record's completion dated before it completed, or made after its
                    story ended: a return requested before its order was delivered, a repayment before its loan
                    was approved, a return requested after its order was returned or still open under it
                    (``semantics.completion_states``)
``paid_twice``      a record paid for once with two payments through: a trade-in paid out twice, a notice paid
                    for twice (``semantics.paid_once``; an invoice paid in parts and a customer apart)
``past_schedule``   a place in a parent's schedule past its length, or taken twice: instalment 255 of a
                    24-month loan, two instalments 3 of one loan (``semantics.schedule_length``)
``unsettled``       a whole whose status disagrees with what its parts paid: a paid invoice whose payments
                    through fall short of its total, a partly paid one with none through, an overdue one with
                    a payment through, one marked paid before its last payment went through
                    (``semantics.settle_plan``)
``double_booked``   a person, a room or a beamline in two timed events at once (a therapist in two sessions, a
                    meeting room booked twice over; ``semantics.one_at_a_time``), events called off apart
(task headroom)     ``loop_back``, ``announced_trap``, ``skeleton_repeat``, ``filler``, ``dead_knob``,
                    ``hard_too_short``: see :mod:`agentworld_envs.tasks.lint`
==================  ==============================================================================

The world classes (``clock_status`` to ``email_name``) apply to specs whose data comes from a recipe; a
hand-built domain with a Python data generator (retail) owns its words and figures, as for vocabularies.

The rules read the same semantic tables synthesis uses (:mod:`agentworld_envs.synthesis.semantics`)
but check the built artefacts, not the generators, so a wrong generator, a hand-edited spec or a
write tool that breaks an invariant all show up.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from datetime import timedelta
from dataclasses import asdict, dataclass
from typing import Any, Iterable

import env_registry

from ..engine.datagen import (BILLING_PERIODS, LAST_ACTIVITY, amortized_split, charged_days, made_on, mime_type,
                               monthly_payment, parse_when, period_after, years_in_use)
from ..engine.language import number, singular
from ..engine.textgen import REASONS
from ..tasks.lint import TASK_RULES, check_tasks
from ..synthesis import semantics

RULES = ("fk_naming", "vocab_leak", "column_misfit", "tool_name", "tool_returns", "date_order", "status_stamp",
         "value_range", "impossible", "mime_mismatch", "word_salad", "grammar", "clock_status", "over_cap", "same_parent",
         "rule_history", "over_quota", "prose_number", "policy_clock", "foreign_vocab", "prestart_stamp", "parent_start",
         "transition_stamp", "email_name", "undecided_outcome", "part_over_whole", "before_parent", "stale_status",
         "copied_figure", "shut_parent", "outside_term", "unreleased_parent", "unsettled", "double_booked",
         "uncompleted_parent", "past_schedule", "completion_order", "paid_twice")
#: The classes that check a world's coherence (issue 23): its clock, arithmetic, rules and words.
WORLD_RULES = RULES[12:]
RULES += TASK_RULES
#: Violations kept per rule per env (the count is always exact).
MAX_EXAMPLES = 5


@dataclass(frozen=True)
class Violation:
    rule: str
    where: str
    detail: str

    def to_json(self) -> dict[str, str]:
        return asdict(self)


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# ------------------------------------------------------------------------------------------ schema


def check_fk_naming(spec: dict[str, Any]) -> Iterable[Violation]:
    for t in spec["tables"]:
        for c in t["columns"]:
            ref = c.get("references")
            if ref:
                target = ref.split(".")[0]
                if target != t["name"] and not semantics.fk_matches_target(c["name"], target):
                    yield Violation("fk_naming", f"{t['name']}.{c['name']}", f"references {target}")


def _theme_columns(name: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """``table.column`` → (module key, theme) for a synthesised env; empty for hand-built ones."""
    try:
        theme = env_registry.theme(name)
    except KeyError:
        return {}
    from ..synthesis.schema import build_entities

    out = {}
    for ent in build_entities(theme):
        for col in ent.columns:
            out[f"{ent.table}.{col['name']}"] = (ent.key, theme)
    return out


def check_vocabulary(spec: dict[str, Any], name: str) -> Iterable[Violation]:
    """Values and columns against the vocabulary registry (synthesised envs; hand-built ones own their words)."""
    theme_columns = _theme_columns(name)
    if not theme_columns:
        return
    tags = {spec.get("taxonomy", {}).get("l1"), spec.get("taxonomy", {}).get("l2"), "*"}
    index = semantics.vocabulary_index()
    recipe = spec.get("data", {}).get("tables", {})
    for t in spec["tables"]:
        for c in t["columns"]:
            values = list(c.get("enum") or [])
            gen = recipe.get(t["name"], {}).get("columns", {}).get(c["name"], {})
            if gen.get("gen") == "choice":
                values += [v for v in gen["values"] if isinstance(v, str)]
            if c["name"] == "status" or gen.get("theme_words") or semantics.is_home_column(c["name"]):
                continue   # lifecycle states are generic by design; a theme's own words are its own; ISO codes
                           # ("IT" is Italy) are no trade's words
            for v in dict.fromkeys(values):
                owners = index.get(str(v))
                if owners and not owners & tags:
                    yield Violation("vocab_leak", f"{t['name']}.{c['name']}",
                                    f"{v!r} belongs to {', '.join(sorted(owners))[:80]}")
    for key, (module, theme) in theme_columns.items():
        column = key.split(".", 1)[1]
        fits, _ = semantics.vocabulary_for(theme, module, column)
        if not fits and column != env_registry.entity_modules()[module]["label"]:
            yield Violation("column_misfit", key, f"{module}.{column} does not fit {theme['l1']}/{theme['l2']}")


def check_tools(spec: dict[str, Any]) -> Iterable[Violation]:
    for tool in spec["tools"]:
        if re.search(r"(_[2-9]|_x)$", tool["name"]):
            yield Violation("tool_name", tool["name"], "numbered or placeholder name")
        if "return" not in tool.get("description", "").lower():
            yield Violation("tool_returns", tool["name"], "description does not say what it returns")


# --------------------------------------------------------------------------------------------- data


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({q(table)})")]


def _recipe_gen(spec: dict[str, Any], table: str, column: str, kind: str) -> dict[str, Any] | None:
    """The ``kind`` generator a column of the spec's data recipe is drawn from (at any depth), or None."""
    todo: list[Any] = [((spec.get("data") or {}).get("tables", {}).get(table) or {}).get("columns", {}).get(column)]
    while todo:
        g = todo.pop()
        if isinstance(g, dict):
            if g.get("gen") == kind:
                return g
            todo += [v for v in g.values() if isinstance(v, (dict, list))]
        elif isinstance(g, list):
            todo += g
    return None


def _date_columns(conn: sqlite3.Connection, table: str, cols: list[str]) -> list[str]:
    out = []
    for c in cols:
        v = conn.execute(f"SELECT {q(c)} FROM {q(table)} WHERE {q(c)} IS NOT NULL LIMIT 1").fetchone()
        if v and isinstance(v[0], str) and re.fullmatch(r"\d{4}-\d\d-\d\d(T\d\d:\d\d:\d\dZ?)?", v[0]):
            out.append(c)
    return out


def _workflow_of(spec: dict[str, Any], table: str) -> dict[str, Any] | None:
    """The lifecycle a table's transition tools implement (states from its enum, moves from the tools)."""
    moves = [t["impl"] for t in spec["tools"] if t["impl"].get("kind") == "transition" and t["impl"].get("table") == table]
    if not moves:
        return None
    col = next(c for t in spec["tables"] if t["name"] == table for c in t["columns"] if c["name"] == moves[0]["column"])
    return {"states": list(col.get("enum") or []), "transitions": [{"from": m["from"], "to": m["to"]} for m in moves],
            "column": moves[0]["column"]}


def _unchanged_since_made(spec: dict[str, Any], conn: sqlite3.Connection, table: str, dates: list[str]
                          ) -> Iterable[Violation]:
    """Rows still in the status their create tool makes them in, which no change leads back to, whose status
    "changed" more than a day after the last thing that happened to them (made, triggered, collected): a
    pending sign-up that changed status two years after it was created, yet is still pending."""
    first = next((t["impl"]["values"].get("status") for t in spec["tools"] if t["impl"].get("kind") == "create"
                  and t["impl"].get("table") == table and isinstance(t["impl"].get("values"), dict)), None)
    wf = _workflow_of(spec, table)
    made = [c for c in dates if c != "status_changed_at" and semantics.happens_before_change(c)]
    if not first or wf is None or not made or any(m["to"] == first for m in wf["transitions"]):
        return
    now = parse_when(spec["now"])
    late = 0
    for row in conn.execute(f"SELECT status_changed_at, {', '.join(q(c) for c in made)} FROM {q(table)} "
                            f"WHERE {q(wf['column'])} = ? AND status_changed_at IS NOT NULL", (first,)):
        passed = [parse_when(v) for v in row[1:] if isinstance(v, str) and parse_when(v) <= now]
        if passed and (parse_when(row[0]) - max(passed)).total_seconds() > 86400:
            late += 1
    if late:
        yield Violation("date_order", f"{table}.status_changed_at",
                        f"{late} rows still {first} whose status changed more than a day after they were made")


def check_data(spec: dict[str, Any], conn: sqlite3.Connection, tables: Iterable[str] | None = None,
               modules: dict[str, str] | None = None) -> Iterable[Violation]:
    """``modules``: table → entity module key (synthesised envs), which tells whose birth dates a table holds."""
    names = list(tables or (t["name"] for t in spec["tables"]))
    modules = modules or {}
    for table in names:
        cols = _columns(conn, table)
        dates = _date_columns(conn, table, cols)
        for earlier, later, strict in semantics.ordered_pairs([d for d in dates if "birth" not in d]):
            op = "<=" if strict else "<"
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(earlier)} IS NOT NULL AND {q(later)} IS NOT NULL "
                             f"AND substr({q(later)}, 1, min(length({q(later)}), length({q(earlier)}))) {op} "
                             f"substr({q(earlier)}, 1, min(length({q(later)}), length({q(earlier)})))").fetchone()[0]
            if n:
                yield Violation("date_order", f"{table}.{later}", f"{n} rows with {later} before {earlier}")
        born = next((c for c in semantics.BIRTH_COLUMNS if c in dates), None)
        for made in [c for c in dates if c != born and semantics.is_made_column(c)] if born else ():
            # nobody registers or enrols before being born
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE substr({q(made)}, 1, 10) < substr({q(born)}, 1, 10)"
                             ).fetchone()[0]
            if n:
                yield Violation("date_order", f"{table}.{made}", f"{n} rows with {made} before {born}")
        wf = _workflow_of(spec, table)
        stamps = semantics.status_stamps(cols, wf) if wf else {}
        if "status_changed_at" in cols:
            # a status moves after every date of the record that has passed: no alert acknowledged before it
            # was triggered, no interview under way before its day
            now = spec["now"]
            for col in dates:
                if col == "status_changed_at" or not semantics.happens_before_change(col):
                    continue
                n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(col)} IS NOT NULL AND status_changed_at IS NOT NULL "
                                 f"AND substr({q(col)}, 1, 10) <= ? AND substr(status_changed_at, 1, 10) < substr({q(col)}, 1, 10)",
                                 (now[:10],)).fetchone()[0]
                if n:
                    yield Violation("date_order", f"{table}.status_changed_at", f"{n} rows whose status changed before {col}")
            yield from _unchanged_since_made(spec, conn, table, dates)
        if wf:
            st = wf["column"]
            for col, states in stamps.items():
                marks = ", ".join("?" * len(states))
                missing = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(st)} = ? AND {q(col)} IS NULL",
                                       (col.rsplit("_", 1)[0],)).fetchone()[0]
                early = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(col)} IS NOT NULL AND {q(st)} NOT IN ({marks})",
                                     tuple(states)).fetchone()[0]
                if missing or early:
                    yield Violation("status_stamp", f"{table}.{col}",
                                    f"{missing} rows in that status without it, {early} rows with it in another status")
        yield from _check_ranges(conn, table, cols, dates, spec["now"][:10], f"{singular(table)} {modules.get(table, '')}",
                                 semantics.stated_min_age(spec.get("description", ""), table))
        for total, parts in semantics.TOTALS:
            present = [p for p in parts if p in cols]
            if total in cols and parts[0] in present:
                expr = " + ".join(f"COALESCE({q(p)}, 0)" for p in present)
                n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(total)} IS NOT NULL AND "
                                 f"abs({q(total)} - ({expr})) > 0.011").fetchone()[0]
                if n:
                    yield Violation("impossible", f"{table}.{total}", f"{n} rows whose {total} is not {' + '.join(present)}")
        for net, gross, cuts in semantics.NET_PAY:
            taken = [c for c, _ in cuts if c in cols]
            if {net, gross} <= set(cols):
                # a payslip pays out its gross less what was withheld and deducted, none of it more than the gross
                expr = "".join(f" - COALESCE({q(c)}, 0)" for c in taken)
                n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(net)} IS NOT NULL AND (abs({q(net)} - "
                                 f"({q(gross)}{expr})) > 0.011 OR {q(net)} < 0)").fetchone()[0]
                if n:
                    yield Violation("impossible", f"{table}.{net}", f"{n} rows whose {net} is not {gross}"
                                                                    f"{''.join(' - ' + c for c in taken)}, or below 0")
        if {"quantity", "unit_price", "line_total"} <= set(cols):
            # less the line's discount where it has one
            off = " * (1 - coalesce(discount_percent, 0) / 100.0)" if "discount_percent" in cols else ""
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE line_total IS NOT NULL AND "
                             f"abs(line_total - quantity * unit_price{off}) > 0.011").fetchone()[0]
            if n:
                yield Violation("impossible", f"{table}.line_total", f"{n} rows whose line_total is not quantity x unit_price"
                                                                   f"{' less its discount' if off else ''}")
        if "file_name" in cols and "mime_type" in cols:
            bad = sum(1 for f, m in conn.execute(f"SELECT file_name, mime_type FROM {q(table)} WHERE file_name IS NOT NULL")
                      if m != mime_type(f))
            if bad:
                yield Violation("mime_mismatch", f"{table}.mime_type", f"{bad} rows whose MIME type does not match the file")
        if "vin" in cols:
            bad = sum(1 for (v,) in conn.execute(f"SELECT vin FROM {q(table)} WHERE vin IS NOT NULL") if not _valid_vin(v))
            if bad:
                yield Violation("impossible", f"{table}.vin", f"{bad} rows whose vin is no vehicle identification number")
        yield from _check_text(conn, table, cols, spec)


#: ISO 3779 letters' values and the positions' weights of a VIN's check digit (its 9th character); I, O and Q
#: are never used.
_VIN_VALUES = {**{str(d): d for d in range(10)}, **dict(zip("ABCDEFGH", range(1, 9))), **dict(zip("JKLMN", range(1, 6))),
               "P": 7, "R": 9, **dict(zip("STUVWXYZ", range(2, 10)))}
_VIN_WEIGHTS = (8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2)


def _valid_vin(vin: Any) -> bool:
    if not isinstance(vin, str) or len(vin) != 17 or any(c not in _VIN_VALUES for c in vin):
        return False
    check = sum(_VIN_VALUES[c] * w for c, w in zip(vin, _VIN_WEIGHTS)) % 11
    return vin[8] == ("X" if check == 10 else str(check))


_PERCENT = re.compile(r"(^|_)(pct|percent|percentage)($|_)")
_TEMPERATURE = re.compile(r"(^|_)(temp|temperature)(_|$)|_c$")
_NON_NEGATIVE = re.compile(r"(_count|quantity|qty|_minutes|_hours|_seconds|_ms|duration|price|fee|cost|^hours$|^minutes$)")


def _check_ranges(conn: sqlite3.Connection, table: str, cols: list[str], dates: list[str], today: str,
                  who: str, stated: int | None = None) -> Iterable[Violation]:
    """``who``: the words naming the table's records (and its module), which set the plausible ages; ``stated``: the
    minimum age the business's description sets for them (members of a wine club are 21 or older)."""
    def count(where: str, params: tuple = ()) -> int:
        return conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {where}", params).fetchone()[0]

    for c in cols:
        if c == "id" or c.endswith("_id"):
            continue
        if _PERCENT.search(c) and count(f"typeof({q(c)}) IN ('integer','real') AND ({q(c)} < 0 OR {q(c)} > 100)"):
            yield Violation("value_range", f"{table}.{c}", "percentage outside 0-100")
        if _TEMPERATURE.search(c) and count(f"typeof({q(c)}) IN ('integer','real') AND ({q(c)} < -200 OR {q(c)} > 150)"):
            yield Violation("value_range", f"{table}.{c}", "temperature outside -200..150 °C")
        if _NON_NEGATIVE.search(c) and count(f"typeof({q(c)}) IN ('integer','real') AND {q(c)} < 0"):
            yield Violation("value_range", f"{table}.{c}", "negative amount, count or duration")
        if c == "age" and count(f"typeof({q(c)}) = 'integer' AND ({q(c)} < 0 OR {q(c)} > 120)"):
            yield Violation("value_range", f"{table}.{c}", "age outside 0-120")
    if "metric" in cols and "value" in cols:
        for metric, (lo, hi) in semantics.METRIC_RANGES.items():
            n = count("metric = ? AND (value < ? OR value > ?)", (metric, lo, hi))
            if n:
                yield Violation("value_range", f"{table}.value", f"{n} {metric} readings outside {lo}..{hi}")
    prob = next((c for c in semantics.DEAL_ODDS if c in cols), None)
    if "stage" in cols and prob:
        # a won deal is certain and a lost one is not to be won; both have closed by today
        n = count(f"(stage = 'closed_won' AND {q(prob)} != 100) OR (stage = 'closed_lost' AND {q(prob)} != 0)")
        if n:
            yield Violation("impossible", f"{table}.{prob}", f"{n} closed deals whose {prob} is not 100 (won) or 0 (lost)")
        close = next((c for c in semantics.DEAL_CLOSE if c in cols), None)
        n = count(f"stage IN ('closed_won', 'closed_lost') AND substr({q(close)}, 1, 10) > ?", (today,)) if close else 0
        if n:
            yield Violation("clock_status", f"{table}.{close}", f"{n} closed deals expected to close after today")
    if "analyte" in cols and "unit" in cols:
        offered = {u for (u,) in conn.execute(f"SELECT DISTINCT unit FROM {q(table)}")}
        for analyte, (unit, lo, hi) in semantics.ANALYTES.items():
            if unit not in offered:
                continue   # this service reports in other units: the pairing cannot be checked
            n = count("analyte = ? AND (unit != ? OR value < ? OR value > ?)", (analyte, unit, lo, hi))
            if n:
                yield Violation("value_range", f"{table}.value", f"{n} {analyte} results with the wrong unit or range")
        flag = next((c for c in semantics.FLAG_COLUMNS if c in cols), None)
        flags = {f for (f,) in conn.execute(f"SELECT DISTINCT {q(flag)} FROM {q(table)}")} if flag else set()
        for analyte, (lo, hi) in semantics.REFERENCE_RANGES.items() if set(semantics.RANGE_FLAGS) <= flags else ():
            if semantics.ANALYTES[analyte][0] not in offered:
                continue   # reported in other units: its range says nothing of these values
            # a result is flagged by where its value lies against the reference range (149 platelets are low)
            n = count(f"analyte = ? AND value IS NOT NULL AND {q(flag)} IN ('low', 'normal', 'high') AND {q(flag)} != "
                      f"CASE WHEN value < ? THEN 'low' WHEN value > ? THEN 'high' ELSE 'normal' END", (analyte, lo, hi))
            if n:
                yield Violation("impossible", f"{table}.{flag}", f"{n} {analyte} results flagged against their "
                                                               f"reference range {lo:g}-{hi:g}")
    for c in cols:
        if "birth" in c and c in dates:
            # an age group with infants and children in it (a passenger's, a rider's) starts at birth
            kind = semantics.person_kind(who)
            lo = 0 if "age_group" in cols else semantics.AGE_RANGES[kind][0]
            lo = max(lo, stated) if stated and kind != "animal" else lo
            n = count(f"{q(c)} IS NOT NULL AND ((julianday(?) - julianday({q(c)})) / 365.25 > 120 "
                      f"OR (julianday(?) - julianday({q(c)})) / 365.25 < ?)", (today, today, lo))
            if n:
                yield Violation("value_range", f"{table}.{c}", f"{n} birth dates giving an age outside {lo}-120")


_FREE_TEXT_WORDS = ("description", "note", "comment", "summary", "body", "message", "reason", "memo", "feedback",
                   "instruction", "justification", "request", "agenda", "purpose", "hypothesis", "goals", "bio",
                   "letter", "reply", "changelog", "criteria")
_FUNCTION_WORDS = frozenset(
    "a an the of to for and or with on in at by from is are was be this that it its as please not no all our your "
    "we i you they them their has have had will can could should would may up out into over after before about "
    "just next today per via than then so".split())


def _check_text(conn: sqlite3.Connection, table: str, cols: list[str], spec: dict[str, Any]) -> Iterable[Violation]:
    spec_cols = {c["name"]: c for t in spec["tables"] if t["name"] == table for c in t["columns"]}
    if semantics.reason_purpose(cols):
        # a visit's or a referral's reason says why it came about, not why something was cancelled
        n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE reason IN ({', '.join('?' * len(REASONS))})",
                         REASONS).fetchone()[0]
        if n:
            yield Violation("foreign_vocab", f"{table}.reason", f"{n} rows whose reason is a cancellation's")
    for c in cols:
        col = spec_cols.get(c, {})
        # Free text only: names and titles are proper nouns, which need no function words.
        if col.get("type") != "TEXT" or col.get("enum") or semantics.text_kind(c) == "title" \
                or not any(w in c for w in _FREE_TEXT_WORDS):
            continue
        bad = 0
        for (v,) in conn.execute(f"SELECT {q(c)} FROM {q(table)} WHERE typeof({q(c)}) = 'text' LIMIT 200"):
            tokens = [w.strip(".,;:!?()\"'") for w in v.split()]
            if len(tokens) >= 4 and not any(w.lower() in _FUNCTION_WORDS for w in tokens) and " " in v:
                bad += 1
        if bad:
            yield Violation("word_salad", f"{table}.{c}", f"{bad} values read as random words")


# -------------------------------------------------------------------------------------------- tasks

_GRAMMAR = (
    (re.compile(r"\bthe (is|has)\s+\w+", re.I), "'the is/has <flag>'"),
    (re.compile(r"\b(\w{2,})\s+\1\b"), "doubled word"),
    # (a word joined by a hyphen is part of a name: the repository "option-pm-someone-a")
    (re.compile(r"(?<![\w./-])(of|the|a|an)\s*[.?!](\s|$)"), "dangling word before the full stop"),
    (re.compile(r"\bthe \w+ (on|at|by) of\b"), "a date column used as a noun ('the listed on of')"),
    (re.compile(r"(?<![\w./-])a (?!one\b|uni|use|usu|uti|ure|eu|once)[aeiou]\w*"), "'a' before a vowel"),
    (re.compile(r"\b(Hi|Hello|Hey there),\s+(Please|Could|Can|What|Which|How|Among|Several|For|Look|Of|Find|List|"
                r"Count|Total|Set|Update|Mark|Add|The|There|This|My|Our|Note|Quick|When|Is|Does|Who)\b"),
     "capital after a greeting comma"),
    (re.compile(r"\b(start|stop|end|mark|request|return|submit|bring|check|set|flag|give|make|pick|record|send)"
                r" (maintenance|review|changes|info|online|exception|notice|offer|partial|pending) (the|a|an)\b"),
     "multi-word verb without its preposition"),
)


def check_instructions(spec: dict[str, Any], tasks: list[dict[str, Any]]) -> Iterable[Violation]:
    columns = {c["name"] for t in spec["tables"] for c in t["columns"] if "_" in c["name"]}
    for task in tasks:
        text = task.get("instruction", "")
        for pattern, what in _GRAMMAR:
            m = pattern.search(text)
            # (a doubled number, or a name such as "Scott Scott", is no slip)
            if m and not (what == "doubled word" and (m.group(1).isdigit() or m.group(1)[0].isupper())):
                yield Violation("grammar", task["id"], f"{what}: {text[max(0, m.start() - 30): m.end() + 20]!r}")
        for word in re.findall(r"\b[a-z]+(?:_[a-z]+)+\b", text):
            if word in columns:
                yield Violation("grammar", task["id"], f"column name {word!r} in the instruction")
                break


# ------------------------------------------------------------------------------------------- world


def _entities(name: str) -> dict[str, Any]:
    """table → synthesis entity of a synthesised env (its workflow and module), empty for hand-built ones."""
    try:
        theme = env_registry.theme(name)
    except KeyError:
        return {}
    from ..synthesis.schema import build_entities

    return {e.table: e for e in build_entities(theme)}


def check_clock(spec: dict[str, Any], conn: sqlite3.Connection, entities: dict[str, Any]) -> Iterable[Violation]:
    """Dates against the world's clock: each status's dates on the right side of now (the workflow's
    ``clock`` map), and nothing made or changed after now."""
    now = spec["now"]
    today = now[:10]
    for t in spec["tables"]:
        table = t["name"]
        cols = _columns(conn, table)
        dates = _date_columns(conn, table, cols)
        for col in dates:
            if col == "status_changed_at" or (semantics.date_rank(col) == 0 and semantics.is_past_column(col)):
                n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE (length({q(col)}) > 10 AND {q(col)} > ?) "
                                 f"OR (length({q(col)}) = 10 AND {q(col)} > ?)", (now, today)).fetchone()[0]
                if n:
                    yield Violation("clock_status", f"{table}.{col}", f"{n} rows dated after now ({now})")
        found = semantics.terms_columns(cols)
        if found:
            # net 30 is due 30 days after it was issued
            terms, issued, due = found
            cases = " ".join(f"WHEN '{v}' THEN {n}" for v, n in semantics.TERMS_DAYS.items())
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(issued)} IS NOT NULL AND {q(due)} IS NOT NULL AND "
                             f"{q(terms)} IN ({', '.join(repr(v) for v in semantics.TERMS_DAYS)}) AND "
                             f"julianday(substr({q(due)}, 1, 10)) - julianday(substr({q(issued)}, 1, 10)) != "
                             f"CASE {q(terms)} {cases} END").fetchone()[0]
            if n:
                yield Violation("clock_status", f"{table}.{due}", f"{n} rows whose {due} is not {issued} plus their {terms}")
        ent = entities.get(table)
        if "is_active" in cols:
            for col in dates:
                if semantics.clock_role(col) == "end":
                    n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE is_active = 1 AND {q(col)} IS NOT NULL "
                                     f"AND substr({q(col)}, 1, 10) <= ?", (today,)).fetchone()[0]
                    if n:
                        yield Violation("clock_status", f"{table}.{col}", f"{n} active rows whose {col} has passed")
        if ent is None or not ent.workflow or "status" not in cols:
            continue
        passing = semantics.passing_windows(cols, dates, ent.workflow, semantics.status_stamps(cols, ent.workflow))
        yield from _stale(conn, table, cols, dates, ent.workflow, passing, now)
        end = next((c for c in dates if semantics.clock_role(c) == "end"), None)
        early = semantics.ends_after_change(ent.workflow, end) if "status_changed_at" in cols else []
        if early:
            # approved, put in force or cut short before the end date: no quote approved once it ran out
            marks = ", ".join("?" * len(early))
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE status IN ({marks}) AND {q(end)} IS NOT NULL AND "
                             f"(CASE WHEN length({q(end)}) = 10 THEN substr(status_changed_at, 1, 10) ELSE status_changed_at "
                             f"END) > {q(end)}", early).fetchone()[0]
            if n:
                yield Violation("stale_status", f"{table}.status_changed_at",
                                f"{n} rows {'/'.join(early)} after their {end}")
        for col in dates:
            past, future = semantics.clock_constraints(ent.workflow, col)
            for state, days in semantics.eta_days(col, ent.workflow.get("states", ())).items():
                # what is under way arrives soon: a parcel out for delivery is not expected in two months
                last = (parse_when(now).date() + timedelta(days=days)).isoformat()
                n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE status = ? AND substr({q(col)}, 1, 10) > ?",
                                 (state, last)).fetchone()[0]
                if n:
                    yield Violation("stale_status", f"{table}.{col}", f"{n} rows {state} expected after {last}")
            # an event in progress started earlier today (checked by ``_stale``)
            past = [s for s in past if "minutes" not in passing.get(col, {}).get(s, {})]
            for states, op, side in ((past, ">=", "on or after today"), (future, "<=", "on or before today")):
                if not states:
                    continue
                marks = ", ".join("?" * len(states))
                n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE status IN ({marks}) AND {q(col)} IS NOT NULL "
                                 f"AND substr({q(col)}, 1, 10) {op} ?", (*states, today)).fetchone()[0]
                if n:
                    yield Violation("clock_status", f"{table}.{col}",
                                    f"{n} rows in {'/'.join(states)} with {col} {side} ({today})")


def _stale(conn: sqlite3.Connection, table: str, cols: list[str], dates: list[str], workflow: dict[str, Any],
           passing: dict[str, dict[str, dict[str, Any]]], now: str) -> Iterable[Violation]:
    """Records in a passing status (``semantics.passing_windows``) that got there longer ago than it lasts, and
    timed events called off after they began."""
    when = parse_when(now)
    for col, windows in passing.items():
        for state, window in windows.items():
            if "minutes" in window:
                lo = when - timedelta(minutes=window["minutes"])
                where = (f"(length({q(col)}) = 10 AND {q(col)} != ?) OR (length({q(col)}) > 10 AND "
                         f"({q(col)} < ? OR {q(col)} > ?))")
                args: tuple[Any, ...] = (now[:10], lo.strftime("%Y-%m-%dT%H:%M:%SZ"), now)
                what = f"started more than {window['minutes']} minutes before now"
            else:
                # (a week started on its Monday, up to 6 days before the window opened)
                slack = semantics.WEEK_SLACK_DAYS if semantics.WEEK_START.search(col) else 0
                first = (when.date() + timedelta(days=window["days"][0] - slack)).isoformat()
                where, args, what = f"substr({q(col)}, 1, 10) < ?", (first,), f"before {first}"
            if "minutes" in window and "status_changed_at" in cols:
                where += f" OR substr(status_changed_at, 1, 10) < substr({q(col)}, 1, 10)"   # in progress before it began
                what += " (or got there before it began)"
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE status = ? AND {q(col)} IS NOT NULL "
                             f"AND ({where})", (state, *args)).fetchone()[0]
            if n:
                yield Violation("stale_status", f"{table}.{col}", f"{n} rows {state} with {col} {what}")
    called_off = sorted(semantics.called_off_before_start(workflow))
    starts = semantics.event_starts(cols, dates)
    ahead = sorted(semantics.called_off_ahead(workflow)) if not starts else []
    begins = next((c for c in dates if semantics.clock_role(c) == "start"), None) if ahead else None
    for col, states in [(begins, ahead)] if begins and "status_changed_at" in cols else ():
        # a hire cancelled only from requested or confirmed was cancelled before it was picked up
        n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE status IN ({', '.join('?' * len(states))}) AND "
                         f"{q(col)} IS NOT NULL AND ((length({q(col)}) = 10 AND substr(status_changed_at, 1, 10) > "
                         f"{q(col)}) OR (length({q(col)}) > 10 AND status_changed_at >= {q(col)}))", states).fetchone()[0]
        if n:
            yield Violation("stale_status", f"{table}.{col}", f"{n} rows {'/'.join(states)} after their {col}")
    for col in starts if "status_changed_at" in cols and called_off else ():
        # called off before it began: by the day of a date-only start, or before the moment it starts
        marks = ", ".join("?" * len(called_off))
        n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE status IN ({marks}) AND {q(col)} IS NOT NULL AND "
                         f"((length({q(col)}) = 10 AND substr(status_changed_at, 1, 10) > {q(col)}) OR "
                         f"(length({q(col)}) > 10 AND status_changed_at >= {q(col)}))", called_off).fetchone()[0]
        if n:
            yield Violation("stale_status", f"{table}.{col}", f"{n} rows {'/'.join(called_off)} after their {col}")
    ended = sorted(semantics.ENDED_EVENT_STATES & set(workflow.get("states", ())))
    started = sorted(semantics.NOW_STATES & set(workflow.get("states", ())))
    at = next((c for c in cols if semantics.TIME_OF_DAY.match(c)), None)
    for col in starts[:1] if "status_changed_at" in cols and at else ():
        # a dated run with its time of day apart ("2026-05-05", "08:00"): done or under way after that moment,
        # called off before it, and under way now only once it has come
        moment = f"({q(col)} || 'T' || {q(at)})"
        dated = f"length({q(col)}) = 10 AND {q(at)} GLOB '[0-2][0-9]:[0-5][0-9]'"
        for states, wrong, what in [(ended + started, f"status_changed_at < {moment}", f"before their {col} and {at}"),
                                    (called_off, f"status_changed_at >= {moment}", f"after their {col} and {at}"),
                                    (started, f"{moment} > ?", f"with {col} and {at} still to come")]:
            if not states:
                continue
            args = (*states, now[:16]) if "?" in wrong else tuple(states)
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE status IN ({', '.join('?' * len(states))}) AND {dated} "
                             f"AND {wrong}", args).fetchone()[0]
            if n:
                yield Violation("stale_status", f"{table}.{at}", f"{n} rows {'/'.join(states)} {what}")
    lasts = next((c for c in cols if semantics.STAY_LENGTH.match(c)), None)
    length = semantics.event_length(cols)
    for col in starts[:1] if "status_changed_at" in cols and ended else ():
        # a session that took place (or was missed) is closed within a day or so, not weeks later; a stay once
        # its nights are over, and not before
        stayed = [s for s in ended if s in semantics.STAYED_STATES]
        nights = f"(CASE WHEN status IN ({', '.join(repr(s) for s in stayed)}) AND typeof({q(lasts)}) = 'integer' " \
                 f"THEN {q(lasts)} ELSE 0 END)" if lasts and stayed else "0"
        marks = ", ".join("?" * len(ended))
        per_day = {"minutes": 1440, "hours": 24, "seconds": 86400}[length[1]] if length else 0
        lasted = f"(CASE WHEN typeof({q(length[0])}) IN ('integer', 'real') THEN {q(length[0])} / {per_day}.0 ELSE 0 END)" \
            if length else "0"   # (a shift is closed once it is over)
        n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE status IN ({marks}) AND {q(col)} IS NOT NULL AND "
                         f"julianday(status_changed_at) - julianday({q(col)}) - {nights} - {lasted} > 2",
                         ended).fetchone()[0]
        if n:
            yield Violation("stale_status", f"{table}.{col}", f"{n} rows {'/'.join(ended)} recorded days after their {col}")
        if nights != "0":
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE status IN ({marks}) AND length({q(col)}) = 10 AND "
                             f"date({q(col)}, '+' || {nights} || ' days') > substr(status_changed_at, 1, 10)",
                             ended).fetchone()[0]
            if n:
                yield Violation("stale_status", f"{table}.{lasts}", f"{n} rows {'/'.join(stayed)} before their {lasts} "
                                                                    f"were over")
    stayed = [s for s in ended if s in semantics.STAYED_STATES]
    for col in starts[:1] if "status_changed_at" in cols and length and stayed else ():
        # a shift or a flight is done once it is over: its start (and time of day) plus its duration
        dur, unit = length
        early = 0
        for start, clock, span, changed in conn.execute(
                f"SELECT {q(col)}, {q(at) if at else 'NULL'}, {q(dur)}, status_changed_at FROM {q(table)} WHERE status IN "
                f"({', '.join('?' * len(stayed))}) AND {q(col)} IS NOT NULL", stayed):
            if not isinstance(span, (int, float)) or not changed:
                continue
            moment = parse_when(start)
            if len(start) == 10 and isinstance(clock, str) and re.fullmatch(r"\d\d:\d\d", clock):
                moment = moment.replace(hour=int(clock[:2]), minute=int(clock[3:]))
            early += parse_when(changed) < moment + timedelta(**{unit: span})
        if early:
            yield Violation("stale_status", f"{table}.{dur}", f"{early} rows {'/'.join(stayed)} before their {dur} was over")
    if "status_changed_at" in cols:
        dwell = semantics.dwell_days(cols, workflow)
        for state in workflow.get("states", ()):
            days = dwell.get(state)
            if days is None:
                continue
            first = (when.date() - timedelta(days=days)).isoformat()
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE status = ? AND substr(status_changed_at, 1, 10) < ?",
                             (state, first)).fetchone()[0]
            if n:
                yield Violation("stale_status", f"{table}.status_changed_at",
                                f"{n} rows {state} for more than {days} days")


def _same_row(conn: sqlite3.Connection, table: str, cols: set[str], pairs: Iterable[tuple[str, str]],
              op: str) -> Iterable[tuple[str, str, int]]:
    """``(a, b, rows)`` for each pair of columns of ``table`` whose rows hold ``a op b`` (``>``: a used amount above
    its cap), where there are any."""
    for a, b in pairs:
        if a in cols and b in cols:
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(a)} {op} {q(b)}").fetchone()[0]
            if n:
                yield a, b, n


def check_arithmetic(spec: dict[str, Any], conn: sqlite3.Connection, entities: dict[str, Any]) -> Iterable[Violation]:
    """Used amounts within their caps; paid amounts that fit the record's status; one tax rate per world."""
    for t in spec["tables"]:
        table = t["name"]
        cols = set(_columns(conn, table))
        for used, cap, n in _same_row(conn, table, cols, semantics.CAPS, ">"):
            yield Violation("over_cap", f"{table}.{used}", f"{n} rows with {used} above {cap}")
        pay = next((c for c in semantics.PAY_COLUMNS if c in cols), None) if "job_title" in cols else None
        if pay:
            # pay rises with seniority: no assistant above every head's pay
            levels: dict[int, list[float]] = {}
            for title, lo, hi in conn.execute(f"SELECT job_title, MIN({q(pay)}), MAX({q(pay)}) FROM {q(table)} "
                                              f"WHERE {q(pay)} IS NOT NULL GROUP BY 1"):
                level = semantics.seniority(title)
                levels.setdefault(level, [lo, hi])
                levels[level] = [min(levels[level][0], lo), max(levels[level][1], hi)]
            bad = [(a, b) for a in levels for b in levels if b - a >= 2 and levels[a][1] > levels[b][0]]
            if bad:
                yield Violation("value_range", f"{table}.{pay}", f"{pay} of seniority {bad[0][0]} above that of {bad[0][1]}")
            if "employment_type" in cols:
                n = sum(1 for (t,) in conn.execute(f"SELECT job_title FROM {q(table)} WHERE employment_type = 'intern'")
                        if semantics.seniority(t) >= 3)
                if n:
                    yield Violation("value_range", f"{table}.employment_type", f"{n} interns with a senior or head title")
        scale = semantics.weight_range(table, f"{spec.get('title', '')} {spec.get('description', '')}")
        for col in (c for c in semantics.WEIGHT_COLUMNS if c in cols) if scale else ():
            # what a thing weighs fits what it is; a piece of a whole may weigh less than such a thing alone
            lo, hi, _ = scale
            piece = any(semantics.figure_link(table, col, (r.get("references") or "").split(".")[0], col) == "part"
                        for r in t["columns"] if r.get("references"))
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(col)} > ? OR ({q(col)} < ? AND NOT ?)",
                             (hi, lo, piece)).fetchone()[0]
            if n:
                yield Violation("value_range", f"{table}.{col}", f"{n} rows weighing outside {lo:g} to {hi:g} kg")
        born = next((c for c in ("date_of_birth", "birth_date", "dob") if c in cols), None)
        for group, (lo, hi) in semantics.AGE_GROUPS.items() if born and "age_group" in cols else ():
            # an infant is under two, a senior over 65 (on the world's date, with a day's margin)
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE age_group = ? AND {q(born)} IS NOT NULL AND "
                             f"((julianday(?) - julianday({q(born)})) / 365.25 < ? OR "
                             f"(julianday(?) - julianday({q(born)})) / 365.25 > ?)",
                             (group, spec["now"][:10], lo, spec["now"][:10], hi + 1.01)).fetchone()[0]
            if n:
                yield Violation("value_range", f"{table}.{born}", f"{n} {group} rows aged outside {lo} to {hi}")
        tier_col = next((c for c in ("loyalty_tier", "tier") if c in cols), None)
        earned = next((c for c in ("lifetime_spend", "lifetime_points", "total_spent") if c in cols), None) if tier_col else None
        if earned:
            bands = conn.execute(f"SELECT {q(tier_col)}, MIN({q(earned)}), MAX({q(earned)}) FROM {q(table)} "
                                 f"WHERE {q(earned)} IS NOT NULL GROUP BY 1").fetchall()
            ranked = sorted((b for b in bands if b[0] in semantics.TIER_ORDER), key=lambda b: semantics.TIER_ORDER.index(b[0]))
            if len(ranked) == len(bands) > 1 and any(a[2] > b[1] for a, b in zip(ranked, ranked[1:])):
                yield Violation("value_range", f"{table}.{earned}", f"{tier_col} does not rise with {earned}: " + ", ".join(
                    f"{t} {lo:g}-{hi:g}" for t, lo, hi in ranked))
        sized = semantics.headcount_column(cols) if "tier" in cols else None
        tiers = {r[0] for r in conn.execute(f"SELECT DISTINCT tier FROM {q(table)}")} if sized else set()
        for tier, (lo, hi) in semantics.TIER_HEADCOUNT.items() if tiers and tiers <= set(semantics.TIER_HEADCOUNT) else ():
            # a company's headcount fits its tier
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE tier = ? AND ({q(sized)} < ? OR {q(sized)} > ?)",
                             (tier, lo, hi)).fetchone()[0]
            if n:
                yield Violation("over_cap", f"{table}.{sized}", f"{n} {tier} rows outside {lo} to {hi} employees")
        for col, year, per_year in semantics.YEARLY:
            if col in cols and year in cols:
                # a vehicle runs up no more than a year's most each year since its model year
                cap = {y: per_year * years_in_use(y, parse_when(spec["now"])) for y, in
                       conn.execute(f"SELECT DISTINCT {q(year)} FROM {q(table)} WHERE {q(year)} IS NOT NULL")}
                n = sum(1 for y, v in conn.execute(f"SELECT {q(year)}, {q(col)} FROM {q(table)} WHERE {q(col)} IS NOT NULL "
                                                   f"AND {q(year)} IS NOT NULL") if isinstance(y, int) and v > cap[y] + 0.5)
                if n:
                    yield Violation("value_range", f"{table}.{col}", f"{n} rows with more {col} than {per_year:g} a year "
                                                                     f"since their {year}")
        wf = _workflow_of(spec, table) if "status" in cols else None
        for st, window in semantics.settle_windows(cols, wf).items():
            # a payment settles within days of being received
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE status = ? AND julianday(status_changed_at) > "
                             f"julianday(received_at) + ?", (st, window["days"])).fetchone()[0]
            if n:
                yield Violation("stale_status", f"{table}.status_changed_at", f"{n} rows {st} more than {window['days']} "
                                                                              "days after they were received")
        outcomes = [o for o, in conn.execute(f"SELECT DISTINCT outcome FROM {q(table)}")] if "outcome" in cols else []
        for col, decider, states, value in semantics.status_values(cols, wf, outcomes):
            # a failed payment paid no fee, a missed call lasted no time, an open ticket has no rating yet
            held = f"{q(col)} IS NOT NULL" if value is None else f"{q(col)} != {value!r}"
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {held} AND {q(decider)} IN "
                             f"({', '.join('?' * len(states))})", states).fetchone()[0]
            if n:
                yield Violation("impossible", f"{table}.{col}", f"{n} {'/'.join(states[:3])} rows with {col} "
                                                                 f"{'set' if value is None else f'other than {value}'}")
        exits = semantics.exit_codes(cols, wf)
        if exits:
            ok, bad, _ = exits
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE (status IN ({', '.join('?' * len(ok))}) AND "
                             f"exit_code IS NOT 0) OR (status IN ({', '.join('?' * len(bad))}) AND (exit_code IS NULL OR "
                             f"exit_code = 0))", (*ok, *bad)).fetchone()[0]
            if n:
                yield Violation("impossible", f"{table}.exit_code", f"{n} rows whose exit_code disagrees with their status")
        cycle = semantics.billing_cycle(cols)
        live = sorted(semantics.LIVE_PERIOD_STATES & set((wf or {}).get("states", ()))) if cycle else []
        if cycle and live:
            # a live subscription's current period ends within one billing period from today
            _, period, end = cycle
            today = spec["now"][:10]
            n = sum(1 for p, e in conn.execute(f"SELECT {q(period)}, {q(end)} FROM {q(table)} WHERE status IN "
                                               f"({', '.join('?' * len(live))}) AND {q(end)} IS NOT NULL", live)
                    if p in BILLING_PERIODS and not today < str(e)[:10] <= period_after(today, p))
            if n:
                yield Violation("clock_status", f"{table}.{end}", f"{n} {'/'.join(live)} rows whose {end} is not within one "
                                                                   f"{period} from today")
        unwritten = sorted(semantics.UNREPORTED_STATES & set((wf or {}).get("states", ())))
        for col in [c for c in semantics.REPORT_FILES if c in cols] if unwritten else ():
            # no report on an inspection not yet done, or called off
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(col)} IS NOT NULL AND status IN "
                             f"({', '.join('?' * len(unwritten))})", unwritten).fetchone()[0]
            if n:
                yield Violation("prestart_stamp", f"{table}.{col}", f"{n} rows with a {col} while {'/'.join(unwritten[:3])}...")
        for flag, states in semantics.status_flags(cols, wf).items():
            # a shut record renews nothing and is nobody's preferred one; an approved pull request is no draft
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(flag)} = 1 AND status IN ({', '.join('?' * len(states))})",
                             states).fetchone()[0]
            if n:
                yield Violation("impossible", f"{table}.{flag}", f"{n} rows with {flag} set while {'/'.join(states[:3])}")
        if {"vehicle_type", "fuel_type"} <= set(cols):
            # a vehicle runs on a fuel of its kind
            fuels = [f for f, in conn.execute(f"SELECT DISTINCT fuel_type FROM {q(table)} WHERE fuel_type IS NOT NULL")]
            n = sum(1 for t, f in conn.execute(f"SELECT vehicle_type, fuel_type FROM {q(table)} WHERE vehicle_type IS NOT NULL "
                                               "AND fuel_type IS NOT NULL") if f not in semantics.fuels_for(t, fuels))
            if n:
                yield Violation("impossible", f"{table}.fuel_type", f"{n} rows whose fuel_type does not fit their vehicle_type")
        failing = sorted(semantics.EXCEPTION_EVENTS)
        if {"event_type", "exception_code"} <= set(cols):
            # an exception code on an event that reports something gone wrong, and only there
            marks = ", ".join("?" * len(failing))
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE exception_code IS NOT NULL AND event_type IS NOT NULL AND "
                             f"(event_type IN ({marks})) = (exception_code = 'none') AND EXISTS (SELECT 1 FROM "
                             f"{q(table)} WHERE event_type IN ({marks}))", (*failing, *failing)).fetchone()[0]
            if n:
                yield Violation("impossible", f"{table}.exception_code", f"{n} rows whose exception_code disagrees with "
                                                                         "their event_type")
        timed = semantics.incident_timing(cols, wf)
        if timed:
            # an incident lasted from its start to its resolution, and an open one has no length yet
            start, length, ended = timed
            marks = ", ".join("?" * len(ended))
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE CASE WHEN status IN ({marks}) THEN {q(length)} IS NULL "
                             f"OR abs({q(length)} - (julianday(status_changed_at) - julianday({q(start)})) * 1440) > 1 "
                             f"ELSE {q(length)} IS NOT NULL END", ended).fetchone()[0]
            if n:
                yield Violation("copied_figure", f"{table}.{length}", f"{n} rows whose {length} is not the time from their "
                                                                      f"{start} to their {'/'.join(ended)}")
        spent = semantics.spent_since(cols)
        if spent:   # the most per day the world drew the sign-up by (a home buyer spends more a day than a shopper)
            drawn = _recipe_gen(spec, table, spent[1], "spent_since")
            spent = (spent[0], spent[1], float(drawn["per_day"])) if drawn else spent
        for col in cols:
            got = semantics.accrual(col, cols) or (spent[1:] if spent and col == spent[0] else None)
            if got:
                # what accrues day by day (hours played, citations, a customer's spend) is no more than a day's
                # most per day since
                since, per_day = got
                n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(col)} IS NOT NULL AND {q(since)} IS NOT NULL AND "
                                 f"{q(col)} > ? * max(0, julianday(?) - julianday({q(since)})) + 0.01",
                                 (per_day, spec["now"].rstrip("Z"))).fetchone()[0]
                if n:
                    yield Violation("value_range", f"{table}.{col}", f"{n} rows with more {col} than {per_day:g} a day "
                                                                     f"since their {since}")
        for col in cols:
            exts = semantics.file_exts(col) if "file" in col else None
            if exts:
                # a photo is an image file, a report a document
                n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(col)} IS NOT NULL AND lower({q(col)}) LIKE '%.%' "
                                 f"AND {' AND '.join(f'lower({q(col)}) NOT LIKE ?' for _ in exts)}",
                                 [f"%.{e}" for e in exts]).fetchone()[0]
                if n:
                    yield Violation("impossible", f"{table}.{col}", f"{n} rows whose {col} is not one of .{', .'.join(exts)}")
        got = semantics.verdict_columns(cols)
        if got and (conn.execute(f"SELECT MAX({q(got[1])}) FROM {q(table)}").fetchone()[0] or 0) > 10:
            # an inspection passed scored at least the pass mark, one failed less, and a verdict has its score
            verdict, score = got
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(verdict)} IS NOT NULL AND ({q(score)} IS NULL OR "
                             f"({q(verdict)} = 1) != ({q(score)} >= ?))", (semantics.PASS_MARK,)).fetchone()[0]
            if n:
                yield Violation("impossible", f"{table}.{verdict}", f"{n} rows whose {verdict} disagrees with their {score} "
                                                                    f"(pass mark {semantics.PASS_MARK})")
        for start, end, n in _same_row(conn, table, cols, semantics.ROUTE_ENDS, "="):
            yield Violation("impossible", f"{table}.{end}", f"{n} rows whose {end} is their {start}")
        method = next((m for m in ("method", "payment_method") if m in cols), None)
        if method and "status" in cols:
            # only a card is authorized or voided; cash is never pending or failed; no processor fee on cash
            states = sorted(semantics.CARD_STATES | semantics.UNCLEARED_STATES)
            n = sum(1 for m, st in conn.execute(f"SELECT {q(method)}, status FROM {q(table)} WHERE status IN "
                                                f"({', '.join('?' * len(states))})", states)
                    if m is not None and (st in semantics.CARD_STATES and not semantics.card_like(m)
                                          or st in semantics.UNCLEARED_STATES and m in semantics.HANDED_OVER))
            if n:
                yield Violation("impossible", f"{table}.{method}", f"{n} rows in a status their {method} never reaches")
        if method and "processor_fee" in cols:
            free = sorted(semantics.HANDED_OVER | {"check", "cheque", "money_order"})
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(method)} IN ({', '.join('?' * len(free))}) "
                             f"AND processor_fee > 0", free).fetchone()[0]
            if n:
                yield Violation("impossible", f"{table}.processor_fee", f"{n} rows with a processor fee on "
                                                                       f"{'/'.join(free)}")
        by_day = semantics.charged_by_day(cols)
        if by_day:
            # a hire costs its daily rate for each day it runs (a started day counts), and runs whole days
            rate, start, end, charge = by_day
            rows = conn.execute(f"SELECT {q(rate)}, {q(start)}, {q(end)}, {q(charge)} FROM {q(table)} WHERE "
                                f"{q(rate)} IS NOT NULL AND {q(start)} IS NOT NULL AND {q(end)} IS NOT NULL").fetchall()
            off = sum(1 for r, a, b, c in rows if c is None or abs(round(r * charged_days(a, b), 2) - c) > 0.005)
            if off:
                yield Violation("copied_figure", f"{table}.{charge}", f"{off} rows whose {charge} is not {rate} x days")
            ragged = sum(1 for _, a, b, _ in rows if a[10:] != b[10:])
            if ragged:
                yield Violation("copied_figure", f"{table}.{end}", f"{ragged} rows whose {end} is not whole days after "
                                                                   f"{start}")
        for col in [c for c in cols if semantics.WEEK_START.search(c)]:
            # a week starts on the day weeks start (SQLite's %w counts from Sunday)
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE length({q(col)}) = 10 AND CAST(strftime('%w', "
                             f"{q(col)}) AS INTEGER) != ?", ((semantics.WEEK_STARTS_ON + 1) % 7,)).fetchone()[0]
            if n:
                yield Violation("impossible", f"{table}.{col}", f"{n} weeks starting on another day than the world's")
        if set(semantics.LOAN_TERMS) <= cols:
            # a loan's monthly payment repays its principal at its rate over its term
            *of, payment = semantics.LOAN_TERMS
            rows = conn.execute(f"SELECT {', '.join(map(q, semantics.LOAN_TERMS))} FROM {q(table)} WHERE "
                                f"{' AND '.join(f'{q(c)} IS NOT NULL' for c in of)}").fetchall()
            off = sum(1 for p, r, n, m in rows if m is None or n < 1 or abs(monthly_payment(p, r, int(n)) - m) > 0.015)
            if off:
                yield Violation("copied_figure", f"{table}.{payment}", f"{off} rows whose {payment} does not repay their "
                                                                       f"{of[0]} at their {of[1]} over their {of[2]}")
        for value, floor, n in _same_row(conn, table, cols, semantics.FLOORS, "<"):
            yield Violation("over_cap", f"{table}.{value}", f"{n} rows with {value} below {floor}")
        for paid, due in semantics.PAID:
            if paid not in cols or due not in cols:
                continue
            ent = entities.get(table)
            plan = ((ent.workflow or {}).get("paid") if ent else None) or {}
            checks = [(f"{q(paid)} > {q(due)} + 0.005", f"{paid} above {due}")]
            if "status" in cols:
                for state in plan.get("partial", ()):
                    checks.append((f"status = '{state}' AND NOT ({q(paid)} > 0 AND {q(paid)} < {q(due)})",
                                   f"{state} without 0 < {paid} < {due}"))
                for state in plan.get("full", ()):
                    checks.append((f"status = '{state}' AND abs({q(paid)} - {q(due)}) > 0.005", f"{state} with {paid} != {due}"))
            for where, what in checks:
                n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(paid)} IS NOT NULL AND {q(due)} IS NOT NULL "
                                 f"AND {where}").fetchone()[0]
                if n:
                    yield Violation("over_cap", f"{table}.{paid}", f"{n} rows {what}")
            break
        for c in t["columns"]:
            parent = (c.get("references") or "").split(".")[0]
            pair = semantics.part_of_whole(table, cols, _columns(conn, parent)) if parent and parent != table else None
            if pair:
                # the payments of an invoice (the refunds of a payment) come to no more than its whole
                part, whole = pair
                n = conn.execute(f"SELECT COUNT(*) FROM (SELECT p.{q(whole)} AS whole, SUM(c.{q(part)}) AS paid "
                                 f"FROM {q(table)} AS c JOIN {q(parent)} AS p ON p.id = c.{q(c['name'])} "
                                 f"GROUP BY p.id) WHERE paid > whole + 0.005").fetchone()[0]
                if n:
                    yield Violation("part_over_whole", f"{table}.{part}",
                                    f"{n} {parent} whose {table} add up to more than their {whole}")
                yield from _unsettled(spec, conn, table, c["name"], parent, part, whole)
                break
        if {"tax_amount", "total_amount"} <= cols and "subtotal" not in cols:
            # a total with the tax in it: one rate's share, never the whole of it
            lo, hi, n = conn.execute(f"SELECT MIN(tax_amount / (total_amount - tax_amount)), MAX(tax_amount / "
                                     f"(total_amount - tax_amount)), COUNT(*) FROM {q(table)} WHERE total_amount >= 10 "
                                     f"AND tax_amount IS NOT NULL AND tax_amount < total_amount").fetchone()
            over = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE tax_amount >= total_amount AND total_amount > 0"
                                ).fetchone()[0]
            if over or (n and (hi - lo > 0.01 or hi > 0.3)):
                yield Violation("over_cap", f"{table}.tax_amount", f"tax of the total from {lo or 0:.1%} to {hi or 0:.1%} "
                                                                   f"of the rest; {over} rows with tax >= total")
        if {"tax_amount", "subtotal"} <= cols:
            # one rate for the whole world, and never more tax than the goods cost
            lo, hi, n = conn.execute(f"SELECT MIN(tax_amount / subtotal), MAX(tax_amount / subtotal), COUNT(*) FROM "
                                     f"{q(table)} WHERE subtotal >= 10 AND tax_amount IS NOT NULL").fetchone()
            if n and (hi - lo > 0.01 or hi > 0.3):
                yield Violation("over_cap", f"{table}.tax_amount", f"tax from {lo:.1%} to {hi:.1%} of the subtotal")


def check_figures(spec: dict[str, Any], conn: sqlite3.Connection) -> Iterable[Violation]:
    """Figures against the figures of the records they point at (``semantics.figure_link``; for each figure,
    the first key and the first column of its record that it is linked to, as synthesis links them)."""
    tables = {t["name"]: t for t in spec["tables"]}
    for t in spec["tables"]:
        table, keys = t["name"], [c for c in t["columns"] if c.get("references")]
        names = {n: [c["name"] for c in tables[n]["columns"]] for n in tables}
        for c in t["columns"]:
            links = ((fk, parent, p["name"], semantics.figure_link(table, c["name"], parent, p["name"], names[table],
                                                                   names[parent]))
                     for fk in keys if (parent := fk["references"].split(".")[0]) in tables
                     for p in tables[parent]["columns"] if p["type"] == c["type"] in ("REAL", "INTEGER"))
            found = next((x for x in links if x[3]), None)
            if found is None:
                continue
            fk, parent, pcol, link = found
            col = c["name"]
            join = (f"FROM {q(table)} AS c JOIN {q(parent)} AS p ON p.id = c.{q(fk['name'])} "
                    f"WHERE c.{q(col)} IS NOT NULL AND p.{q(pcol)} IS NOT NULL")
            if link == "part":
                sql = (f"SELECT COUNT(*) FROM (SELECT MAX(p.{q(pcol)}) AS whole, SUM(c.{q(col)}) AS parts {join} "
                       f"GROUP BY p.id) WHERE parts > whole + 0.005")
            else:
                test = {"copy": f"abs(c.{q(col)} - p.{q(pcol)}) > 0.005", "at_most": f"c.{q(col)} > p.{q(pcol)} + 0.005",
                        "at_least": f"c.{q(col)} < p.{q(pcol)} - 0.005"}[link]
                sql = f"SELECT COUNT(*) {join} AND {test}"
            n = conn.execute(sql).fetchone()[0]
            if n:
                what = {"copy": "differs from", "at_most": "is above", "at_least": "is below",
                        "part": "together weigh more than"}[link]
                yield Violation("copied_figure", f"{table}.{col}", f"{n} rows whose {col} {what} their {parent}.{pcol}")


def check_lines(spec: dict[str, Any], conn: sqlite3.Connection) -> Iterable[Violation]:
    """A record with lines (an order's items) has the subtotal they add up to, a pay run the totals of its
    payslips (``semantics.sums_of``), and one counting records of another table (a chat's ``message_count``)
    counts them (``semantics.count_of``)."""
    tables = {t["name"]: [c["name"] for c in t["columns"]] for t in spec["tables"]}
    for t in spec["tables"]:
        for fk in (c for c in t["columns"] if c.get("references")):
            parent = fk["references"].split(".")[0]
            got = semantics.sums_of(t["name"], tables[t["name"]], tables.get(parent, [])) if parent != t["name"] else []
            for field, figures in got:
                line = " * ".join(f"c.{q(f)}" for f in figures)
                n = conn.execute(f"SELECT COUNT(*) FROM (SELECT MAX(p.{q(field)}) AS whole, SUM(round({line}, 2)) AS parts "
                                 f"FROM {q(t['name'])} AS c JOIN {q(parent)} AS p ON p.id = c.{q(fk['name'])} "
                                 f"GROUP BY p.id) WHERE abs(parts - whole) > 0.015").fetchone()[0]
                if n:
                    yield Violation("copied_figure", f"{parent}.{field}", f"{n} {parent} whose {field} is not the sum of "
                                                                          f"their {t['name']}")
            if got:
                break
    for t in spec["tables"]:
        for fk in (c for c in t["columns"] if c.get("references")):
            parent = fk["references"].split(".")[0]
            count = semantics.count_of(t["name"], tables.get(parent, [])) if parent != t["name"] else None
            if count is None:
                continue
            # a chat's message count is how many messages it has
            n = conn.execute(f"SELECT COUNT(*) FROM {q(parent)} AS p WHERE p.{q(count)} IS NOT NULL AND p.{q(count)} != "
                             f"(SELECT COUNT(*) FROM {q(t['name'])} AS c WHERE c.{q(fk['name'])} = p.id)").fetchone()[0]
            if n:
                yield Violation("copied_figure", f"{parent}.{count}", f"{n} {parent} whose {count} is not how many "
                                                                      f"{t['name']} they have")


def check_same_parent(spec: dict[str, Any], conn: sqlite3.Connection, entities: dict[str, Any]) -> Iterable[Violation]:
    """A row naming an owner (a person, organisation or account) and a record that itself names one of
    those owners: both name the same one. So do a row and its record that name any record under one key's
    name (an inspection's ``product_id`` and its run's)."""
    from ..synthesis.schema import OWNER_ROLES, same_key_links

    def owned(table: str) -> bool:
        ent = entities.get(table)
        return ent is not None and bool(set(ent.roles) & OWNER_ROLES)

    fks = {t["name"]: {c["name"]: c["references"].split(".")[0] for c in t["columns"] if c.get("references")}
           for t in spec["tables"]}
    for table, refs in fks.items():
        triangles = [(a, b, via) for a, b, _, via in same_key_links(refs, fks, owned)]
        for a_col, owner in refs.items():
            for b_col, target in refs.items():
                vias = [c for c, t in fks.get(target, {}).items() if t == owner] if b_col != a_col else []
                if len(vias) != 1 or not (owned(owner) or (a_col, b_col, vias[0]) in triangles):
                    continue
                n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} AS t JOIN {q(target)} AS p ON p.id = t.{q(b_col)} "
                                 f"WHERE t.{q(a_col)} IS NOT NULL AND p.{q(vias[0])} IS NOT NULL "
                                 f"AND p.{q(vias[0])} != t.{q(a_col)}").fetchone()[0]
                if n:
                    yield Violation("same_parent", f"{table}.{b_col}",
                                    f"{n} rows whose {target} belongs to another {owner} than {a_col}")


def check_rules(spec: dict[str, Any], conn: sqlite3.Connection) -> Iterable[Violation]:
    """The seeded history against each business rule; rows named by ``data.setups`` are exempt."""
    from ..engine.rules import Rule

    exempt: dict[str, set[int]] = {}
    for setup in spec.get("data", {}).get("setups", ()):
        exempt.setdefault(setup["table"], set()).add(int(setup["id"]))
    for raw in spec.get("rules", ()):
        rule = Rule.from_json(raw)
        skip = exempt.get(rule.table, set())
        not_exempt = f" AND id NOT IN ({', '.join(str(i) for i in sorted(skip))})" if skip else ""
        if rule.kind == "quota":
            over = conn.execute(rule.over_quota()).fetchall()
            if over:
                worst = max(over, key=lambda r: r[1])
                yield Violation("over_quota", f"{rule.table}.{rule.column}",
                                f"{len(over)} parents above {int(rule.value)} (up to {worst[1]}): {rule.text}")
            continue
        where = rule.history_breaks(spec["now"])
        if where is None:
            continue
        n = conn.execute(f"SELECT COUNT(*) FROM {q(rule.table)} WHERE {where}{not_exempt}").fetchone()[0]
        if n:
            yield Violation("rule_history", f"{rule.table}.{rule.column}",
                            f"{n} rows in {'/'.join(rule.guards)} break: {rule.text}")


def check_policy(spec: dict[str, Any]) -> Iterable[Violation]:
    """The policy states today's date, and every figure it states is a rule's value."""
    from ..engine.language import figures

    policy = spec.get("policy", "")
    if spec["now"][:10] not in policy:
        yield Violation("policy_clock", "policy", f"does not state today's date ({spec['now'][:10]})")
    # Names are not figures: the service's ("401(k) plan recordkeeping") and its records' ("Form 1099", "8D report").
    names = [spec.get("title") or ""] + [singular(t["name"]).replace("_", " ") for t in spec.get("tables", ())]
    for name in sorted(filter(None, names), key=len, reverse=True):
        if figures(name):   # "Form 1099", "Eight D report"
            policy = re.sub(re.escape(name), " ", policy, flags=re.I)
    policy = policy.replace(spec.get("title") or "\0", " ")
    backed = {float(r["value"]) for r in spec.get("rules", ())} | {0.0, 1.0}
    for line in policy.splitlines():
        extra = [f for f in figures(line) if f not in backed]
        if extra:
            yield Violation("prose_number", "policy", f"{', '.join(number(f) for f in extra)} in {line[:90]!r}")


def check_foreign_vocab(spec: dict[str, Any], entities: dict[str, Any]) -> Iterable[Violation]:
    """Job titles and record kinds from the theme's own trade (see ``semantics.kind_words``)."""
    recipe = spec.get("data", {}).get("tables", {})
    for table, ent in entities.items():
        for col, gen in recipe.get(table, {}).get("columns", {}).items():
            if gen.get("gen") == "faker" and gen.get("provider") in semantics.FOREIGN_FAKER:
                yield Violation("foreign_vocab", f"{table}.{col}", f"Faker {gen['provider']!r} values are no trade's words")
            if semantics.is_kind_column(ent, col) and gen.get("gen") == "choice" and not gen.get("theme_words"):
                yield Violation("foreign_vocab", f"{table}.{col}",
                                f"a {ent.singular.replace('_', ' ')}'s kinds from the generic {ent.key} module")
        kind = semantics.craft_kind(ent.key, ent.singular)
        for col, gen in recipe.get(table, {}).get("columns", {}).items() if kind else ():
            # a boat has no VIN or odometer, and is built by boat builders, not by Toyota
            words = kind["words"].get(col)
            while gen.get("gen") not in ("choice", None) and isinstance(gen.get("inner") or gen.get("default"), dict):
                gen = gen.get("inner") or gen["default"]
            if words == [] and col != ent.module.get("label"):
                yield Violation("foreign_vocab", f"{table}.{col}", f"a {kind['kind']} has no {col.replace('_', ' ')}")
            elif words and gen.get("gen") == "choice" and not gen.get("theme_words"):
                yield Violation("foreign_vocab", f"{table}.{col}", f"a {kind['kind']}'s {col.replace('_', ' ')} from the "
                                                                   f"generic {ent.key} module")


def check_lifecycle(spec: dict[str, Any], conn: sqlite3.Connection) -> Iterable[Violation]:
    """Rows against their lifecycle: nothing stamped that the status has not reached
    (``semantics.unreached_columns``), and status changes that keep the stamps of earlier statuses."""
    for t in spec["tables"]:
        table = t["name"]
        wf = _workflow_of(spec, table)
        if wf is None:
            continue
        cols = _columns(conn, table)
        required = {c["name"] for c in t["columns"] if c.get("nullable") is False or c.get("primary_key")}
        undecided = tuple(sorted(semantics.UNDECIDED_VALUES))
        not_yet = ", ".join("?" * len(undecided))
        for col, states in semantics.unreached_columns(cols, wf).items():
            marks = ", ".join("?" * len(states))
            outcome = semantics.is_outcome_column(col)
            if outcome:
                # a finished record's outcome is decided: no dispute "decided" with outcome "undecided"
                n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(wf['column'])} NOT IN ({marks}) "
                                 f"AND lower({q(col)}) IN ({not_yet})", (*sorted(states), *undecided)).fetchone()[0]
                if n:
                    yield Violation("undecided_outcome", f"{table}.{col}",
                                    f"{n} rows past {'/'.join(sorted(states))} whose {col} is not decided")
            if col in required:
                continue   # the schema demands a value in every row: the generator cannot leave it empty either
            # an unfinished record holds no outcome, or one that says it is not decided yet
            open_word = f" AND lower({q(col)}) NOT IN ({not_yet})" if outcome else ""
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(wf['column'])} IN ({marks}) AND {q(col)} IS NOT NULL"
                             f"{open_word}", (*sorted(states), *(undecided if outcome else ()))).fetchone()[0]
            if n:
                yield Violation("prestart_stamp", f"{table}.{col}", f"{n} rows in {'/'.join(sorted(states))} with {col} set")
        for col, states in semantics.unseen_counts(cols, wf).items():
            marks = ", ".join("?" * len(states))
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(wf['column'])} IN ({marks}) AND {q(col)} > 0",
                             sorted(states)).fetchone()[0]
            if n:
                yield Violation("prestart_stamp", f"{table}.{col}", f"{n} rows in {'/'.join(sorted(states))} with {col} > 0")
        stamps = semantics.status_stamps(cols, wf)
        for tool in spec["tools"]:
            impl = tool["impl"]
            if impl.get("kind") != "transition" or impl.get("table") != table:
                continue
            for col, value in (impl.get("set") or {}).items():
                if col not in stamps or semantics.stamp_status(col) == impl["to"]:
                    continue
                if value is not None:
                    yield Violation("transition_stamp", tool["name"], f"writes {col}, the stamp of another status")
                elif impl["to"] in stamps[col]:
                    yield Violation("transition_stamp", tool["name"], f"clears {col} moving on to {impl['to']}")


def check_parent_start(spec: dict[str, Any], conn: sqlite3.Connection) -> Iterable[Violation]:
    """A due date of a record is not before the start of the record it belongs to."""
    for t in spec["tables"]:
        table = t["name"]
        dues = [c for c in _date_columns(conn, table, _columns(conn, table)) if semantics.clock_role(c) == "due"]
        for c in t["columns"]:
            parent = (c.get("references") or "").split(".")[0]
            if not dues or not parent or parent == table:
                continue
            pcols = _columns(conn, parent)
            for start in [p for p in _date_columns(conn, parent, pcols)
                          if semantics.clock_role(p) == "start" and semantics.date_rank(p) == 1]:
                for due in dues:
                    n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} AS c JOIN {q(parent)} AS p ON p.id = c.{q(c['name'])} "
                                     f"WHERE substr(c.{q(due)}, 1, 10) < substr(p.{q(start)}, 1, 10)").fetchone()[0]
                    if n:
                        yield Violation("parent_start", f"{table}.{due}", f"{n} rows due before their {parent}.{start}")


def _made_columns(spec: dict[str, Any], conn: sqlite3.Connection, table: str) -> list[str]:
    """When a record of ``table`` was made: its dates of making that no status stamps."""
    cols = _columns(conn, table)
    wf = _workflow_of(spec, table)
    stamps = semantics.status_stamps(cols, wf) if wf else {}
    return [c for c in _date_columns(conn, table, cols) if semantics.is_made_column(c) and c not in stamps]


def _came_about(spec: dict[str, Any], conn: sqlite3.Connection, table: str) -> list[str]:
    """When a record of ``table`` came about: its dates of making and the status stamps every record holds."""
    wf = _workflow_of(spec, table)
    return _made_columns(spec, conn, table) + (semantics.making_stamps(_columns(conn, table), wf) if wf else [])


def _worked_columns(spec: dict[str, Any], conn: sqlite3.Connection, table: str) -> list[str]:
    """When the work of a record of ``table`` took place: its start dates that are not dates of making."""
    cols = _columns(conn, table)
    made = set(_made_columns(spec, conn, table))
    return [c for c in _date_columns(conn, table, cols) if c not in made and semantics.clock_role(c) == "start"]


def _event_columns(spec: dict[str, Any], conn: sqlite3.Connection, table: str) -> list[str]:
    """What was done to or by a record of ``table`` (its making, a message sent, a status change, its start): the
    dates that follow the record it belongs to. A stamp every record holds, whatever its status, is when it came
    about (an alert's ``triggered_at``)."""
    cols = _columns(conn, table)
    wf = _workflow_of(spec, table)
    stamps = semantics.status_stamps(cols, wf) if wf else {}
    return [c for c in _date_columns(conn, table, cols) if c not in stamps
            and (semantics.follows_parent(c) or c == "status_changed_at")] + (semantics.making_stamps(cols, wf) if wf else [])


def check_before_parent(spec: dict[str, Any], conn: sqlite3.Connection) -> Iterable[Violation]:
    """Nothing done to or by a record (its making, a message sent, a status change, its start) comes before the
    record it belongs to was made or came about: no text to a lead before the lead existed, no shipment before
    its order was placed, no notice before the violation was observed."""
    for t in spec["tables"]:
        table = t["name"]
        cols = _columns(conn, table)
        events = _event_columns(spec, conn, table)
        for c in t["columns"]:
            parent = (c.get("references") or "").split(".")[0]
            for made, col in [(m, e) for m in (_came_about(spec, conn, parent) if parent and parent != table else [])
                              for e in events]:
                # days compared: what happened the day the parent was made may have happened that morning
                # (and a week may have started before what the record belongs to came about that week)
                floor = (f"date(p.{q(made)}, '-{semantics.WEEK_SLACK_DAYS} days')" if semantics.WEEK_START.search(col)
                         else f"substr(p.{q(made)}, 1, 10)")
                n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} AS c JOIN {q(parent)} AS p ON p.id = c.{q(c['name'])} "
                                 f"WHERE substr(c.{q(col)}, 1, 10) < {floor}").fetchone()[0]
                if n:
                    yield Violation("before_parent", f"{table}.{col}", f"{n} rows before their {parent}.{made}")
        last = next((c for c in cols if c in LAST_ACTIVITY), None)
        for child in spec["tables"] if last else ():
            # an account last active in 2022 has no transaction posted in April 2026
            made = next((c["name"] for c in child["columns"] if made_on(c["name"])), None)
            for fk in (c["name"] for c in child["columns"] if (c.get("references") or "") == f"{table}.id") if made else ():
                n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} AS p WHERE (SELECT MAX(substr(c.{q(made)}, 1, 10)) FROM "
                                 f"{q(child['name'])} AS c WHERE c.{q(fk)} = p.id) > substr(coalesce(p.{q(last)}, ''), 1, 10)"
                                 ).fetchone()[0]
                if n:
                    yield Violation("before_parent", f"{table}.{last}", f"{n} rows last active before their latest "
                                                                        f"{child['name']}.{made}")


def check_terms(spec: dict[str, Any], conn: sqlite3.Connection) -> Iterable[Violation]:
    """What happened under a record's cover or during its run lies within its term (``semantics.covered_event``,
    ``semantics.term_of``): no claim for an incident before its policy took effect or after it expired."""
    for t in spec["tables"]:
        table = t["name"]
        events = [c for c in _date_columns(conn, table, _columns(conn, table)) if semantics.covered_event(c)]
        for c in t["columns"] if events else ():
            parent = (c.get("references") or "").split(".")[0]
            term = semantics.term_of(_date_columns(conn, parent, _columns(conn, parent))) if parent and parent != table else None
            for col in events if term else ():
                start, end = term
                n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} AS c JOIN {q(parent)} AS p ON p.id = c.{q(c['name'])} "
                                 f"WHERE substr(c.{q(col)}, 1, 10) < substr(p.{q(start)}, 1, 10) "
                                 f"OR substr(c.{q(col)}, 1, 10) > substr(p.{q(end)}, 1, 10)").fetchone()[0]
                if n:
                    yield Violation("outside_term", f"{table}.{col}", f"{n} rows outside their {parent}'s {start} to {end}")


def check_elapsed(spec: dict[str, Any], conn: sqlite3.Connection, entities: dict[str, Any]) -> Iterable[Violation]:
    """A record's time to something (``semantics.elapsed_unit``: a review's hours to review) is the time from the
    making of the record it is about to its own making, as synthesis links them (``schema.link_elapsed``)."""
    from ..synthesis.schema import OWNER_ROLES

    per = {"hours": 24.0, "minutes": 1440.0, "days": 1.0}
    owners = {name for name, ent in entities.items() if set(ent.roles) & OWNER_ROLES}
    for t in spec["tables"]:
        table, cols = t["name"], _columns(conn, t["name"])
        own = _made_columns(spec, conn, table)
        for col in [c for c in cols if semantics.elapsed_unit(c)] if own else ():
            for fk in [c for c in t["columns"] if c.get("references")]:
                parent = fk["references"].split(".")[0]
                made = _came_about(spec, conn, parent) if parent != table else []
                if not made or parent in owners:
                    continue
                span = f"(julianday(c.{q(own[0])}) - julianday(p.{q(made[0])})) * {per[semantics.elapsed_unit(col) or 'days']}"
                n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} AS c JOIN {q(parent)} AS p ON p.id = c.{q(fk['name'])} "
                                 f"WHERE c.{q(col)} IS NOT NULL AND abs(c.{q(col)} - max(0, {span})) > 0.06").fetchone()[0]
                if n:
                    yield Violation("copied_figure", f"{table}.{col}", f"{n} rows whose {col} is not the time from their "
                                                                       f"{parent}.{made[0]} to their {own[0]}")
                break


def check_shut_parents(spec: dict[str, Any], conn: sqlite3.Connection) -> Iterable[Violation]:
    """Nothing open under a shut record (a crossing still scheduled on a vehicle out of service), and nothing
    made under it after the day it was shut (an order placed with a supplier gone inactive)."""
    for t in spec["tables"]:
        table = t["name"]
        cols = _columns(conn, table)
        opened = sorted(semantics.open_states(_workflow_of(spec, table))) if "status" in cols else []
        for c in t["columns"]:
            parent = (c.get("references") or "").split(".")[0]
            closes = semantics.closing_column(_date_columns(conn, parent, _columns(conn, parent))) \
                if parent and semantics.is_sent_in(table) else None
            opens = semantics.opening_column(_date_columns(conn, parent, _columns(conn, parent))) \
                if parent and semantics.is_sent_in(table) else None
            for made in _made_columns(spec, conn, table) if opens is not None and parent != table else ():
                # sent in before the record it was sent to had opened (a survey response before the survey opened)
                n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} AS c JOIN {q(parent)} AS p ON p.id = c.{q(c['name'])} "
                                 f"WHERE substr(c.{q(made)}, 1, 10) < substr(p.{q(opens)}, 1, 10)").fetchone()[0]
                if n:
                    yield Violation("before_parent", f"{table}.{made}", f"{n} rows sent in before their {parent}'s {opens}")
            if closes is not None and parent != table:
                # sent in after the record it was sent to had closed (a survey response after the survey closed)
                for made in _made_columns(spec, conn, table):
                    n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} AS c JOIN {q(parent)} AS p ON p.id = c.{q(c['name'])} "
                                     f"WHERE substr(c.{q(made)}, 1, 10) > substr(p.{q(closes)}, 1, 10)").fetchone()[0]
                    if n:
                        yield Violation("shut_parent", f"{table}.{made}", f"{n} rows sent in after their {parent}'s "
                                                                          f"{closes}")
            if not parent or parent == table or not {"status", "status_changed_at"} <= set(_columns(conn, parent)):
                continue
            shut = sorted(semantics.shut_states(_workflow_of(spec, parent)))
            down = sorted(semantics.down_states(_workflow_of(spec, parent)))
            worked = sorted(s for s in (_workflow_of(spec, table) or {}).get("states", ())
                            if s in semantics.WORKED_STATES) if "status" in cols else []
            over = sorted(set(worked) - semantics.open_states(_workflow_of(spec, table)))   # work over, not under way
            # work after the day its record was shut, or (work over) after the day it went down for now
            for states, worker in ((shut, worked), (down, over)):
                for start in _worked_columns(spec, conn, table) if states and worker else ():
                    n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} AS c JOIN {q(parent)} AS p "
                                     f"ON p.id = c.{q(c['name'])} WHERE p.status IN ({', '.join('?' * len(states))}) "
                                     f"AND c.status IN ({', '.join('?' * len(worker))}) AND substr(c.{q(start)}, 1, 10) "
                                     f"> substr(p.status_changed_at, 1, 10)", (*states, *worker)).fetchone()[0]
                    if n:
                        yield Violation("shut_parent", f"{table}.{start}", f"{n} rows {'/'.join(worker)} there after "
                                                                            f"their {parent} was {'/'.join(states)}")
            if not shut:
                continue
            join = (f"FROM {q(table)} AS c JOIN {q(parent)} AS p ON p.id = c.{q(c['name'])} "
                    f"WHERE p.status IN ({', '.join('?' * len(shut))})")
            if opened:
                n = conn.execute(f"SELECT COUNT(*) {join} AND c.status IN ({', '.join('?' * len(opened))})",
                                 (*shut, *opened)).fetchone()[0]
                if n:
                    yield Violation("shut_parent", f"{table}.{c['name']}", f"{n} rows still {'/'.join(opened[:3])}... "
                                                                            f"under a {parent} that is {'/'.join(shut)}")
            stamped = semantics.making_stamps(cols, _workflow_of(spec, table) or {}) if "status" in cols else []
            for made in _made_columns(spec, conn, table) + stamped:
                n = conn.execute(f"SELECT COUNT(*) {join} AND substr(c.{q(made)}, 1, 10) > substr(p.status_changed_at, 1, 10)",
                                 shut).fetchone()[0]
                if n:
                    yield Violation("shut_parent", f"{table}.{made}", f"{n} rows made after their {parent} was shut")


def check_started_parents(spec: dict[str, Any], conn: sqlite3.Connection) -> Iterable[Violation]:
    """Work done under a record that has not started: a task done under a project still in its backlog, a
    booking attended for a class still scheduled."""
    for t in spec["tables"]:
        table = t["name"]
        wf = _workflow_of(spec, table)
        if "status" not in _columns(conn, table) or not wf:
            continue
        worked = sorted(set(wf.get("states", ())) & semantics.WORKED_STATES - {"paid"})
        for c in t["columns"] if worked else ():
            parent = (c.get("references") or "").split(".")[0]
            pwf = _workflow_of(spec, parent) if parent and parent != table else None
            waiting = sorted(set((pwf or {}).get("states", ())) & semantics.UNSTARTED_STATES)
            if not waiting or "status" not in _columns(conn, parent):
                continue
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} AS c JOIN {q(parent)} AS p ON p.id = c.{q(c['name'])} "
                             f"WHERE c.status IN ({', '.join('?' * len(worked))}) AND p.status IN "
                             f"({', '.join('?' * len(waiting))})", (*worked, *waiting)).fetchone()[0]
            if n:
                yield Violation("prestart_stamp", f"{table}.{c['name']}", f"{n} rows {'/'.join(worked[:3])}... under a "
                                                                          f"{parent} still {'/'.join(waiting)}")


def _status_enum(spec: dict[str, Any], table: str) -> list[str]:
    return next((col.get("enum") or [] for t in spec["tables"] if t["name"] == table for col in t["columns"]
                 if col["name"] == "status"), [])


def _unsettled(spec: dict[str, Any], conn: sqlite3.Connection, table: str, fk: str, parent: str, part: str,
               whole: str) -> Iterable[Violation]:
    """A whole whose status disagrees with what its parts have paid (``semantics.settle_plan``): a paid invoice whose
    payments through fall short of its total, a partly paid one with none through (or all of it), an overdue one
    with a payment through."""
    plan = semantics.settle_plan(_status_enum(spec, table), _status_enum(spec, parent), _columns(conn, parent))
    if plan is None:
        return
    marks = ", ".join("?" * len(plan["done"]))
    through = (f"(SELECT COALESCE(SUM(c.{q(part)}), 0) FROM {q(table)} AS c WHERE c.{q(fk)} = p.id AND c.status IN "
               f"({marks}))")
    paid = f" OR abs({through} - p.{q(plan['paid'])}) > 0.005" if plan.get("paid") else ""
    checks = [(plan["full"], f"abs({through} - p.{q(whole)}) > 0.005", f"whose {table} through fall short of their {whole}"),
              (plan["partial"], f"NOT ({through} > 0 AND {through} < p.{q(whole)} - 0.005){paid}",
               f"partly paid with no {table} through, or all of it"),
              (plan["unpaid"], f"{through} > 0", f"unpaid with {table} through")]
    for states, bad, what in checks:
        if not states:
            continue
        args = (*states, *plan["done"] * bad.count("c.status IN ("))   # each sum through names the statuses again
        n = conn.execute(f"SELECT COUNT(*) FROM {q(parent)} AS p WHERE p.{q(whole)} IS NOT NULL AND p.status IN "
                         f"({', '.join('?' * len(states))}) AND ({bad})", args).fetchone()[0]
        if n:
            yield Violation("unsettled", f"{parent}.status", f"{n} {'/'.join(states)} {parent} {what}")
    if "status_changed_at" not in _columns(conn, table) or "status_changed_at" not in _columns(conn, parent):
        return
    for states, last in ((plan["full"], "MAX"), (plan["partial"], "MIN")):
        # paid once its last payment went through, partly paid once its first did: not before
        n = conn.execute(f"SELECT COUNT(*) FROM {q(parent)} AS p WHERE p.status IN ({', '.join('?' * len(states))}) "
                         f"AND p.status_changed_at < (SELECT {last}(c.status_changed_at) FROM {q(table)} AS c WHERE "
                         f"c.{q(fk)} = p.id AND c.status IN ({marks}))", (*states, *plan["done"])).fetchone()[0] \
            if states else 0
        if n:
            yield Violation("unsettled", f"{parent}.status_changed_at", f"{n} {'/'.join(states)} {parent} before "
                                                                        f"the {table} that settled them went through")


def _event_end(alias: str, plan: dict[str, Any]) -> str:
    """SQL for the julian day a timed event of ``alias`` ends (its end, or its start plus its length)."""
    if plan.get("end"):
        return f"julianday({alias}.{q(plan['end'])})"
    per_day = {"minutes": 1440.0, "hours": 24.0, "seconds": 86400.0}[plan["unit"]]
    return f"(julianday({alias}.{q(plan['start'])}) + {alias}.{q(plan['length'])} / {per_day})"


def _lasts(alias: str, plan: dict[str, Any]) -> str:
    """SQL that a timed event of ``alias`` lasts some time (a missed call of no seconds occupies nothing)."""
    return f"{_event_end(alias, plan)} > julianday({alias}.{q(plan['start'])})"


def check_double_booked(spec: dict[str, Any], conn: sqlite3.Connection) -> Iterable[Violation]:
    """A person, a room or a beamline in two timed events at once: a therapist in two sessions, a meeting room
    booked twice over (events called off apart)."""
    for t in spec["tables"]:
        table = t["name"]
        cols = _columns(conn, table)
        dates = _date_columns(conn, table, cols)
        dead = sorted(semantics.CALLED_OFF & set(_status_enum(spec, table))) if "status" in cols else []
        for c in t["columns"]:
            parent = (c.get("references") or "").split(".")[0]
            plan = semantics.one_at_a_time(table, parent, cols, dates) if parent else None
            if plan is None:
                continue
            live = "".join(f" AND {a}.status NOT IN ({', '.join('?' * len(dead))})" for a in ("x", "y")) if dead else ""
            fk, start = q(c["name"]), q(plan["start"])
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} AS x JOIN {q(table)} AS y ON x.{fk} = y.{fk} AND x.id < y.id "
                             f"WHERE length(x.{start}) > 10 AND length(y.{start}) > 10 AND julianday(x.{start}) < "
                             f"{_event_end('y', plan)} AND julianday(y.{start}) < {_event_end('x', plan)} AND "
                             f"{_lasts('x', plan)} AND {_lasts('y', plan)}{live}",
                             (*dead, *dead)).fetchone()[0]
            if n:
                yield Violation("double_booked", f"{table}.{c['name']}", f"{n} pairs of {table} at once for one {parent}")


def _rows_under(conn: sqlite3.Connection, table: str, fk: str, parent: str, states: list[str]) -> int:
    """How many rows of ``table`` point (through ``fk``) at a ``parent`` whose status is one of ``states``."""
    return conn.execute(f"SELECT COUNT(*) FROM {q(table)} AS c JOIN {q(parent)} AS p ON p.id = c.{q(fk)} "
                        f"WHERE p.status IN ({', '.join('?' * len(states))})", states).fetchone()[0]


def check_released_parents(spec: dict[str, Any], conn: sqlite3.Connection) -> Iterable[Violation]:
    """Something taken up from a record never put out: a bid on a draft lot, a payment of a draft invoice, a review
    of an unpublished listing."""
    for t in spec["tables"]:
        table = t["name"]
        for c in t["columns"] if semantics.takes_up(table) else ():
            parent = (c.get("references") or "").split(".")[0]
            unreleased = semantics.unreleased_states({"states": _status_enum(spec, parent)}, table) \
                if parent != table else []
            if not unreleased or "status" not in _columns(conn, parent):
                continue
            n = _rows_under(conn, table, c["name"], parent, unreleased)
            if n:
                yield Violation("unreleased_parent", f"{table}.{c['name']}", f"{n} rows under a {parent} still "
                                                                             f"{'/'.join(unreleased)}")


def check_completed_parents(spec: dict[str, Any], conn: sqlite3.Connection) -> Iterable[Violation]:
    """Something that follows a record's completion under one that never completed: a refund of an authorized
    charge, a return of an order still processing, a repayment of a loan denied."""
    for t in spec["tables"]:
        table = t["name"]
        for c in t["columns"]:
            parent = (c.get("references") or "").split(".")[0]
            never = semantics.uncompleted_states(parent, {"states": _status_enum(spec, parent)}, table) \
                if parent and parent != table else []
            if not never or "status" not in _columns(conn, parent):
                continue
            n = _rows_under(conn, table, c["name"], parent, never)
            if n:
                yield Violation("uncompleted_parent", f"{table}.{c['name']}",
                                f"{n} rows under {parent} that never completed ({'/'.join(never)})")


def check_completion_order(spec: dict[str, Any], conn: sqlite3.Connection) -> Iterable[Violation]:
    """Something that follows a record's completion dated before it completed, or made after its story ended: a
    return requested before its order was delivered, a refund before its charge was captured, a repayment before
    its loan was approved; a return requested after its order was returned (``semantics.completion_states``: the
    parent's last status change is when it completed, or when it ended)."""
    for t in spec["tables"]:
        table = t["name"]
        cols = _columns(conn, table)
        wf = _workflow_of(spec, table)
        events = _event_columns(spec, conn, table)
        for c in t["columns"]:
            parent = (c.get("references") or "").split(".")[0]
            if not parent or parent == table or "status_changed_at" not in _columns(conn, parent):
                continue
            done, ended = semantics.completion_states(parent, {"states": _status_enum(spec, parent)}, table)
            joined = f"FROM {q(table)} AS c JOIN {q(parent)} AS p ON p.id = c.{q(c['name'])} WHERE p.status IN "
            for col, states, op, what in [*((e, done, "<", "before") for e in events if done),
                                          *((m, ended, ">", "after") for m in _made_columns(spec, conn, table) if ended)]:
                n = conn.execute(f"SELECT COUNT(*) {joined}({', '.join('?' * len(states))}) AND substr(c.{q(col)}, 1, 10) "
                                 f"{op} substr(p.status_changed_at, 1, 10)", states).fetchone()[0]
                if n:
                    yield Violation("completion_order", f"{table}.{col}", f"{n} rows {what} the {singular(parent)} they "
                                                                          f"follow was {'/'.join(states)}")
            opened = sorted(semantics.open_states(wf)) if ended and wf and "status" in cols else []
            n = conn.execute(f"SELECT COUNT(*) {joined}({', '.join('?' * len(ended))}) AND c.status IN "
                             f"({', '.join('?' * len(opened))})", ended + opened).fetchone()[0] if opened else 0
            if n:
                yield Violation("completion_order", f"{table}.status", f"{n} rows still {'/'.join(opened)} under a "
                                                                       f"{singular(parent)} {'/'.join(ended)}")


def check_paid_once(spec: dict[str, Any], conn: sqlite3.Connection, entities: dict[str, Any]) -> Iterable[Violation]:
    """A record paid for once with two payments through: a trade-in paid out twice, a notice paid for twice
    (``semantics.paid_once``; not an invoice paid in parts, nor a customer)."""
    from ..synthesis.schema import OWNER_ROLES

    for t in spec["tables"]:
        table = t["name"]
        parents = [p for p in ((c.get("references") or "").split(".")[0] for c in t["columns"]) if p and p != table]
        if "status" not in _columns(conn, table) or any(semantics.is_whole(_columns(conn, p)) for p in parents):
            continue
        for c in t["columns"]:
            parent = (c.get("references") or "").split(".")[0]
            pent = entities.get(parent)
            if not parent or parent == table or pent is None:
                continue
            done = semantics.paid_once(table, _workflow_of(spec, table) or {"states": _status_enum(spec, table)}, parent,
                                       _columns(conn, parent), bool(set(pent.roles) & OWNER_ROLES))
            if not done:
                continue
            n = conn.execute(f"SELECT COUNT(*) FROM (SELECT 1 FROM {q(table)} WHERE {q(c['name'])} IS NOT NULL AND status "
                             f"IN ({', '.join('?' * len(done))}) GROUP BY {q(c['name'])} HAVING COUNT(*) > 1)", done).fetchone()[0]
            if n:
                yield Violation("paid_twice", f"{table}.{c['name']}", f"{n} {parent} paid for more than once "
                                                                      f"({'/'.join(done)})")


def check_schedule_places(spec: dict[str, Any], conn: sqlite3.Connection) -> Iterable[Violation]:
    """An instalment numbered past its loan's term, or two instalments of one loan with one number."""
    for t in spec["tables"]:
        table = t["name"]
        for c in t["columns"]:
            parent = (c.get("references") or "").split(".")[0]
            if not parent or parent == table:
                continue
            for col in _columns(conn, table):
                length = semantics.schedule_length(col, _columns(conn, parent))
                if not length:
                    continue
                fk = q(c["name"])
                past = conn.execute(f"SELECT COUNT(*) FROM {q(table)} AS c JOIN {q(parent)} AS p ON p.id = c.{fk} "
                                    f"WHERE c.{q(col)} > p.{q(length)}").fetchone()[0]
                twice = conn.execute(f"SELECT COUNT(*) - COUNT(DISTINCT {fk} || '/' || {q(col)}) FROM {q(table)} "
                                     f"WHERE {fk} IS NOT NULL AND {q(col)} IS NOT NULL").fetchone()[0]
                if past or twice:
                    yield Violation("past_schedule", f"{table}.{col}",
                                    f"{past} past their {parent}'s {length}, {twice} taken twice")
                if semantics.amortized(_columns(conn, table), _columns(conn, parent)):
                    # instalment n pays the interest on what n - 1 payments left, and the rest of the payment
                    off = sum(1 for n, p, r, m, *parts in conn.execute(
                        f"SELECT c.{q(col)}, p.principal, p.interest_rate, p.monthly_payment, "
                        f"{', '.join('c.' + q(x) for x in semantics.PORTIONS)} FROM {q(table)} AS c JOIN {q(parent)} "
                        f"AS p ON p.id = c.{fk} WHERE c.{q(col)} > 0 AND p.principal > 0 AND p.monthly_payment > 0 "
                        f"AND p.interest_rate IS NOT NULL")
                        if any(x is None or abs(x - y) > 0.011 for x, y in zip(parts, amortized_split(p, r, m, n))))
                    if off:
                        yield Violation("copied_figure", f"{table}.{semantics.PORTIONS[0]}",
                                        f"{off} instalments that do not split their {singular(parent)}'s payment by what is left at their place")


def check_email_names(spec: dict[str, Any], conn: sqlite3.Connection) -> Iterable[Violation]:
    """An address's local part shares a word with the name on its row (``datagen.name_words``)."""
    from ..engine.datagen import name_words

    for t in spec["tables"]:
        table = t["name"]
        cols = _columns(conn, table)
        for col in [c for c in cols if c == "email" or c.endswith("_email")]:
            who = semantics.email_holder(col, cols)
            if not who:
                continue
            bad = 0
            for row in conn.execute(f"SELECT {q(col)}, {', '.join(q(w) for w in who)} FROM {q(table)} "
                                    f"WHERE typeof({q(col)}) = 'text'"):
                words = name_words(" ".join(str(v) for v in row[1:] if v))
                if words and "@" in row[0] and not any(w in row[0].split("@")[0].lower() for w in words):
                    bad += 1
            if bad:
                yield Violation("email_name", f"{table}.{col}", f"{bad} addresses sharing no word with {' '.join(who)}")


def check_world(name: str, spec: dict[str, Any], conn: sqlite3.Connection) -> list[Violation]:
    """The world classes for one built env (recipe-generated data only)."""
    if "generator" in spec.get("data", {}):
        return []
    entities = _entities(name)
    out: list[Violation] = []
    out += check_clock(spec, conn, entities)
    out += check_arithmetic(spec, conn, entities)
    out += check_same_parent(spec, conn, entities)
    out += check_rules(spec, conn)
    out += check_policy(spec)
    out += check_foreign_vocab(spec, entities)
    out += check_lifecycle(spec, conn)
    out += check_parent_start(spec, conn)
    out += check_email_names(spec, conn)
    out += check_before_parent(spec, conn)
    out += check_figures(spec, conn)
    out += check_lines(spec, conn)
    out += check_shut_parents(spec, conn)
    out += check_started_parents(spec, conn)
    out += check_released_parents(spec, conn)
    out += check_completed_parents(spec, conn)
    out += check_completion_order(spec, conn)
    out += check_paid_once(spec, conn, entities)
    out += check_schedule_places(spec, conn)
    out += check_double_booked(spec, conn)
    out += check_terms(spec, conn)
    out += check_elapsed(spec, conn, entities)
    return out


# ------------------------------------------------------------------------------------------- driver


def lint_built(name: str, spec: dict[str, Any], golden_conn: sqlite3.Connection, tasks: list[dict[str, Any]]) -> list[Violation]:
    out: list[Violation] = []
    out += check_fk_naming(spec)
    out += check_vocabulary(spec, name)
    out += check_tools(spec)
    modules = {key.split(".")[0]: module for key, (module, _) in _theme_columns(name).items()}
    out += check_data(spec, golden_conn, modules=modules)
    out += check_world(name, spec, golden_conn)
    out += check_instructions(spec, tasks)
    out += check_tasks(spec, golden_conn, tasks)   # task headroom: lint_tasks.py
    return out


def summarise(violations: list[Violation]) -> dict[str, Any]:
    """Exact counts per rule, and the first few examples of each."""
    counts = Counter(v.rule for v in violations)
    examples: dict[str, list[dict[str, str]]] = {}
    for v in violations:
        if len(examples.setdefault(v.rule, [])) < MAX_EXAMPLES:
            examples[v.rule].append(v.to_json())
    return {"violations": len(violations), "by_rule": dict(sorted(counts.items())), "examples": examples}


def lint_env(name: str) -> list[Violation]:
    """Build (if needed) and lint one registered environment."""
    from ..catalogue import catalog

    bundle = catalog.load_bundle(name)
    conn = bundle.connect()
    try:
        return lint_built(name, bundle.spec, conn, bundle.tasks)
    finally:
        conn.close()
