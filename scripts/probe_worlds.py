"""An outsider's probe of world coherence over a random sample of environments.

Independent of ``agentworld lint`` on purpose: it reads only the built spec and golden database and uses
its own name heuristics, the way a hostile reviewer would, so a linter blind spot does not hide here too.

    PYTHONPATH=. python scripts/probe_worlds.py --sample 40 --seed 1 [--json] [--examples 3]

Counts (each as "bad of checked"):

* ``policy_date``     the policy does not state the world's date
* ``status_date``     (row, date column) pairs whose status contradicts the date: overdue with a due date
                      not yet passed, active but expired, scheduled/upcoming in the past, done/completed in
                      the future, a past-only timestamp (created, status changed) after now
* ``rule_history``    rows sitting in a rule's resulting status that break the rule (threshold on the value,
                      lead time / window on when the status changed)
* ``quota_parents``   parents holding more open children than their quota rule allows
* ``used_cap``        same-row (used, cap) pairs with used above cap (seats booked > capacity, ...)
* ``amounts``         paid above due (not overpaid), partially_paid not strictly between 0 and due, paid not
                      equal to due, totals that are not the sum of their parts
* ``same_parent``     a row pointing at parent P and at a record R of P's that belongs to another P
* ``prose_numbers``   numbers in the policy that no rule value or the date backs (recipe-built worlds; a
                      hand-built domain such as retail enforces its figures in Python)
* ``prestart_outcome`` rows in a status before work starts (queued, pending, draft, new, requested, ...) that
                      carry a later event's stamp (started, finished, sent, paid, ...) or an outcome (exit code)
* ``draft_sent``      draft invoices past their due date, or with a sent/paid stamp or a paid amount
* ``event_status``    attended/no-show/checked-in/done/picked-up rows whose appointment lies ahead; scheduled/
                      upcoming/booked rows whose appointment has passed
* ``event_clock``     event timestamps (created, checked in, started, acknowledged, resolved, ...) after now or
                      before the row's own created_at
* ``changed_early``   a status that changed before the record was made or before what it answers to happened
                      (an alert acknowledged before it was triggered), once that date has passed
* ``span_order``      same-row spans that end before they start (start/end, valid_from/valid_to, check_in/
                      check_out), and a child's due date before its parent contract starts
* ``transition_stamp`` a status-change tool that clears or overwrites the stamp of another status than the one
                      it moves to (acknowledge clearing triggered_at)
* ``email_name``      an e-mail whose local part shares no word with the name on the same row
* ``outcome_state``   finished rows (decided, done, closed, ...) whose outcome, verdict or recommendation says
                      nothing is decided yet; rows still scheduled, or cancelled before they took place, that
                      already carry a score, rating, recommendation or outcome
* ``part_whole``      payments (refunds, instalments, payouts) of one record that add up to more than its total
* ``stale_status``    a record still processing, provisioning, in transit or in review long after it got
                      there, or an event lasting minutes or hours in progress on a day it did not start
* ``cancelled_late``  a session, visit or shift cancelled after it began
* ``money_mix``       a local business's records in several currencies, or its people spread evenly over the
                      world's countries
* ``before_parent``   something done to or by a record (made, sent, received, paid, closed, status changed) or
                      its start (shipped, scheduled, effective) on a day before the record it points at was
                      created, registered, placed, observed or reported
* ``copied_figure``   a rate, unit cost or consultation fee of a record that differs from the same figure of
                      the record it points at (a rental's daily rate and its vehicle's)
* ``lines_total``     an order (invoice, ticket) whose subtotal is not what its lines' quantity x unit price
                      add up to, or that has no lines
* ``shut_parent``     a record still open (scheduled, pending, active ...) under one out of service (inactive,
                      discontinued, cancelled, expired ...)
* ``made_after_shut`` a record created, placed or requested after the record it belongs to went out of service
* ``in_term``         an incident, loss, accident or event that occurred under a record with a term (a policy,
                      a campaign, a warranty, an offer) dated before that term began or after it ended
* ``double_booked``   a practitioner, a driver, a room, a vehicle or a patient in two timed sessions, visits or
                      shifts at once (neither called off)
* ``on_draft``        a bid, review, rating, booking, payment, premium or collection pointing at a record still
                      in draft or unpublished (a bid on a lot never listed, a payment of an invoice never issued)
* ``before_delivery`` a refund, return or payout requested or received before the charge it is about was
                      captured or the order or shipment it is about was delivered (its last status change)
* ``net_pay``         a payslip paying out more than its gross, or withholding more than it
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sqlite3
import sys
from collections import defaultdict
from typing import Any

import env_registry

ISO = re.compile(r"^\d{4}-\d\d-\d\d([T ]\d\d:\d\d(:\d\d)?Z?)?$")
WORD_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
                "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40,
                "fifty": 50, "sixty": 60, "ninety": 90, "hundred": 100}

OVERDUE = {"overdue", "past_due", "late", "delinquent"}
ACTIVE = {"active", "valid", "in_force", "current"}
EXPIRED = {"expired", "lapsed", "ended"}
FUTURE = {"scheduled", "upcoming", "planned", "rescheduled", "confirmed", "booked"}
PAST = {"done", "completed", "complete", "finished", "delivered", "attended", "checked_out", "no_show"}
STARTED = {"in_progress", "running", "checked_in", "boarding", "in_transit", "out_for_delivery"}

DUE_COL = re.compile(r"(^|_)(due|deadline)(_|$)")
EXPIRY_COL = re.compile(r"expir|valid_until|(^|_)(end|ends|until)(_|$)|end_date|period_end")
START_COL = re.compile(r"(^|_)(start|starts|scheduled|departs|departure|begins|event|pickup|appointment|"
                       r"check_in|session|show|game|match|visit|service|class|lesson|slot|performance)(_|$)")
PAST_ONLY = re.compile(r"(^|_)(created|updated|status_changed|registered|joined|hired|submitted|placed|filed|"
                       r"uploaded|signup|received|reported|posted)(_|$)")

USED_CAP = (("seats_booked", "capacity"), ("enrolled_count", "capacity"), ("times_redeemed", "max_redemptions"),
            ("quantity_reserved", "quantity_on_hand"), ("seats_available", "seats_total"),
            ("spend_to_date", "budget"), ("salary_min", "salary_max"), ("amount_paid", "amount_due"),
            ("attendee_count", "capacity"), ("used", "quota"), ("used", "limit"), ("clicks", "opens"),
            ("opens", "recipients"), ("clicks", "impressions"), ("conversions", "clicks"), ("conversions", "visitors"),
            ("threshold", "observed_value"), ("unit_cost", "price"), ("unit_cost", "unit_price"), ("cost", "price"),
            ("amount_awarded", "amount_requested"), ("amount_approved", "amount_requested"))
TOTAL_PARTS = (("total_amount", ("subtotal", "tax_amount", "shipping_fee")), ("line_total", None))


#: Dates of a record's making or of what happened to it: its status can only move after them.
MADE_OR_HAPPENED = re.compile(r"(created|triggered|submitted|requested|opened|placed|received|observed|detected|"
                              r"collected|reported|filed|logged|raised|booked|ordered|initiated)_(at|on|date)")

def load(name: str) -> tuple[dict[str, Any], sqlite3.Connection]:
    from agentworld_envs.catalogue import catalog
    from agentworld_envs.engine import state

    if env_registry.entry(name)["source"] == "synth":
        from agentworld_envs.synthesis.builder import theme_spec

        spec = theme_spec(env_registry.entry(name))
        conn = state.episode_connection(state.golden_bytes(spec))
        return spec, conn
    bundle = catalog.load_bundle(name)
    return bundle.spec, bundle.connect()


def owner_tables(name: str, tables: list[str]) -> set[str]:
    """Tables whose records own others (people, organisations, accounts: their library roles)."""
    try:
        theme = env_registry.theme(name)
    except KeyError:
        return set(tables)
    from agentworld_envs.synthesis.schema import build_entities

    return {e.table for e in build_entities(theme) if {"person", "organization", "account"} & set(e.roles)}


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class Tally:
    def __init__(self) -> None:
        self.bad: dict[str, int] = defaultdict(int)
        self.checked: dict[str, int] = defaultdict(int)
        self.examples: dict[str, list[str]] = defaultdict(list)
        self.max_examples = 3

    def add(self, check: str, bad: int, checked: int, example: str = "") -> None:
        self.bad[check] += bad
        self.checked[check] += checked
        if bad and example and len(self.examples[check]) < self.max_examples:
            self.examples[check].append(example)


def date_columns(conn: sqlite3.Connection, table: str) -> list[str]:
    out = []
    for (_, col, *_rest) in conn.execute(f"PRAGMA table_info({q(table)})"):
        v = conn.execute(f"SELECT {q(col)} FROM {q(table)} WHERE {q(col)} IS NOT NULL LIMIT 1").fetchone()
        if v and isinstance(v[0], str) and ISO.match(v[0]) and "birth" not in col:
            out.append(col)
    return out


def columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({q(table)})")]


def probe_env(name: str, tally: Tally) -> None:
    spec, conn = load(name)
    now = spec["now"]
    today = now[:10]
    policy = spec.get("policy", "")
    tally.add("policy_date", int(today not in policy), 1, name)
    tables = [t["name"] for t in spec["tables"]]
    for table in tables:
        cols = columns(conn, table)
        dates = date_columns(conn, table)
        # past-only timestamps
        for col in dates:
            if PAST_ONLY.search(col):
                n, bad = conn.execute(f"SELECT COUNT(*), SUM(substr({q(col)},1,10) > ?) FROM {q(table)} "
                                      f"WHERE {q(col)} IS NOT NULL", (today,)).fetchone()
                tally.add("status_date", bad or 0, n, f"{name}: {table}.{col} after {today}")
        if "is_active" in cols:
            for col in dates:
                if EXPIRY_COL.search(col) and not DUE_COL.search(col):
                    n, bad = conn.execute(f"SELECT COUNT(*), SUM(substr({q(col)},1,10) < ?) FROM {q(table)} WHERE "
                                          f"is_active = 1 AND {q(col)} IS NOT NULL", (today,)).fetchone()
                    tally.add("status_date", bad or 0, n, f"{name}: {table} active with {col} passed")
        if "status" not in cols:
            continue
        for col in dates:
            pairs = []
            if DUE_COL.search(col):
                pairs.append((OVERDUE, "<"))
            if EXPIRY_COL.search(col) and not DUE_COL.search(col):
                pairs += [(ACTIVE, ">="), (EXPIRED, "<")]
            if START_COL.search(col) and not EXPIRY_COL.search(col):
                pairs += [(FUTURE, ">"), (STARTED, "<=")]
            if (START_COL.search(col) or (EXPIRY_COL.search(col) and "expir" not in col and "valid" not in col)) \
                    and not DUE_COL.search(col):
                pairs.append((PAST, "<="))
            for states, op in pairs:
                marks = ", ".join("?" * len(states))
                n, ok = conn.execute(
                    f"SELECT COUNT(*), SUM(substr({q(col)},1,10) {op} ?) FROM {q(table)} WHERE status IN ({marks}) "
                    f"AND {q(col)} IS NOT NULL", (today, *sorted(states))).fetchone()
                if n:
                    bad = n - (ok or 0)
                    ex = conn.execute(f"SELECT id, status, {q(col)} FROM {q(table)} WHERE status IN ({marks}) AND "
                                      f"{q(col)} IS NOT NULL AND NOT (substr({q(col)},1,10) {op} ?) LIMIT 1",
                                      (*sorted(states), today)).fetchone()
                    tally.add("status_date", bad, n, f"{name}: {table} {ex} vs {today}" if ex else "")
        # amounts
        paid = next((c for c in cols if c in ("amount_paid", "paid_amount")), None)
        due = next((c for c in cols if c in ("amount_due", "total_due", "balance_due", "total_amount")), None)
        if paid and due:
            rows = conn.execute(f"SELECT id, status, {q(paid)}, {q(due)} FROM {q(table)} WHERE {q(paid)} IS NOT NULL "
                                f"AND {q(due)} IS NOT NULL").fetchall()
            bad = []
            for rid, st, p, d in rows:
                if st == "partially_paid" and not (0 < p < d):
                    bad.append((rid, st, p, d))
                elif st == "paid" and abs(p - d) > 0.005:
                    bad.append((rid, st, p, d))
                elif st not in ("overpaid", "refunded") and p - d > 0.005:
                    bad.append((rid, st, p, d))
            tally.add("amounts", len(bad), len(rows), f"{name}: {table} {bad[:1]}")
        for total, parts in TOTAL_PARTS:
            if total not in cols:
                continue
            if parts is None:
                if {"quantity", "unit_price"} <= set(cols):
                    n, bad = conn.execute(f"SELECT COUNT(*), SUM(abs(line_total - quantity * unit_price) > 0.011) "
                                          f"FROM {q(table)} WHERE line_total IS NOT NULL").fetchone()
                    tally.add("amounts", bad or 0, n, f"{name}: {table}.line_total")
                continue
            present = [p for p in parts if p in cols]
            if parts[0] in present and len(present) >= 2:
                expr = " + ".join(f"COALESCE({q(p)},0)" for p in present)
                n, bad = conn.execute(f"SELECT COUNT(*), SUM(abs({q(total)} - ({expr})) > 0.011) FROM {q(table)} "
                                      f"WHERE {q(total)} IS NOT NULL").fetchone()
                tally.add("amounts", bad or 0, n, f"{name}: {table}.{total}")
    # used/cap
    for table in tables:
        cols = set(columns(conn, table))
        for used, cap in USED_CAP:
            if used in cols and cap in cols:
                n, bad = conn.execute(f"SELECT COUNT(*), SUM({q(used)} > {q(cap)}) FROM {q(table)} WHERE {q(used)} "
                                      f"IS NOT NULL AND {q(cap)} IS NOT NULL").fetchone()
                tally.add("used_cap", bad or 0, n, f"{name}: {table}.{used} > {cap}")
    # same parent through two references
    fks = {t["name"]: {c["name"]: c["references"].split(".")[0] for c in t["columns"] if c.get("references")}
           for t in spec["tables"]}
    owners = owner_tables(name, tables)
    for table, refs in fks.items():
        for a_col, a_tab in refs.items():
            if a_tab not in owners:
                continue
            for b_col, b_tab in refs.items():
                if b_col == a_col:
                    continue
                via = [c for c, t in fks.get(b_tab, {}).items() if t == a_tab]
                if len(via) != 1:
                    continue
                v = via[0]
                n, bad = conn.execute(
                    f"SELECT COUNT(*), SUM(p.{q(v)} IS NOT t.{q(a_col)}) FROM {q(table)} t JOIN {q(b_tab)} p ON "
                    f"p.id = t.{q(b_col)} WHERE t.{q(a_col)} IS NOT NULL AND p.{q(v)} IS NOT NULL").fetchone()
                tally.add("same_parent", bad or 0, n, f"{name}: {table}.{a_col} vs {b_tab}.{v} via {b_col}")
    # rules
    tools = {t["name"]: t for t in spec["tools"]}
    values: set[float] = set()
    for rule in spec.get("rules", []):
        values.add(float(rule["value"]))
        tool = tools.get(rule["tool"])
        if tool is None:
            continue
        impl = tool["impl"]
        table, col, v = rule["table"], rule["column"], rule["value"]
        if rule["kind"] == "quota":
            states = rule.get("states", [])
            marks = ", ".join("?" * len(states))
            counts = [c for (c,) in conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(col)} IS NOT NULL AND status "
                                                 f"IN ({marks}) GROUP BY {q(col)}", tuple(states))]
            bad = sum(1 for c in counts if c > v)
            tally.add("quota_parents", bad, len(counts), f"{name}: {table}.{col} max {max(counts or [0])} > {v}")
            continue
        if rule["kind"] == "duty":
            # a follow-up the policy owes: no open child under a parent its trigger has closed
            states, shut = rule.get("states", []), rule.get("guards", [])
            n, bad = conn.execute(
                f"SELECT COUNT(*), SUM(p.status IN ({', '.join('?' * len(shut))})) FROM {q(table)} t JOIN "
                f"{q(rule['parent'])} p ON p.id = t.{q(col)} WHERE t.status IN ({', '.join('?' * len(states))})",
                (*shut, *states)).fetchone()
            tally.add("rule_history", bad or 0, n, f"{name}: {rule['text']}")
            continue
        if rule["kind"] == "bound":
            op = "<=" if rule["op"] == "max" else ">="
            n, ok = conn.execute(f"SELECT COUNT(*), SUM({q(col)} {op} ?) FROM {q(table)} WHERE {q(col)} IS NOT NULL",
                                 (v,)).fetchone()
            tally.add("rule_history", n - (ok or 0), n, f"{name}: {rule['text']}")
            continue
        if impl.get("kind") != "transition" or rule["kind"] not in ("threshold", "min_lead_time", "max_age"):
            continue
        to = impl["to"]
        if rule["kind"] == "threshold":
            op = "<=" if rule["op"] == "max" else ">="
            n, ok = conn.execute(f"SELECT COUNT(*), SUM({q(col)} {op} ?) FROM {q(table)} WHERE status = ? AND "
                                 f"{q(col)} IS NOT NULL", (v, to)).fetchone()
        elif rule["kind"] == "min_lead_time":
            n, ok = conn.execute(f"SELECT COUNT(*), SUM((julianday({q(col)}) - julianday(status_changed_at)) * 24 >= ?) "
                                 f"FROM {q(table)} WHERE status = ? AND {q(col)} IS NOT NULL AND status_changed_at IS "
                                 f"NOT NULL", (v, to)).fetchone()
        else:
            n, ok = conn.execute(f"SELECT COUNT(*), SUM(julianday(status_changed_at) - julianday({q(col)}) <= ?) "
                                 f"FROM {q(table)} WHERE status = ? AND {q(col)} IS NOT NULL AND status_changed_at IS "
                                 f"NOT NULL", (v, to)).fetchone()
        tally.add("rule_history", n - (ok or 0), n, f"{name}: {rule['text']} ({n - (ok or 0)} of {n} {to})")
    probe_lifecycle(name, spec, conn, tally)
    probe_outcomes(name, spec, conn, tally)
    probe_parts(name, spec, conn, tally)
    probe_figures(name, spec, conn, tally)
    probe_shut(name, spec, conn, tally)
    probe_before_parent(name, spec, conn, tally)
    probe_terms(name, spec, conn, tally)
    probe_drafts(name, spec, conn, tally)
    probe_double_booked(name, spec, conn, tally)
    probe_passing(name, spec, conn, tally)
    probe_money(name, spec, conn, tally)
    probe_after_delivery(name, spec, conn, tally)
    # numbers in the policy prose (a hand-built domain's Python tools enforce figures no rule record states)
    if "generator" in spec.get("data", {}):
        conn.close()
        return
    backed = values | {float(x) for x in re.findall(r"\d+", today)}
    text = re.sub(r"\d{4}-\d\d-\d\d", " ", policy)
    found = [float(x.replace(",", "")) for x in re.findall(r"(?<![\w.-])\d[\d,]*(?:\.\d+)?", text)]
    found += [float(WORD_NUMBERS[w.lower()]) for w in re.findall(r"\b[A-Za-z]+\b", text) if w.lower() in WORD_NUMBERS]
    unbacked = [x for x in found if x not in backed and x not in (0.0, 1.0)]
    tally.add("prose_numbers", len(unbacked), len(found), f"{name}: {unbacked[:4]}")
    conn.close()


PRESTART = {"queued", "pending", "waiting", "draft", "new", "requested", "not_started", "todo", "backlog"}
LATER_STAMP = re.compile(r"(^|_)(started|finished|completed|ended|resolved|closed|delivered|shipped|paid|sent|"
                         r"approved|rejected|decided|graded|resulted|processed|checked_in|checked_out|acknowledged|"
                         r"mitigated|published|picked_up|dispatched|fulfilled|executed|ran)(_at|_on|_date)$")
OUTCOME_COL = re.compile(r"^(exit_code|result|result_code|outcome|duration_seconds|duration_ms|output)$")
DRAFT = {"draft", "not_sent", "unsent"}
SENT_STAMP = re.compile(r"(^|_)(sent|paid|issued|delivered|emailed)(_at|_on|_date)$")
ATTENDED = {"no_show", "checked_in", "completed", "picked_up", "done", "attended", "checked_out", "collected",
            "in_progress", "seated"}
UPCOMING = {"scheduled", "upcoming", "booked", "confirmed", "planned"}
APPT_COL = re.compile(r"(^|_)(scheduled|appointment|pickup|visit|slot|session|start|starts|event|booking|reserved|"
                      r"arrival|check_in|class|lesson|service)(_at|_on|_date|_time|_for)?$|^(scheduled|appointment|"
                      r"pickup|visit|start|event|session|service)_(date|time|at|on|for|start)$")
EVENT_STAMP = re.compile(r"(^|_)(created|checked_in|checked_out|started|acknowledged|resolved|triggered|closed|"
                         r"completed|finished|submitted|sent|paid|received|reported|logged|recorded|uploaded|"
                         r"posted|filed|fired|occurred|processed|cancelled|approved|rejected|opened|"
                         r"published|delivered|picked_up|mitigated|hired|joined|registered)(_at|_on)$")
SPAN_PAIRS = (("start", "end"), ("starts", "ends"), ("valid_from", "valid_to"), ("valid_from", "valid_until"),
              ("check_in", "check_out"), ("period_start", "period_end"), ("start_date", "end_date"),
              ("starts_at", "ends_at"), ("effective", "expires"), ("opens", "closes"), ("departs", "arrives"),
              ("departure", "return"), ("move_in", "move_out"), ("coverage_start", "coverage_end"))
PARENT_START = re.compile(r"^(start_date|starts_at|starts_on|valid_from|effective_date|move_in_date|lease_start|"
                          r"coverage_start|period_start|start_on|effective_on|commencement_date)$")
CHILD_DUE = re.compile(r"(^|_)(due)(_date|_on|_at)?$|^due_(date|on|at)$")
NAME_FOR_EMAIL = (("email", ("full_name", "name", "contact_name")), ("work_email", ("full_name", "name")),
                  ("contact_email", ("contact_name", "full_name", "name")))


def _span_cols(cols: list[str]) -> list[tuple[str, str]]:
    out = []
    for a, b in SPAN_PAIRS:
        for sa in ("", "_at", "_on", "_date", "_time"):
            for sb in ("", "_at", "_on", "_date", "_time"):
                if a + sa in cols and b + sb in cols and (a + sa, b + sb) not in out:
                    out.append((a + sa, b + sb))
    for c in cols:   # x_start / x_end
        if c.endswith("_start") and c[:-6] + "_end" in cols:
            out.append((c, c[:-6] + "_end"))
    return out


def _words(text: str) -> set[str]:
    import unicodedata

    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return {w for w in re.split(r"[^a-z]+", folded) if len(w) >= 2}


FINISHED = {"done", "completed", "decided", "closed", "resolved", "finished", "settled", "graded", "appealed"}
NOT_HAPPENED = {"scheduled", "rescheduled", "upcoming", "booked", "planned", "cancelled", "canceled", "withdrawn"}
NOT_DECIDED = ("undecided", "pending", "tbd", "undetermined", "unknown", "unresolved", "not_decided", "none")
VERDICT_COL = re.compile(r"^(outcome|result|verdict|decision|recommendation|disposition)$")
SCORE_COL = re.compile(r"^(outcome|result|verdict|recommendation|score|home_score|away_score|mood_score|csat_score|"
                       r"satisfaction_rating|feedback_rating|final_score|final_grade|winner_id|exit_code)$")
PAYING = re.compile(r"(^|_)(payments?|refunds?|installments?|instalments?|payouts?|remittances?|disbursements?|"
                    r"reimbursements?)$")
PAID_PART = ("amount", "payment_amount", "amount_paid", "paid_amount", "refund_amount", "amount_refunded")
WHOLE = ("total_amount", "amount_due", "grand_total", "total", "amount", "order_total", "invoice_total")


def probe_outcomes(name: str, spec: dict[str, Any], conn: sqlite3.Connection, tally: Tally) -> None:
    """An outcome agrees with the status: decided once finished, absent before the thing took place."""
    undecided = ", ".join(f"'{w}'" for w in NOT_DECIDED)
    for t in spec["tables"]:
        table = t["name"]
        cols = columns(conn, table)
        if "status" not in cols:
            continue
        states = {s for (s,) in conn.execute(f"SELECT DISTINCT status FROM {q(table)}")}
        done = sorted(FINISHED & states)
        for col in [c for c in cols if VERDICT_COL.match(c)]:
            if done:
                marks = ", ".join("?" * len(done))
                n, bad = conn.execute(f"SELECT COUNT(*), SUM(lower({q(col)}) IN ({undecided})) FROM {q(table)} "
                                      f"WHERE status IN ({marks})", tuple(done)).fetchone()
                tally.add("outcome_state", bad or 0, n, f"{name}: {table}.{col} undecided while {done}")
        ahead = sorted(NOT_HAPPENED & states)
        for col in [c for c in cols if SCORE_COL.match(c)]:
            if ahead:
                marks = ", ".join("?" * len(ahead))
                n, bad = conn.execute(f"SELECT COUNT(*), SUM({q(col)} IS NOT NULL AND lower({q(col)}) NOT IN "
                                      f"({undecided})) FROM {q(table)} WHERE status IN ({marks})",
                                      tuple(ahead)).fetchone()
                ex = conn.execute(f"SELECT id, status, {q(col)} FROM {q(table)} WHERE status IN ({marks}) AND "
                                  f"{q(col)} IS NOT NULL AND lower({q(col)}) NOT IN ({undecided}) LIMIT 1",
                                  tuple(ahead)).fetchone()
                tally.add("outcome_state", bad or 0, n, f"{name}: {table}.{col} {ex}")


def probe_parts(name: str, spec: dict[str, Any], conn: sqlite3.Connection, tally: Tally) -> None:
    """What pays a record (its payments, its refunds) adds up to no more than the record's total."""
    for t in spec["tables"]:
        table = t["name"]
        if not PAYING.search(table):
            continue
        cols = columns(conn, table)
        part = next((c for c in PAID_PART if c in cols), None)
        for c in t["columns"]:
            parent = (c.get("references") or "").split(".")[0]
            if not part or not parent or parent == table:
                continue
            whole = next((w for w in WHOLE if w in columns(conn, parent)), None)
            if whole is None:
                continue
            n, bad = conn.execute(f"SELECT COUNT(*), SUM(paid > whole + 0.005) FROM (SELECT p.{q(whole)} AS whole, "
                                  f"SUM(c.{q(part)}) AS paid FROM {q(table)} c JOIN {q(parent)} p ON p.id = "
                                  f"c.{q(c['name'])} WHERE p.{q(whole)} IS NOT NULL GROUP BY p.id)").fetchone()
            tally.add("part_whole", bad or 0, n, f"{name}: {table}.{part} over {parent}.{whole}")


#: A figure a record takes from the record it points at, by the same name (a rental's daily rate is its
#: vehicle's), and a record's lines (order items) that add up to its subtotal.
SAME_FIGURE = re.compile(r"^(daily|nightly|hourly|weekly|monthly)_rate$|^unit_cost$|^consultation_fee$")
LINES = re.compile(r"(^|_)(lines?|items?)$")


def probe_figures(name: str, spec: dict[str, Any], conn: sqlite3.Connection, tally: Tally) -> None:
    """Figures that say the same thing on two records agree; an order's subtotal is what its lines come to."""
    for t in spec["tables"]:
        table = t["name"]
        cols = columns(conn, table)
        for c in t["columns"]:
            parent = (c.get("references") or "").split(".")[0]
            if not parent or parent == table:
                continue
            pcols = columns(conn, parent)
            for col in (x for x in cols if SAME_FIGURE.search(x) and x in pcols):
                n, bad = conn.execute(f"SELECT COUNT(*), SUM(abs(c.{q(col)} - p.{q(col)}) > 0.005) FROM {q(table)} c "
                                      f"JOIN {q(parent)} p ON p.id = c.{q(c['name'])} WHERE c.{q(col)} IS NOT NULL "
                                      f"AND p.{q(col)} IS NOT NULL").fetchone()
                tally.add("copied_figure", bad or 0, n, f"{name}: {table}.{col} vs {parent}.{col}")
            if LINES.search(table) and "subtotal" in pcols and {"quantity", "unit_price"} <= set(cols):
                # a line's figure is its quantity x unit price, less its discount where it has one
                off = next((f"(1 - coalesce(c.{q(d)}, 0) / 100.0)" for d in ("discount_percent", "discount_pct")
                            if d in cols), "1")
                line = f"c.quantity * c.unit_price * {off}"
                n, bad = conn.execute(f"SELECT COUNT(*), SUM(abs(sub - lines) > 0.005 * (k + 1)) FROM (SELECT "
                                      f"p.subtotal AS sub, SUM({line}) AS lines, COUNT(c.id) AS k FROM {q(parent)} p "
                                      f"LEFT JOIN {q(table)} c ON p.id = c.{q(c['name'])} WHERE p.subtotal IS NOT NULL "
                                      f"GROUP BY p.id)").fetchone()
                tally.add("lines_total", bad or 0, n, f"{name}: {parent}.subtotal vs its {table}")
                if "line_total" in cols:
                    n, bad = conn.execute(f"SELECT COUNT(*), SUM(abs(c.line_total - {line}) > 0.0051) FROM {q(table)} c "
                                          f"WHERE c.line_total IS NOT NULL").fetchone()
                    tally.add("lines_total", bad or 0, n, f"{name}: {table}.line_total vs its quantity x unit price")


#: A parent out of service, and a child still going (what a hostile reader calls open).
PARENT_SHUT = ("inactive", "discontinued", "cancelled", "retired", "terminated", "expired", "archived", "suspended")
CHILD_OPEN = ("active", "open", "scheduled", "pending", "in_progress", "confirmed", "requested", "processing",
              "todo", "backlog", "booked", "submitted", "queued", "in_review")
CHILD_MADE = re.compile(r"^(created_at|placed_at|ordered_at|order_date|submitted_at|requested_at|booked_at|opened_at)$")


def probe_shut(name: str, spec: dict[str, Any], conn: sqlite3.Connection, tally: Tally) -> None:
    """Nothing still open under a record out of service, nor made under it after it went out."""
    shut_marks, open_marks = ", ".join("?" * len(PARENT_SHUT)), ", ".join("?" * len(CHILD_OPEN))
    for t in spec["tables"]:
        table = t["name"]
        cols = columns(conn, table)
        for c in t["columns"]:
            parent = (c.get("references") or "").split(".")[0]
            if not parent or parent == table or not {"status", "status_changed_at"} <= set(columns(conn, parent)):
                continue
            join = (f"FROM {q(table)} c JOIN {q(parent)} p ON p.id = c.{q(c['name'])} WHERE p.status IN ({shut_marks})")
            if "status" in cols:
                n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(c['name'])} IS NOT NULL").fetchone()[0]
                bad = conn.execute(f"SELECT COUNT(*) {join} AND c.status IN ({open_marks})", (*PARENT_SHUT, *CHILD_OPEN)
                                   ).fetchone()[0]
                tally.add("shut_parent", bad, n, f"{name}: {table} open under a shut {parent}")
            for made in (x for x in cols if CHILD_MADE.match(x)):
                n = conn.execute(f"SELECT COUNT(*) {join}", PARENT_SHUT).fetchone()[0]
                bad = conn.execute(f"SELECT COUNT(*) {join} AND substr(c.{q(made)}, 1, 10) > substr(p.status_changed_at, 1, 10)",
                                   PARENT_SHUT).fetchone()[0]
                tally.add("made_after_shut", bad, n, f"{name}: {table}.{made} after its {parent} was shut")


#: Statuses something passes through in days, and the days past which a hostile reader calls it stale.
STALE_AFTER = {"processing": 30, "provisioning": 30, "in_transit": 45, "out_for_delivery": 7, "picked_up": 14,
               "boarding": 1, "awaiting_info": 120, "under_review": 180, "in_review": 180}
HAPPENING = {"in_progress", "checked_in", "boarding", "in_session", "live", "running"}
TIMED = re.compile(r"(^|_)(duration|length)_(minutes|mins|hours)$")
EVENT_START = re.compile(r"^(starts_at|start_time|scheduled_at|departs_at|departure_(at|date|time)|session_(at|date)|"
                         r"appointment_(at|date)|visit_(at|date)|shift_date|check_in_date)$")
INTERNATIONAL = re.compile(r"import|export|international|global|overseas|foreign|freight|travel|cross-border|customs",
                           re.IGNORECASE)


def probe_passing(name: str, spec: dict[str, Any], conn: sqlite3.Connection, tally: Tally) -> None:
    """A record still in a passing status long after it got there (an order processing for months, a device
    provisioning for years), or an event lasting minutes or hours in progress on a day it did not start."""
    today = spec["now"][:10]
    for t in spec["tables"]:
        table = t["name"]
        cols = columns(conn, table)
        if "status" not in cols:
            continue
        for state, days in STALE_AFTER.items():
            if "status_changed_at" in cols:
                n, bad = conn.execute(f"SELECT COUNT(*), SUM(julianday(?) - julianday(substr(status_changed_at, 1, 10)) "
                                      f"> ?) FROM {q(table)} WHERE status = ? AND status_changed_at IS NOT NULL",
                                      (today, days, state)).fetchone()
                tally.add("stale_status", bad or 0, n, f"{name}: {table} {state} for more than {days} days")
        timed = any(TIMED.search(c) for c in cols)
        for col in cols:
            if not EVENT_START.match(col) or not (timed or col.endswith(("_at", "_time"))):
                continue
            marks = ", ".join("?" * len(HAPPENING))
            n, bad = conn.execute(f"SELECT COUNT(*), SUM(substr({q(col)}, 1, 10) != ?) FROM {q(table)} WHERE status IN "
                                  f"({marks}) AND {q(col)} IS NOT NULL AND length({q(col)}) >= 10",
                                  (today, *HAPPENING)).fetchone()
            tally.add("stale_status", bad or 0, n, f"{name}: {table} happening now with {col} on another day")
            n, bad = conn.execute(f"SELECT COUNT(*), SUM(substr(status_changed_at, 1, length({q(col)})) > {q(col)}) "
                                  f"FROM {q(table)} WHERE status IN ('cancelled', 'canceled', 'withdrawn') AND "
                                  f"length({q(col)}) >= 10 AND status_changed_at IS NOT NULL").fetchone() \
                if "status_changed_at" in cols else (0, 0)
            tally.add("cancelled_late", bad or 0, n, f"{name}: {table} cancelled after its {col}")


#: What is asked for or paid once a charge is captured or a parcel delivered, and the date it was asked or paid.
AFTER_DELIVERY = re.compile(r"(?:^|_)(?:refunds?|returns?|return_requests?|payouts?|chargebacks?|disputes?)$")
DONE_STATES = ("captured", "delivered")
ASKED = ("requested_at", "opened_at", "filed_at", "received_at", "created_at", "initiated_at")


def probe_after_delivery(name: str, spec: dict[str, Any], conn: sqlite3.Connection, tally: Tally) -> None:
    """Refunds before their charge was captured, returns before their order arrived; payslips paying out more
    than they earn."""
    for t in spec["tables"]:
        table = t["name"]
        cols = columns(conn, table)
        asked = next((c for c in ASKED if c in cols), None)
        for c in t["columns"] if AFTER_DELIVERY.search(table) and asked else ():
            parent = (c.get("references") or "").split(".")[0]
            if not parent or parent == table or not {"status", "status_changed_at"} <= set(columns(conn, parent)):
                continue
            n, bad = conn.execute(
                f"SELECT COUNT(*), SUM(substr(c.{q(asked)}, 1, 10) < substr(p.status_changed_at, 1, 10)) FROM {q(table)} c "
                f"JOIN {q(parent)} p ON p.id = c.{q(c['name'])} WHERE p.status IN ({', '.join('?' * len(DONE_STATES))})",
                DONE_STATES).fetchone()
            tally.add("before_delivery", bad or 0, n, f"{name}: {table}.{asked} before its {parent} was done")
        for gross in [g for g in cols if g.startswith("gross")]:
            net = "net" + gross[len("gross"):]
            if net in cols:
                withheld = [w for w in ("tax_withheld", "deductions") if w in cols]
                over = " OR ".join([f"{q(net)} > {q(gross)} + 0.005"] + [f"{q(w)} > {q(gross)}" for w in withheld])
                n, bad = conn.execute(f"SELECT COUNT(*), SUM({over}) FROM {q(table)} WHERE {q(gross)} IS NOT NULL").fetchone()
                tally.add("net_pay", bad or 0, n, f"{name}: {table}.{net} above {gross}")


def probe_money(name: str, spec: dict[str, Any], conn: sqlite3.Connection, tally: Tally) -> None:
    """A local business's records in several currencies, or its people spread evenly over the world's countries
    (a random country per row)."""
    abroad = bool(INTERNATIONAL.search(f"{spec.get('title', '')} {spec.get('description', '')}"))
    for t in spec["tables"]:
        table = t["name"]
        for col in columns(conn, table):
            if re.fullmatch(r"(\w+_)?currency(_code)?", col) and not abroad:
                n = conn.execute(f"SELECT COUNT(DISTINCT {q(col)}) FROM {q(table)}").fetchone()[0]
                tally.add("money_mix", int(n > 1), 1, f"{name}: {table}.{col} in {n} currencies")
            elif re.fullmatch(r"(\w+_)?country(_code)?", col):
                rows = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(col)} IS NOT NULL GROUP BY {q(col)} "
                                    f"ORDER BY 1 DESC").fetchall()
                total = sum(r[0] for r in rows)
                spread = len(rows) > 40 or (total >= 20 and rows[0][0] < 0.3 * total)
                tally.add("money_mix", int(spread), 1, f"{name}: {table}.{col}: {len(rows)} countries, "
                                                       f"the commonest {rows[0][0] if rows else 0} of {total}")


PARENT_MADE = re.compile(r"^(created|registered|signup|signed_up|joined|opened|placed|submitted|requested|filed|"
                         r"intake|enrolled|onboarded|observed|reported|detected|occurred|triggered)(_at|_on|_date)?$")
CHILD_EVENT = re.compile(r"^(created|sent|received|submitted|requested|filed|placed|occurred|logged|recorded|reported|"
                         r"paid|processed|completed|closed|resolved|delivered|status_changed|start|starts|started|"
                         r"ship|shipped|scheduled|departure|departs|launched|effective|valid_from)(_at|_on|_date|_for)$")


def probe_before_parent(name: str, spec: dict[str, Any], conn: sqlite3.Connection, tally: Tally) -> None:
    """What happens to a record comes no earlier than the day the record it points at was made."""
    for t in spec["tables"]:
        table = t["name"]
        events = [c for c in columns(conn, table) if CHILD_EVENT.match(c)]
        for c in t["columns"]:
            parent = (c.get("references") or "").split(".")[0]
            if not events or not parent or parent == table:
                continue
            for made in [p for p in columns(conn, parent) if PARENT_MADE.match(p)]:
                for ev in events:
                    n, bad = conn.execute(
                        f"SELECT COUNT(*), SUM(substr(c.{q(ev)}, 1, 10) < substr(p.{q(made)}, 1, 10)) FROM {q(table)} c "
                        f"JOIN {q(parent)} p ON p.id = c.{q(c['name'])} WHERE c.{q(ev)} IS NOT NULL AND "
                        f"p.{q(made)} IS NOT NULL").fetchone()
                    tally.add("before_parent", bad or 0, n, f"{name}: {table}.{ev} before {parent}.{made}")


HAPPENED = re.compile(r"^(?:incident|loss|accident|damage|injury|breakdown|occurred|occurrence|event|conversion|"
                      r"date_of_\w+)(?:_at|_on|_date)?$")
TERM_FROM = re.compile(r"^(?:effective|start|starts|valid_from|coverage_start|term_start|period_start|inception|"
                       r"effective_from|begins)(?:_at|_on|_date)?$")
TERM_TO = re.compile(r"^(?:expiry|expiration|expires|end|ends|valid_until|valid_to|coverage_end|term_end|period_end|"
                     r"effective_to)(?:_at|_on|_date)?$")


def probe_terms(name: str, spec: dict[str, Any], conn: sqlite3.Connection, tally: Tally) -> None:
    """What happened under a record with a term (a claim's incident under its policy) lies within that term."""
    for t in spec["tables"]:
        table = t["name"]
        events = [c for c in date_columns(conn, table) if HAPPENED.match(c)]
        for c in t["columns"]:
            parent = (c.get("references") or "").split(".")[0]
            if not events or not parent or parent == table:
                continue
            pcols = date_columns(conn, parent)
            start = next((p for p in pcols if TERM_FROM.match(p)), None)
            end = next((p for p in pcols if TERM_TO.match(p)), None)
            if not start or not end:
                continue
            for ev in events:
                n, bad = conn.execute(
                    f"SELECT COUNT(*), SUM(substr(c.{q(ev)}, 1, 10) < substr(p.{q(start)}, 1, 10) OR "
                    f"substr(c.{q(ev)}, 1, 10) > substr(p.{q(end)}, 1, 10)) FROM {q(table)} c JOIN {q(parent)} p "
                    f"ON p.id = c.{q(c['name'])} WHERE c.{q(ev)} IS NOT NULL AND p.{q(start)} IS NOT NULL AND "
                    f"p.{q(end)} IS NOT NULL").fetchone()
                tally.add("in_term", bad or 0, n, f"{name}: {table}.{ev} outside {parent}.{start}..{end}")


#: What a hostile reader calls taking a record up, and the statuses of a record never put out.
TAKING_UP = re.compile(r"(^|_)(bids?|reviews?|ratings?|feedbacks?|bookings?|reservations?|payments?|premiums?|"
                       r"premium_payments|collections?|deposits?|orders?|claims?)$")
NEVER_OUT = ("draft", "unpublished")


def probe_drafts(name: str, spec: dict[str, Any], conn: sqlite3.Connection, tally: Tally) -> None:
    """Nothing taken up from a record still in draft (a bid on a lot never listed, a payment of a draft invoice)."""
    for t in spec["tables"]:
        table = t["name"]
        if not TAKING_UP.search(table) or re.match(r"(legal|annual|internal|peer|code|design|compliance|credit|editorial|quality|safety|risk|technical|tech|validation)_", table):
            continue
        for c in t["columns"]:
            parent = (c.get("references") or "").split(".")[0]
            if not parent or parent == table or "status" not in columns(conn, parent):
                continue
            join = f"FROM {q(table)} c JOIN {q(parent)} p ON p.id = c.{q(c['name'])}"
            n = conn.execute(f"SELECT COUNT(*) {join}").fetchone()[0]
            bad = conn.execute(f"SELECT COUNT(*) {join} WHERE p.status IN (?, ?)", NEVER_OUT).fetchone()[0]
            tally.add("on_draft", bad, n, f"{name}: {table} under a draft {parent}")


#: What one person or one room can only do once at a time, how a hostile reader finds an event's start and length,
#: and the statuses of an event called off.
SINGLE = re.compile(r"(^|_)(therapists?|doctors?|physicians?|surgeons?|nurses?|dentists?|stylists?|barbers?|trainers?|"
                    r"coaches?|tutors?|instructors?|engineers?|technicians?|agents?|drivers?|pilots?|guides?|rooms?|"
                    r"beamlines?|courts?|lanes?|vehicles?|trucks?|vans?|boats?|chairs?|patients?|clients?)$")
EV_START = re.compile(r"^(starts_at|scheduled_at|start_at|start_time|appointment_at|session_at|slot_start)$")
EV_LENGTH = {"duration_minutes": 1440.0, "duration_hours": 24.0, "length_minutes": 1440.0, "length_hours": 24.0}
OFF = ("cancelled", "canceled", "rescheduled", "declined", "rejected", "withdrawn", "void", "voided", "expired")


def probe_double_booked(name: str, spec: dict[str, Any], conn: sqlite3.Connection, tally: Tally) -> None:
    """No practitioner, room, vehicle or patient in two timed events at once."""
    for t in spec["tables"]:
        table = t["name"]
        cols = columns(conn, table)
        start = next((c for c in cols if EV_START.match(c)), None)
        length = next((c for c in cols if c in EV_LENGTH), None)
        if not start or not length or "status" not in cols:
            continue
        ends = {a: f"(julianday({a}.{q(start)}) + {a}.{q(length)} / {EV_LENGTH[length]})" for a in ("x", "y")}
        off = ", ".join("?" * len(OFF))
        for c in t["columns"]:
            parent = (c.get("references") or "").split(".")[0]
            if not parent or parent == table or not SINGLE.search(parent):
                continue
            fk = q(c["name"])
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {fk} IS NOT NULL AND status NOT IN ({off})",
                             OFF).fetchone()[0]
            bad = conn.execute(f"SELECT COUNT(*) FROM {q(table)} x JOIN {q(table)} y ON x.{fk} = y.{fk} AND x.id < y.id "
                               f"WHERE length(x.{q(start)}) > 10 AND length(y.{q(start)}) > 10 AND x.status NOT IN ({off}) "
                               f"AND y.status NOT IN ({off}) AND julianday(x.{q(start)}) < {ends['y']} "
                               f"AND julianday(y.{q(start)}) < {ends['x']} AND x.{q(length)} > 0 AND y.{q(length)} > 0",
                               (*OFF, *OFF)).fetchone()[0]
            tally.add("double_booked", bad, n, f"{name}: {table} at once for one {parent}")


def probe_lifecycle(name: str, spec: dict[str, Any], conn: sqlite3.Connection, tally: Tally) -> None:
    now = spec["now"]
    today = now[:10]
    tables = [t["name"] for t in spec["tables"]]
    for table in tables:
        cols = columns(conn, table)
        if "status" in cols:
            states = {s for (s,) in conn.execute(f"SELECT DISTINCT status FROM {q(table)}")}
            enum = next((c.get("enum") or [] for t in spec["tables"] if t["name"] == table for c in t["columns"]
                         if c["name"] == "status"), [])
            # Pre-start only while every status listed before it is too (a ticket 'pending' on the customer was opened).
            lead = next((n for n, s in enumerate(enum) if s not in PRESTART), len(enum))
            pre = sorted(PRESTART & states & set(enum[:lead])) if enum else sorted(PRESTART & states)
            later = [c for c in cols if LATER_STAMP.search(c) or OUTCOME_COL.match(c)]
            if pre and later:
                marks = ", ".join("?" * len(pre))
                cond = " OR ".join(f"{q(c)} IS NOT NULL" for c in later)
                n, bad = conn.execute(f"SELECT COUNT(*), SUM({cond}) FROM {q(table)} WHERE status IN ({marks})",
                                      tuple(pre)).fetchone()
                ex = conn.execute(f"SELECT id, status, {', '.join(q(c) for c in later)} FROM {q(table)} WHERE status "
                                  f"IN ({marks}) AND ({cond}) LIMIT 1", tuple(pre)).fetchone()
                tally.add("prestart_outcome", bad or 0, n, f"{name}: {table} {later} {ex}")
            draft = sorted(DRAFT & states)
            if draft:
                marks = ", ".join("?" * len(draft))
                conds = [f"{q(c)} IS NOT NULL" for c in cols if SENT_STAMP.search(c)]
                conds += [f"{q(c)} > 0" for c in cols if c in ("amount_paid", "paid_amount")]
                conds += [f"substr({q(c)}, 1, 10) < '{today}'" for c in date_columns(conn, table) if DUE_COL.search(c)]
                billed = {"sent", "paid", "overdue", "partially_paid"} & states   # an invoice's lifecycle
                if conds and billed:
                    cond = " OR ".join(conds)
                    n, bad = conn.execute(f"SELECT COUNT(*), SUM({cond}) FROM {q(table)} WHERE status IN ({marks})",
                                          tuple(draft)).fetchone()
                    ex = conn.execute(f"SELECT * FROM {q(table)} WHERE status IN ({marks}) AND ({cond}) LIMIT 1",
                                      tuple(draft)).fetchone()
                    tally.add("draft_sent", bad or 0, n, f"{name}: {table} {ex}")
            dates = date_columns(conn, table)
            for col in dates:
                if not APPT_COL.search(col) or EXPIRY_COL.search(col) or DUE_COL.search(col):
                    continue
                for group, op in ((ATTENDED & states, "<="), (UPCOMING & states, ">")):
                    if not group:
                        continue
                    marks = ", ".join("?" * len(group))
                    n, ok = conn.execute(f"SELECT COUNT(*), SUM(substr({q(col)}, 1, 10) {op} ?) FROM {q(table)} WHERE "
                                         f"status IN ({marks}) AND {q(col)} IS NOT NULL", (today, *sorted(group))).fetchone()
                    ex = conn.execute(f"SELECT id, status, {q(col)} FROM {q(table)} WHERE status IN ({marks}) AND "
                                      f"{q(col)} IS NOT NULL AND NOT (substr({q(col)}, 1, 10) {op} ?) LIMIT 1",
                                      (*sorted(group), today)).fetchone()
                    tally.add("event_status", n - (ok or 0), n, f"{name}: {table}.{col} {ex} vs {today}")
        dates = date_columns(conn, table)
        for col in dates:
            if not EVENT_STAMP.search(col) or re.search(r"expected|estimated|scheduled|planned|next|due", col):
                continue
            n, bad = conn.execute(f"SELECT COUNT(*), SUM(CASE WHEN length({q(col)}) = 10 THEN {q(col)} > ? ELSE "
                                  f"{q(col)} > ? END) FROM {q(table)} WHERE {q(col)} IS NOT NULL", (today, now)).fetchone()
            tally.add("event_clock", bad or 0, n, f"{name}: {table}.{col} after {now}")
            if col != "created_at" and "created_at" in dates:
                n, bad = conn.execute(f"SELECT COUNT(*), SUM(substr({q(col)}, 1, length({q(col)})) < substr(created_at, 1, "
                                      f"length({q(col)}))) FROM {q(table)} WHERE {q(col)} IS NOT NULL AND created_at IS "
                                      f"NOT NULL").fetchone()
                tally.add("event_clock", bad or 0, n, f"{name}: {table}.{col} before created_at")
        if "status_changed_at" in dates:
            for col in [d for d in dates if MADE_OR_HAPPENED.fullmatch(d)]:
                n, bad = conn.execute(f"SELECT COUNT(*), SUM(substr(status_changed_at, 1, 10) < substr({q(col)}, 1, 10)) "
                                      f"FROM {q(table)} WHERE {q(col)} IS NOT NULL AND status_changed_at IS NOT NULL "
                                      f"AND substr({q(col)}, 1, 10) <= ?", (today,)).fetchone()
                tally.add("changed_early", bad or 0, n, f"{name}: {table}.status_changed_at before {col}")
        for a, b in _span_cols(dates):
            n, bad = conn.execute(f"SELECT COUNT(*), SUM(substr({q(b)}, 1, 10) < substr({q(a)}, 1, 10)) FROM {q(table)} "
                                  f"WHERE {q(a)} IS NOT NULL AND {q(b)} IS NOT NULL").fetchone()
            tally.add("span_order", bad or 0, n, f"{name}: {table}.{b} before {a}")
        for t in spec["tables"]:
            if t["name"] != table:
                continue
            for c in t["columns"]:
                parent = (c.get("references") or "").split(".")[0]
                if not parent or parent == table:
                    continue
                pstart = [p for p in date_columns(conn, parent) if PARENT_START.match(p)]
                for due in [d for d in dates if CHILD_DUE.search(d)]:
                    for ps in pstart:
                        n, bad = conn.execute(
                            f"SELECT COUNT(*), SUM(substr(c.{q(due)}, 1, 10) < substr(p.{q(ps)}, 1, 10)) FROM {q(table)} c "
                            f"JOIN {q(parent)} p ON p.id = c.{q(c['name'])} WHERE c.{q(due)} IS NOT NULL AND p.{q(ps)} "
                            f"IS NOT NULL").fetchone()
                        tally.add("span_order", bad or 0, n, f"{name}: {table}.{due} before {parent}.{ps}")
        for email, names in NAME_FOR_EMAIL:
            who = next((c for c in names if c in cols), None)
            if email not in cols:
                continue
            if who is None and {"first_name", "last_name"} <= set(cols):
                who = "first_name || ' ' || last_name"
            if who is None:
                continue
            expr = who if " " in who else q(who)
            rows = conn.execute(f"SELECT {expr}, {q(email)} FROM {q(table)} WHERE {q(email)} IS NOT NULL AND "
                                f"({expr}) IS NOT NULL").fetchall()
            # A name in another script (田中 さゆり) has no Latin words to compare.
            rows = [(n, e) for n, e in rows if isinstance(e, str) and "@" in e and isinstance(n, str) and _words(n)]
            bad = [(n, e) for n, e in rows if not any(w in e.split("@")[0].lower() for w in _words(n))]
            tally.add("email_name", len(bad), len(rows), f"{name}: {table} {bad[:1]}")
    for tool in spec.get("tools", []):
        impl = tool.get("impl", {})
        if impl.get("kind") != "transition":
            continue
        to = impl["to"]
        for col, value in (impl.get("set") or {}).items():
            stem = re.sub(r"_(at|on|date)$", "", col)
            if stem == col or col == "status_changed_at" or stem == to:
                continue
            enum = next((c.get("enum") or [] for t in spec["tables"] if t["name"] == impl["table"]
                         for c in t["columns"] if c["name"] == impl.get("column", "status")), [])
            order = {s: n for n, s in enumerate(enum)}
            if stem not in order or to not in order:
                continue
            # Clearing the stamp of a status the record moves on from (forward) erases history; so does writing
            # another status's stamp. A clear that finds the stamp empty in every status it moves from is moot.
            marks = ", ".join("?" * len(impl["from"]))
            held = conn.execute(f"SELECT COUNT(*) FROM {q(impl['table'])} WHERE {q(impl.get('column', 'status'))} "
                                f"IN ({marks}) AND {q(col)} IS NOT NULL", tuple(impl["from"])).fetchone()[0]
            bad = value is not None or (order[stem] < order[to] and held > 0)
            tally.add("transition_stamp", int(bad), 1, f"{name}: {tool['name']} sets {col}={value!r} moving to {to}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--names", nargs="*")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--examples", type=int, default=3)
    args = ap.parse_args(argv)
    names = args.names or random.Random(args.seed).sample([e["name"] for e in env_registry.manifest()], args.sample)
    tally = Tally()
    tally.max_examples = args.examples
    for name in names:
        probe_env(name, tally)
    report = {k: {"bad": tally.bad[k], "checked": tally.checked[k],
                  "share": round(tally.bad[k] / tally.checked[k], 3) if tally.checked[k] else 0.0,
                  "examples": tally.examples[k]} for k in sorted(tally.checked)}
    if args.json:
        print(json.dumps({"envs": len(names), "checks": report}, indent=1))
    else:
        print(f"{len(names)} environments")
        for k, r in report.items():
            print(f"{k:15s} {r['bad']:6d} / {r['checked']:6d}  ({100 * r['share']:.1f} %)")
            for ex in r["examples"]:
                print(f"    {ex}")
    return 0 if not any(tally.bad.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
