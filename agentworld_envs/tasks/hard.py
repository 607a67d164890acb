"""The hard tier: tasks whose reference needs at least :data:`MIN_CALLS` dependent tool calls.

Each shape is look up → decide → act on several records → confirm, mixing reads, conditions that
span two entities, writes and a final aggregate read whose answer depends on the writes:

* **cross_sweep** — change every child of a parent whose *other* parent has some property ("cancel
  every booking of restaurant R whose diner is a VIP, then tell me how many of R's bookings are
  cancelled"): each child's related record must be read to decide; siblings whose related record
  does not match are plausible distractors in the same status.
* **chain_sweep** — from a record the request describes by its fields, hop to its parent, change
  that parent's children in one status past a bound on a number or date (never the record the chain
  started from; a sibling sits exactly on the bound), then count what the parent has in the
  resulting status.
* **hidden_sweep** — change every child of a parent found by its fields, where the policy forbids
  it for some: no status is named, so each record's status decides between acting and refusing
  (the answer explains the refusals).
* **hidden_batch** — a list of records named by their codes to change in one go, some of which the
  policy forbids, and some the request leaves out because a date of theirs falls on a weekend (which
  no record states): each is looked up, its weekday worked out, the allowed ones changed, the ones left
  out left alone, the rest refused with their status.
* **window_sweep** — change the records (the children of a parent the request describes by its
  fields, or every record in one status) whose date lies more than N days before or after today, or
  whose two dates lie more than N days apart, or whose date falls on a weekend (or both: a weekday and
  a window read off each record), and, where they have a figure, whose figure is above a bound; then total a figure (or count) over what the change leaves. No date is written out: the
  agent works the boundary out from the world's date in the policy, or per record. Siblings the
  change allows sit a day inside the window (or exactly N days apart) and exactly on the figure's
  bound, each missing one condition only.
* **adjust_sweep** — a price rise in two tiers: the figure (a price, a fee, a salary) of every record of a
  parent (16 to 30 of them) that one condition picks goes up by one percentage or another according to a
  second condition (a weekend date first, else a field, a flag, a date window relative to today), rounded
  to the cent and never past a cap; then a total. The update tool takes any figure, so nothing but the agent's own reading and arithmetic decides;
  siblings the first condition leaves out stay as they are.
* **budget_fill** — work through a parent's records in one status (16 to 28; or every record in one status whose
  date falls on a weekend, in a month or in a run of days), earliest first by a date, changing each
  while the total of a figure over the parent's records in the resulting status (those already there
  count) stays within a budget; one that would pass it is skipped and the next tried; then what is left.
  The budget is one where stopping at the first misfit, forgetting what is already spent or taking the
  smallest first each give another set.
* **best_fit** — the same records (17 to 22) and budget with no order: the one set whose figures use the
  most of the budget without passing it (no other set reaches that total; it takes at least four records
  and leaves out at least four; filling smallest or largest first does not find it). A search over combinations,
  not a running total.
* **group_fill** — every record in one status (16 to 30, under 3 to 6 parents), earliest first by a date,
  each changed while its parent's total of a figure over the parent's records in the resulting status stays
  within one cap per parent (what a parent already has counts, and only a listing of the resulting status
  shows it); one that would pass its parent's cap is skipped and the next tried; then the total changed.
  Forgetting what a parent has, stopping a parent at its first misfit, filling smallest first or spending
  one budget across all parents each give another set.
* **rule_batch** — the same list, every record in a status the change allows, where one of the
  theme's business rules (a threshold, a time window) forbids it for one: its own figure, read
  against the policy's rule, decides; the status gives nothing away. Under a threshold, records on a
  weekend are left out as in hidden_batch (not under a date rule, whose refusal gives a date itself).

Every shape returns a :class:`~agentworld_envs.tasks.generate.Part` or raises ``Skip``; the part's
reference is checked against :data:`MIN_CALLS` here, so a kept hard task never has a short reference.
"""

from __future__ import annotations

import bisect
import calendar
import re
from datetime import date, timedelta
from decimal import ROUND_FLOOR, ROUND_HALF_UP, Decimal
from typing import Any, Callable, Iterable, Iterator

from ..engine.language import field_value, flag_words, in_state, indefinite, number, participle, value_words, verb_phrase
from ..engine.rules import VERIFY_RULE, Rule
from ..synthesis.semantics import ordered_pairs
from .generate import DATE, SKIP_READ, Generator, Part, Skip, call, fmt_value, total_of
from .factors import tool_writes
from .model import TableInfo, clock_gen, clock_side, words

#: Fewest tool calls (``submit`` excluded) a hard-tier reference may have.
MIN_CALLS = 8
SHAPES = ("cross_sweep", "chain_sweep", "hidden_sweep", "hidden_batch", "rule_batch", "window_sweep", "adjust_sweep",
          "budget_fill", "best_fit", "group_fill", "duty_sweep", "verify_batch")
#: Rule kinds a record's own figure breaks (quotas count other records: not a batch's business).
RECORD_RULES = ("threshold", "min_lead_time", "max_age")


def _act(gen: Generator, tool: dict[str, Any], t: TableInfo, obj: str) -> str:
    return verb_phrase(gen.verb(tool, t).replace(" ", "_"), obj)


def _reason(args: dict[str, Any]) -> str:
    return f" Use the reason \"{args['reason']}\"." if "reason" in args else ""


def _property(col: str, value: Any) -> str | None:
    """A related record's field as the end of "whose <record> …": "is a VIP", "has loyalty tier gold"."""
    if isinstance(value, bool) or value in (0, 1) and col.startswith(("is_", "has_")):
        if col.startswith("is_"):
            return f"is {'' if value else 'not '}{words(col[3:])}"
        if col.startswith("has_"):
            return f"{'has' if value else 'does not have'} {words(col[4:])}"
        return None
    if isinstance(value, str):
        return f"has {field_value(col, value)}"
    return None


def _confirm(gen: Generator, c: TableInfo, fk: str, pid: int, st: str, to: str) -> tuple[dict[str, Any], int] | None:
    """The read that confirms the writes: how many of the parent's children are now in ``to``."""
    if c.count and fk in c.count_params and st in c.count_params:
        args = {c.count_params[fk]: pid, c.count_params[st]: to}
        return call(c.count, **args), int(gen.run(c.count, **args)["value"] or 0)
    if c.search and fk in c.search_params and st in c.search_params:
        args = {c.search_params[fk]: pid, c.search_params[st]: to}
        if c.search_limit:
            args[c.search_limit] = 50
        res = gen.run(c.search, **args)
        return call(c.search, **args), int(res["total"])
    return None


def _look_up(gen: Generator, t: TableInfo, row: dict[str, Any], steps: list[dict[str, Any]]) -> None:
    """Find one record a batch names by its code (the call goes into ``steps``)."""
    find = gen.find(t, row)
    gen.run(find["name"], **find["arguments"])
    steps.append(find)
    gen.visited.add((t.name, row["id"]))


def _allowed_rows(gen: Generator, t: TableInfo, tr: dict[str, Any]) -> list[dict[str, Any]]:
    """The labelled records of ``t`` whose status and business rules let ``tr`` act on them."""
    st, allowed = tr["impl"]["column"], list(tr["impl"]["from"])
    marks = ", ".join("?" * len(allowed))
    return [r for r in gen.m.rows(gen.conn, t.name, f'"{st}" IN ({marks}) AND "{t.label}" IS NOT NULL', tuple(allowed))
            if gen.rules_allow(tr, r["id"])]


def _enough(steps: list[dict[str, Any]]) -> None:
    if len(steps) < MIN_CALLS:
        raise Skip("reference too short for the hard tier")


def _parent(gen: Generator, c: TableInfo, fk: str, pid: int) -> tuple[TableInfo, list[dict[str, Any]], str]:
    """The parent a scope names (table, the lookups that find it, its description), or Skip where it has no
    label to be found by."""
    p = gen.m.tables[c.fks[fk]]
    prow = gen.m.rows(gen.conn, p.name, "id = ?", (pid,))[0]
    if p.label is None or prow.get(p.label) is None:
        raise Skip("parent has no label")
    steps, pdesc, _ = gen.locate(p, prow, attributes=1.0)
    return p, steps, pdesc


def _confirmed(gen: Generator, c: TableInfo, args: dict[str, Any], steps: list[dict[str, Any]]) -> None:
    """Lists the changed records again where the reference has read once only (the listing it decided from):
    a hard task reads before it decides and confirms after it acts."""
    reads = sum(1 for s in steps if not tool_writes(gen.m.tools[s["name"]]))
    if reads < 2:
        steps += gen.page(c, args)[1]


def cross_sweep(gen: Generator) -> Part:
    combos = []
    for p in gen.anchors():
        for ct, fk in p.children:
            c = gen.m.tables[ct]
            if not c.search or fk not in c.search_params or not c.transitions:
                continue
            for fk2, qname in c.fks.items():
                q = gen.m.tables.get(qname)
                if fk2 == fk or q is None or qname in (p.name, ct) or not q.get:
                    continue
                if not gen.m.feeds(c.search, q.get, f"{ct}.{fk2}", q.get_param):
                    continue
                cols = [k for k, spec in q.cols.items() if k not in q.fks and k != "id" and not spec.get("unique")
                        and (spec.get("enum") or spec["type"] == "BOOLEAN") and k != q.status_col()]
                if cols:
                    combos += [(p, c, fk, q, fk2, tr, cols) for tr in c.transitions]
    if not combos:
        raise Skip("no child with a second parent to check")
    gen.rng.shuffle(combos)
    for p, c, fk, q, fk2, tr, cols in combos[:6]:
        st, allowed = tr["impl"]["column"], tr["impl"]["from"]
        parents = [r[0] for r in gen.conn.execute(
            f'SELECT "{fk}" FROM "{c.name}" WHERE "{fk}" IS NOT NULL GROUP BY 1 HAVING COUNT(*) BETWEEN 4 AND 14 ORDER BY 1')]
        gen.rng.shuffle(parents)
        for pid in parents[:6]:
            kids = gen.m.rows(gen.conn, c.name, f'"{fk}" = ?', (pid,))
            qrows = {r["id"]: r for r in gen.m.rows(gen.conn, q.name, f'id IN (SELECT "{fk2}" FROM "{c.name}" WHERE "{fk}" = ?)', (pid,))}
            if len(qrows) < 2:
                continue
            gen.rng.shuffle(cols)
            for col in cols:
                def value(kid: dict[str, Any], col: str = col, qrows: dict = qrows, fk2: str = fk2) -> Any:
                    qr = qrows.get(kid[fk2])
                    return None if qr is None else qr[col]
                options = sorted({value(k) for k in kids if value(k) is not None}, key=str)
                gen.rng.shuffle(options)
                for v in options:
                    match = [k for k in kids if value(k) == v]
                    rest = [k for k in kids if value(k) != v]
                    phrase = _property(col, v)
                    if (phrase is None or not 2 <= len(match) <= 5 or any(k[st] not in allowed for k in match)
                            or not any(k[st] in allowed for k in rest) or not all(gen.rules_allow(tr, k["id"]) for k in match)):
                        continue
                    return _cross_sweep_part(gen, p, c, fk, q, fk2, tr, pid, col, v, phrase)
    raise Skip("no parent whose children split on a related record")


def _cross_sweep_part(gen: Generator, p: TableInfo, c: TableInfo, fk: str, q: TableInfo, fk2: str, tr: dict[str, Any],
                      pid: int, col: str, v: Any, phrase: str) -> Part:
    prow = gen.m.rows(gen.conn, p.name, "id = ?", (pid,))[0]
    if prow.get(p.label) is None:
        raise Skip("parent has no label")
    st, to = tr["impl"]["column"], tr["impl"]["to"]
    steps, pdesc, _ = gen.locate(p, prow, attributes=0.0)
    rows, calls = gen.page(c, {c.search_params[fk]: pid})
    steps += calls
    seen: set[int] = set()
    done = 0
    last_args: dict[str, Any] = {}
    for r in rows:                       # the program: read each child's related record, act on the matches
        qid = r[fk2]
        if qid is None:
            continue
        if qid not in seen:
            seen.add(qid)
            steps.append(call(q.get, **{q.get_param: qid}))
            gen.run(q.get, **{q.get_param: qid})
        if gen.row_now(q.name, qid)[col] == v:
            last_args = gen.transition_args(tr, r["id"])
            gen.run(tr["name"], **last_args)
            steps.append(call(tr["name"], **last_args))
            done += 1
    confirm = _confirm(gen, c, fk, pid, st, to)
    if confirm is None:
        raise Skip("nothing confirms the writes")
    steps.append(confirm[0])
    _enough(steps)
    gen.hidden += 1
    state = value_words(to)
    who = f"whose {q.singular} {phrase}"
    act_all = _act(gen, tr, c, f"every {c.singular} of {pdesc} {who}")
    act_its = _act(gen, tr, c, f"each of its {c.plural} {who}")
    # the count is of the parent's records, named as such: "its" could be the related record's (blind round 23)
    ask = gen.rng.choice([f"how many {c.plural} of that {p.singular} are in status {state} now",
                          f"the number of {in_state(to, c.plural)} that {p.singular} has now",
                          f"how many {in_state(to, c.plural)} that {p.singular} has in total now"])
    text = gen.rng.choice([
        f"{act_all[0].upper() + act_all[1:]}.{_reason(last_args)} When that is done, tell me {ask}.",
        f"Go through the {c.plural} of {pdesc}: {act_its}.{_reason(last_args)} Then report {ask}.",
        f"I'd like you to {act_all}.{_reason(last_args)} Afterwards, let me know {ask}.",
        f"Please check the {c.plural} of {pdesc} and {act_its}.{_reason(last_args)} Finish by telling me {ask}.",
    ])
    return Part(steps, text, answer=("numeric", str(confirm[1])), writes=True, structure="conditional")


def chain_sweep(gen: Generator) -> Part:
    pool = [t for t in gen.m.tables.values() if (t.label or t.search) and any(
        par in gen.m.tables and gen.m.tables[par].get and par != t.name for par in t.fks.values())]
    if not pool:
        raise Skip("no record with a parent")
    gen.rng.shuffle(pool)
    for t in pool[:4]:
        for fk, qname in gen.rng.sample(list(t.fks.items()), len(t.fks)):
            q = gen.m.tables.get(qname)
            if q is None or qname == t.name or not q.get:
                continue
            for ct, cfk in gen.rng.sample(q.children, len(q.children)):
                c = gen.m.tables[ct]
                st = c.status_col()
                if not c.search or not st or cfk not in c.search_params or st not in c.search_params:
                    continue
                for tr in c.transitions:
                    got = _chain_target(gen, t, fk, q, c, cfk, st, tr)
                    if got is not None:
                        return got
    raise Skip("no chain to a parent with changeable children")


def _chain_target(gen: Generator, t: TableInfo, fk: str, q: TableInfo, c: TableInfo, cfk: str, st: str,
                  tr: dict[str, Any]) -> Part | None:
    allowed, to = tr["impl"]["from"], tr["impl"]["to"]
    marks = ", ".join("?" * len(allowed))
    qs = gen.conn.execute(f'SELECT "{cfk}", "{st}", COUNT(*) FROM "{c.name}" WHERE "{st}" IN ({marks}) AND "{cfk}" IS NOT NULL '
                          f'GROUP BY 1, 2 HAVING COUNT(*) BETWEEN 3 AND 9 ORDER BY 1, 2', tuple(allowed)).fetchall()
    gen.rng.shuffle(qs)
    for qid, s, _ in qs[:5]:
        # what the search will list, and the bound that splits it, checked before any lookup is made
        listed = gen.m.rows(gen.conn, c.name, f'"{cfk}" = ? AND "{st}" = ?', (qid, s))
        cut = _split(gen, c, listed)
        if cut is None:
            continue
        col, bound, phrase = cut
        targets = [r for r in listed if r[col] is not None and r[col] > bound]
        if not all(gen.rules_allow(tr, r["id"]) for r in targets) or len(targets) + 5 < MIN_CALLS:
            continue
        starts = gen.m.rows(gen.conn, t.name, f'"{fk}" = ?', (qid,))
        starts = [r for r in starts if not (t.name == c.name and r[st] == s)]   # the start is never a target
        gen.rng.shuffle(starts)
        for row in starts[:3]:
            if not t.label and not t.search:
                continue
            gen.visited.clear()   # an earlier start that did not fit is not part of this chain
            try:
                steps, desc, cur = gen.locate(t, row, attributes=0.7 if t.label else 1.0)
            except Skip:
                continue
            if (t.name, row["id"]) not in gen.visited or not gen.m.feeds(cur, q.get, f"{t.name}.{fk}", q.get_param):
                continue
            if (q.name, qid) in gen.visited:
                continue
            steps.append(call(q.get, **{q.get_param: qid}))
            gen.run(q.get, **{q.get_param: qid})
            gen.visited.add((q.name, qid))
            sargs = {c.search_params[cfk]: qid, c.search_params[st]: s}
            if c.search_limit:
                sargs[c.search_limit] = 50
            res = gen.run(c.search, **sargs)
            steps.append(call(c.search, **sargs))
            if (len(res["results"]) != res["total"] or any((c.name, r["id"]) in gen.visited for r in listed)  # never back
                    or len(steps) + len(targets) + 1 < MIN_CALLS):
                continue
            last_args: dict[str, Any] = {}
            for r in targets:
                last_args = gen.transition_args(tr, r["id"])
                gen.run(tr["name"], **last_args)
                steps.append(call(tr["name"], **last_args))
            confirm = _confirm(gen, c, cfk, qid, st, to)
            if confirm is None:
                raise Skip("nothing confirms the writes")
            steps.append(confirm[0])
            _enough(steps)
            rel = gen.related(fk, q.singular, desc)
            group = f"{in_state(s, c.plural)} {phrase}"
            done = participle(gen.verb(tr, c))
            text = gen.rng.choice([
                f"Look up {rel} and {_act(gen, tr, c, f'all of its {group}')}.{_reason(last_args)} "
                f"How many {in_state(to, c.plural)} does it have after that?",
                f"Find {rel}. Every one of its {group} should be {done}.{_reason(last_args)} "
                f"Once done, tell me how many of that {q.singular}'s {c.plural} are in status {value_words(to)}.",
                f"{rel[0].upper() + rel[1:]} needs attention: {_act(gen, tr, c, f'each of its {group}')}.{_reason(last_args)} "
                f"Report the number of that {q.singular}'s {c.plural} in status {value_words(to)} afterwards.",
            ])
            return Part(steps, text, answer=("numeric", str(confirm[1])), writes=True, structure="branching")
    return None


def _split(gen: Generator, c: TableInfo, rows: list[dict[str, Any]]) -> tuple[str, Any, str] | None:
    """A condition on a number or date that splits ``rows``: (column, bound, phrase) where the targets are
    the rows strictly above the bound, at least two of them, and a row sits exactly on it (the distractor
    just on the other side)."""
    cols = [k for k, spec in c.cols.items() if k not in SKIP_READ and k not in c.fks and not spec.get("enum")
            and (spec["type"] in ("REAL", "INTEGER") or (spec["type"] == "TEXT" and all(
                isinstance(r.get(k), str) and DATE.match(r[k]) for r in rows)))]
    gen.rng.shuffle(cols)
    for col in cols:
        vals = sorted({r[col] for r in rows if r[col] is not None})
        if len(vals) < 3 or len(vals) != sum(1 for r in rows if r[col] is not None):
            continue
        bound = vals[-3] if gen.rng.random() < 0.5 or len(vals) < 4 else vals[-4]
        if isinstance(bound, str):
            m = re.fullmatch(r"(.+?)_(at|on|date|time)", col)
            what = f"{m.group(1)}" if m and m.group(1).endswith("ed") and "_" not in m.group(1) else f"with {words(col)}"
            return col, bound, f"{what} after {bound}"
        if isinstance(bound, float) and bound != round(bound, 2):
            continue
        return col, bound, f"whose {words(col)} is above {fmt_value(bound)}"
    return None


def hidden_sweep(gen: Generator) -> Part:
    part = gen.p_bulk_hidden(attributes=1.0, allowed=(4, 10))
    _enough(part.steps)
    return part


def hidden_batch(gen: Generator) -> Part:
    """A list of records named by their codes, to change in one go, where the policy forbids it for some and
    the request itself leaves out those whose date falls on a weekend: each must be looked up, its weekday
    worked out, the allowed ones changed, the ones left out left alone and the rest refused with their
    status as the reason."""
    opts = [(t, tr) for t in gen.anchors() for tr in t.transitions]
    gen.rng.shuffle(opts)
    for t, tr in opts[:6]:
        st, allowed, to = tr["impl"]["column"], list(tr["impl"]["from"]), tr["impl"]["to"]
        marks = ", ".join("?" * len(allowed))
        ok = _allowed_rows(gen, t, tr)
        # refused for their status alone: a record a business rule blocks too would have two reasons to give
        bad = [r for r in gen.m.rows(gen.conn, t.name, f'"{st}" NOT IN ({marks}) AND "{st}" != ? AND "{t.label}" IS NOT NULL',
                                     (*allowed, to)) if gen.rules_allow(tr, r["id"])]
        n_bad = gen.rng.choice([1, 1, 2])
        n_ok = max(3, MIN_CALLS - (MIN_CALLS - n_bad) // 2 - n_bad) + gen.rng.choice([0, 0, 1])
        while 2 * n_ok + n_bad < MIN_CALLS:
            n_ok += 1
        if len(ok) < n_ok or len(bad) < n_bad:
            continue
        picked = _leave_out(gen, t, ok, bad, n_ok, n_bad)
        if picked is None:
            continue
        rows, out, unless = picked
        gen.rng.shuffle(rows)
        steps: list[dict[str, Any]] = []
        done, refused = [], []
        last_args: dict[str, Any] = {}
        for r in rows:                        # the program: look each one up, act, leave out or refuse
            _look_up(gen, t, r, steps)
            if r["id"] in out:
                continue
            if r[st] in allowed:
                last_args = gen.transition_args(tr, r["id"])
                gen.run(tr["name"], **last_args)
                steps.append(call(tr["name"], **last_args))
                done.append(str(r[t.label]))
            else:
                refused.append((str(r[t.label]), r[st]))
        _enough(steps)
        gen.hidden += len(refused) + len(out)
        labels = [str(r[t.label]) for r in rows]
        listing = ", ".join(labels[:-1]) + " and " + labels[-1]
        plural, verb = t.plural, gen.verb(tr, t)
        label_words = words(t.label)
        listed = _act(gen, tr, t, f"the {plural} listed here by {label_words}")
        text = gen.rng.choice([
            f"Please {_act(gen, tr, t, f'these {plural}')}: {listing}. {unless}.{_reason(last_args)}",
            f"I have a list of {plural} to {verb}, by {label_words}: {listing}. {unless}.{_reason(last_args)}",
            f"{listed[0].upper() + listed[1:]}: {listing}. {unless}.{_reason(last_args)}",
        ])
        blocked = sorted({s for _, s in refused})
        why = "; ".join(f"{label} is {value_words(s)}" for label, s in refused)
        refusal = (f"I cannot {_act(gen, tr, t, ' or '.join(label for label, _ in refused))}: {why}, and the policy does "
                   f"not allow it. The other {len(done)} went through.")
        check = {"reasons": [blocked], "candidates": [f"{t.name}.{st}"], "values": list(t.cols[st].get("enum") or []),
                 "exclude": sorted({*allowed, to}), "results": [to], "about": [label for label, _ in refused]}
        return Part(steps, text, refusal=refusal, refusal_check=check, writes=True, structure="conditional",
                    rule=gen.lifecycle_rule(tr, t))
    raise Skip("no table with allowed and forbidden records to batch")


def duty_sweep(gen: Generator) -> Part:
    """Close a few records named by their codes, where the policy's follow-up duty is owed on some: the
    request says nothing of their children, so only the policy and a listing of each record's children show
    what else must change (the children still open), and what must not (those already past it, and the
    children of a record that has none open)."""
    owed = [(name, duty) for name, duties in gen.duties.items() for duty in duties]
    gen.rng.shuffle(owed)
    for name, duty in owed:
        tr, t, c = gen.m.tools[name], gen.m.tables[duty.parent], gen.m.tables[duty.table]
        if not t.label or t.label not in t.finders:
            continue
        marks = ", ".join("?" * len(duty.states))
        kids = {pid: (n_open, n) for pid, n_open, n in gen.conn.execute(
            f'SELECT "{duty.column}", SUM("status" IN ({marks})), COUNT(*) FROM "{c.name}" WHERE "{duty.column}" IS NOT NULL '
            f'GROUP BY 1', tuple(duty.states))}
        rows = _allowed_rows(gen, t, tr)
        owing = [r for r in rows if 1 <= kids.get(r["id"], (0, 0))[0] <= 5]
        # a record whose children are all past the duty: listing them shows there is nothing more to do
        quiet = [r for r in rows if kids.get(r["id"], (0, 0))[0] == 0 and kids.get(r["id"], (0, 0))[1] >= 1]
        n_owing = gen.rng.choice([2, 3, 3])
        n_quiet = gen.rng.choice([1, 1, 2]) if quiet else 0
        if len(owing) < n_owing or len(quiet) < n_quiet:
            continue
        picked = gen.rng.sample(owing, n_owing) + gen.rng.sample(quiet, n_quiet)
        if sum(kids[r["id"]][0] for r in picked) < 3:
            continue
        gen.rng.shuffle(picked)
        steps: list[dict[str, Any]] = []
        last_args: dict[str, Any] = {}
        for r in picked:                      # look each one up, close it; the duty follows each close
            _look_up(gen, t, r, steps)
            last_args = gen.transition_args(tr, r["id"])
            gen.run(name, **last_args)
            steps.append(call(name, **last_args))
        _enough(steps + [s for owed_calls in gen.followed.values() for s in owed_calls])
        labels = [str(r[t.label]) for r in picked]
        listing = ", ".join(labels[:-1]) + " and " + labels[-1]
        plural, label_words = t.plural, words(t.label)
        text = gen.rng.choice([
            f"Please {_act(gen, tr, t, f'these {plural}')}: {listing}.{_reason(last_args)}",
            f"I have {len(picked)} {plural} to {gen.verb(tr, t)}, by {label_words}: {listing}.{_reason(last_args)}",
            f"{_act(gen, tr, t, f'the {plural} {listing}')}.{_reason(last_args)}",
        ])
        text = text[0].upper() + text[1:]
        return Part(steps, text, writes=True, structure="branching", rule=duty.text)
    raise Skip("no follow-up duty with records owing it")


def _detail_columns(t: TableInfo, rows: list[dict[str, Any]], st: str) -> list[str]:
    """Fields a request may give beside a record's code to say which one it means: a date or a count every
    row has, that is neither the record's key, label, status nor a reference."""
    out = []
    for col, spec in t.cols.items():
        if col in SKIP_READ or col in t.fks or col in (t.label, st) or spec.get("primary_key") or spec.get("unique"):
            continue
        values = [r.get(col) for r in rows]
        if any(v is None for v in values):
            continue
        if spec["type"] == "TEXT" and all(isinstance(v, str) and DATE.match(v) for v in values):
            out.append(col)
        elif spec["type"] == "INTEGER" and _COUNTED.search(col) and all(isinstance(v, int) and 1 <= v <= 500 for v in values):
            out.append(col)
    return out


#: Counts a customer knows of their own record (a party of 4, 3 nights), unlike a stock level or a score.
_COUNTED = re.compile(r"party_size|nights|guests|adults|children|pax|people|persons|attendees|headcount|quantity|"
                      r"seats_booked|tickets|passengers|rooms|units|participants")


def _as_given(value: Any) -> Any:
    """A detail as a request gives it: a timestamp by its date, a count as it is."""
    return value[:10] if isinstance(value, str) else value


def _misstated(gen: Generator, value: Any) -> Any:
    """A detail close to the record's own but not it: a date a few days off, a count one or two off."""
    if isinstance(value, str):
        day = date.fromisoformat(value[:10]) + timedelta(days=gen.rng.choice([-3, -2, -1, 1, 1, 2, 3, 7]))
        return day.isoformat()
    return value + gen.rng.choice([-2, -1, 1, 1, 2]) if value > 2 else value + gen.rng.choice([1, 2])


def verify_batch(gen: Generator) -> Part:
    """A list of records to change, each named by its code and one detail of its own ("BK-12 (reserved for
    2026-06-19)"), where the detail given for one or two of them is not what the record holds. The policy says
    a detail that disagrees means the request is not about that record: each must be looked up and its detail
    compared, the matching ones changed and the others left alone, saying what they hold. Every status allows
    the change, so no tool refuses anything."""
    if VERIFY_RULE not in gen.m.spec.get("policy", ""):
        raise Skip("the policy does not make a request's details binding")
    opts = [(t, tr) for t in gen.anchors() for tr in t.transitions if t.label in t.finders]
    gen.rng.shuffle(opts)
    for t, tr in opts[:6]:
        st, to = tr["impl"]["column"], tr["impl"]["to"]
        ok = _allowed_rows(gen, t, tr)
        n, n_bad = gen.rng.choice([10, 11, 12, 13]), gen.rng.choice([1, 2, 2, 3])
        if len(ok) < n:
            continue
        rows = gen.rng.sample(ok, n)
        cols = _detail_columns(t, rows, st)
        if not cols:
            continue
        col = gen.rng.choice(cols)
        bad = {r["id"]: _misstated(gen, r[col]) for r in gen.rng.sample(rows, n_bad)}
        given = {r["id"]: bad.get(r["id"], _as_given(r[col])) for r in rows}
        steps: list[dict[str, Any]] = []
        done, refused = [], []
        last_args: dict[str, Any] = {}
        for r in rows:                        # look each one up, compare its detail, act on the ones that match
            _look_up(gen, t, r, steps)
            if r["id"] in bad:
                refused.append((str(r[t.label]), _as_given(r[col]), given[r["id"]]))
                continue
            last_args = gen.transition_args(tr, r["id"])
            gen.run(tr["name"], **last_args)
            steps.append(call(tr["name"], **last_args))
            done.append(str(r[t.label]))
        _enough(steps)
        gen.hidden += len(refused)
        listing = "; ".join(f"{r[t.label]} ({gen.attribute_phrase(col, given[r['id']])})" for r in rows)
        plural = t.plural
        noun = date_noun(col) if isinstance(rows[0][col], str) else words(col)
        below = _act(gen, tr, t, f"the {plural} below")
        text = gen.rng.choice([
            f"Please {_act(gen, tr, t, f'these {plural}')}: {listing}.{_reason(last_args)}",
            f"I have {len(rows)} {plural} to {gen.verb(tr, t)}, each with its {noun} as I have it: "
            f"{listing}.{_reason(last_args)}",
            f"{below[0].upper()}{below[1:]}: {listing}.{_reason(last_args)}",
        ])
        why = "; ".join(f"{label}'s {noun} is {fmt_value(held)}, not {fmt_value(said)}" for label, held, said in refused)
        refusal = (f"I did not {_act(gen, tr, t, ' or '.join(label for label, _, _ in refused))}: {why}, so the request "
                   f"is not about {'them' if len(refused) > 1 else 'it'}. The other {len(done)} went through.")
        check = {"reasons": [[held for _, held, _ in refused]], "candidates": [f"{t.name}.{col}"], "values": [],
                 "exclude": [], "results": [to], "about": [label for label, _, _ in refused]}
        return Part(steps, text, refusal=refusal, refusal_check=check, writes=True, structure="conditional",
                    rule=VERIFY_RULE)
    raise Skip("no records with a detail to give")


def _leave_out(gen: Generator, t: TableInfo, ok: list[dict[str, Any]], bad: list[dict[str, Any]], n_ok: int, n_bad: int,
               near: Callable[[dict[str, Any]], float] | None = None
               ) -> tuple[list[dict[str, Any]], set[int], str] | None:
    """The records of a batch (``n_ok`` the change allows, ``n_bad`` it does not) and one or two more it allows
    that the request itself leaves out by a condition only their dates show (each falls on a weekend; no
    other record of the batch does): (rows, ids left out, the sentence that leaves them out). No record
    says its weekday, so each date is worked out from today's; the tools would take the ones left out.
    ``near``: the allowed record it gives least is always among them (a figure just inside a rule's limit)."""
    cols = [col for col, spec in t.cols.items() if spec["type"] == "TEXT" and col not in SKIP_READ and col not in t.fks]
    gen.rng.shuffle(cols)

    for col in cols:
        ok_in = [r for r in ok if _on_weekend(r.get(col)) is False]
        ok_out = [r for r in ok if _on_weekend(r.get(col)) is True]
        bad_in = [r for r in bad if _on_weekend(r.get(col)) is False]
        if len(ok_in) < n_ok or len(bad_in) < n_bad or not ok_out:
            continue
        out = gen.rng.sample(ok_out, min(len(ok_out), gen.rng.choice([1, 2])))
        chosen = gen.rng.sample(ok_in, n_ok)
        if near is not None:
            closest = min(ok_in, key=near)
            if closest not in chosen:
                chosen[0] = closest
        noun = date_noun(col)
        unless = gen.rng.choice([f"Leave out any whose {noun} falls on a weekend (a Saturday or a Sunday)",
                                 f"Skip those whose {noun} is a Saturday or a Sunday: they stay as they are"])
        return chosen + gen.rng.sample(bad_in, n_bad) + out, {r["id"] for r in out}, unless
    return None


def rule_batch(gen: Generator) -> Part:
    """A list of records named by their codes, all in a status the change allows, where a business rule
    forbids it for one and the request leaves out those whose date falls on a weekend: each must be looked
    up, its weekday worked out and its figure read against the rule; the allowed ones are changed, the
    ones left out left alone, the other refused with its own value as the reason."""
    from .shapes import numeric_words

    rules = [r for r in gen.m.spec.get("rules", []) if r.get("kind") in RECORD_RULES and r.get("tool") in gen.m.tools]
    gen.rng.shuffle(rules)
    for rule in rules[:4]:
        tr, t = gen.m.tools[rule["tool"]], gen.m.tables.get(rule["table"])
        if t is None or t.label not in t.finders or "impl" not in tr or "from" not in tr["impl"]:
            continue
        st, allowed, to = tr["impl"]["column"], list(tr["impl"]["from"]), tr["impl"]["to"]
        marks = ", ".join("?" * len(allowed))
        base = f'"{st}" IN ({marks}) AND "{t.label}" IS NOT NULL AND "{rule["column"]}" IS NOT NULL'
        cond = Rule.from_json(rule).sql(gen.m.spec["now"])
        ok = [r for r in gen.m.rows(gen.conn, t.name, f"{base} AND ({cond})", tuple(allowed))
              if gen.rules_allow(tr, r["id"])]
        bad = gen.m.rows(gen.conn, t.name, f"{base} AND NOT ({cond})", tuple(allowed))
        n_ok = MIN_CALLS // 2 + gen.rng.choice([0, 0, 1])     # a lookup and a write each, one lookup refused
        if len(ok) < n_ok or not bad:
            continue
        gap: Callable[[dict[str, Any]], float] | None = None
        if rule["kind"] == "threshold":   # figures near the limit on both sides: reading it is the task
            def gap(r: dict[str, Any], col: str = rule["column"], limit: float = float(rule["value"])) -> float:
                return abs(float(r[col]) - limit)
            bad = sorted(bad, key=gap)[:3]
            picked = _leave_out(gen, t, ok, bad, n_ok, 1, near=gap)
        else:
            # a date rule's refusal gives a date: the dates that explain what was left out would compete with it
            chosen = gen.rng.sample(ok, n_ok)
            picked = (chosen + [gen.rng.choice(bad)], set(), "") if len(ok) >= n_ok else None
        if picked is None:
            continue
        rows, out, unless = picked
        blocked = next(r for r in rows if r in bad)
        gen.rng.shuffle(rows)
        steps: list[dict[str, Any]] = []
        last_args: dict[str, Any] = {}
        for r in rows:                        # the program: look each one up, leave out, or act unless its figure breaks the rule
            _look_up(gen, t, r, steps)
            if r["id"] in out:
                continue
            if r is not blocked:
                last_args = gen.transition_args(tr, r["id"])
                gen.run(tr["name"], **last_args)
                steps.append(call(tr["name"], **last_args))
        _enough(steps)
        gen.hidden += 1 + len(out)
        labels = [str(r[t.label]) for r in rows]
        listing = ", ".join(labels[:-1]) + " and " + labels[-1]
        plural, verb, label_words = t.plural, gen.verb(tr, t), words(t.label)
        unless = f" {unless}." if unless else ""
        text = gen.rng.choice([
            f"Please {_act(gen, tr, t, f'these {plural}')}: {listing}.{unless}{_reason(last_args)}",
            f"I have a list of {plural} to {verb}, by {label_words}: {listing}.{unless}{_reason(last_args)}",
        ])
        value = blocked[rule["column"]]
        threshold = rule["kind"] == "threshold"
        limit = fmt_value(rule["value"]) if threshold else number(rule["value"])
        shown = fmt_value(value) if threshold else str(value)[:10]
        label = str(blocked[t.label])
        refusal = (f"I cannot {_act(gen, tr, t, label)}: {rule['text']} ({words(rule['column'])}: {fmt_value(value)}). "
                   f"The other {n_ok} went through.")
        check = {"reasons": [[shown]], "candidates": [], "values": numeric_words(gen, [limit, shown]),
                 "exclude": [limit], "results": [to], "about": [label]}
        return Part(steps, text, refusal=refusal, refusal_check=check, writes=True, structure="conditional",
                    rule=rule["text"])
    raise Skip("no business rule that splits a batch")


def _day(value: Any) -> date | None:
    return date.fromisoformat(value[:10]) if isinstance(value, str) and DATE.match(value) else None


def _on_weekend(value: Any) -> bool | None:
    """Whether a date falls on a Saturday or a Sunday (None where it is no date)."""
    d = _day(value)
    return None if d is None else d.weekday() >= 5


def date_noun(col: str) -> str:
    """A date column as a noun: "due_date" → "due date", "completed_at" → "completed date", "starts_at" →
    "start date"."""
    base = words(col)
    for suffix in (" at", " on", " time"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
            break
    if base.split(" ")[-1] in ("starts", "ends", "begins", "opens", "closes"):
        base = base[:-1]
    return base if base.endswith(("date", "day")) else f"{base} date"


def _windows(gen: Generator, c: TableInfo, to: str, kids: list[dict[str, Any]], today: date
             ) -> list[tuple[Callable[[dict[str, Any]], bool], str, str]]:
    """Date conditions relative to today that split ``kids``: (test, phrase, column). The boundary day holds
    no child (so "more than N days" reads the same by calendar days or by hours), a child sits one day
    inside it, and one just past it. A window never sends records to a status on the wrong side of today
    (no no-show for a dinner next month)."""
    out = []
    for col, spec in c.cols.items():
        if spec["type"] != "TEXT" or col in SKIP_READ or col in c.fks:
            continue
        side = clock_side(gen.m.spec, c.name, col, to)
        days = [_day(k.get(col)) for k in kids]
        if any(d is None for d in days):
            continue
        distinct = sorted(set(days))   # type: ignore[type-var]
        for lo, hi in zip(distinct, distinct[1:]):
            if (hi - lo).days < 2:
                continue
            if hi < today and side != "future":      # past: targets lie before the boundary, a sibling a day after it
                bound = hi - timedelta(days=1)
                n = (today - bound).days

                def test(k: dict[str, Any], col: str = col, bound: date = bound) -> bool:
                    return _day(k[col]) < bound   # type: ignore[operator]
                out.append((test, f"whose {date_noun(col)} is more than {n} days before today", col))
            elif lo > today and side != "past":      # future: targets lie after the boundary, a sibling a day before it
                bound = lo + timedelta(days=1)
                n = (bound - today).days

                def test(k: dict[str, Any], col: str = col, bound: date = bound) -> bool:
                    return _day(k[col]) > bound   # type: ignore[operator]
                out.append((test, f"whose {date_noun(col)} is more than {n} days after today", col))
    return out


def _weekends(c: TableInfo, kids: list[dict[str, Any]]) -> list[tuple[Callable[[dict[str, Any]], bool], str, str]]:
    """Whether a date falls on a weekend (test, phrase, column): no record says which day of the week it is,
    so the agent works each one out from today's weekday in the policy. Some records fall on a Friday or a
    Monday, the weekend's neighbours, and at least two records fall on each side."""
    out = []
    for col, spec in c.cols.items():
        if spec["type"] != "TEXT" or col in SKIP_READ or col in c.fks:
            continue
        days = [_day(k.get(col)) for k in kids]
        if any(d is None for d in days):
            continue
        ends = sum(d.weekday() >= 5 for d in days)   # type: ignore[union-attr]
        if 2 <= ends <= len(days) - 2 and any(d.weekday() in (0, 4) for d in days):   # type: ignore[union-attr]
            def test(k: dict[str, Any], col: str = col) -> bool:
                return bool(_on_weekend(k[col]))
            out.append((test, f"whose {date_noun(col)} falls on a weekend (a Saturday or a Sunday)", col))
    return out


#: Figures that do not add up across records (a total of versions or of percentages means nothing): they
#: may bound a window, but the answer then counts the records instead.
_NOT_ADDITIVE = re.compile(r"version|year|age|rank|position|priority|rating|score|sequence|number|threshold|target|"
                           r"percent|pct|ratio|rate|latitude|longitude|temperature|temp_|level|grade|floor|_no$")


def _values(col: str) -> str:
    """ "amount values", but "observed values" (never "observed value values")."""
    w = words(col)
    return w + "s" if w.endswith("value") else w if w.endswith("values") else f"{w} values"


def _spans(c: TableInfo, kids: list[dict[str, Any]]) -> list[tuple[Callable[[dict[str, Any]], bool], str, str]]:
    """Conditions on the days between two dates of the same record ("whose end date is more than 9 days after
    its start date"), for date pairs the record's life orders: (test, phrase, later column). Each record
    needs its own subtraction. One record is exactly N days apart and others within two days of N on both
    sides."""
    dates = [col for col, spec in c.cols.items() if spec["type"] == "TEXT" and col not in SKIP_READ and col not in c.fks
             and all(_day(k.get(col)) for k in kids)]
    out = []
    for a, b, _ in ordered_pairs(dates):
        gaps = [(_day(k[b]) - _day(k[a])).days for k in kids]   # type: ignore[operator]
        # a record exactly N days apart is the distractor on the bound; where a time of day could tip it
        # either way, the request counts calendar days
        plain = all(len(str(k[col])) == 10 for k in kids for col in (a, b))
        for n in sorted(set(g for g in gaps if g > 1)):
            if n not in gaps or not {n - 1, n - 2} & set(gaps) or not {n + 1, n + 2} & set(gaps) \
                    or sum(g > n for g in gaps) < 4 or sum(g <= n for g in gaps) < 4:
                continue

            def test(k: dict[str, Any], a: str = a, b: str = b, n: int = n) -> bool:
                return (_day(k[b]) - _day(k[a])).days > n   # type: ignore[operator]
            days = f"{n} days" if plain else f"{n} calendar days"
            out.append((test, f"whose {date_noun(b)} is more than {days} after its {date_noun(a)}", b))
    return out


def _both(a: tuple[Callable[[dict[str, Any]], bool], str, str], b: tuple[Callable[[dict[str, Any]], bool], str, str]
          ) -> tuple[Callable[[dict[str, Any]], bool], str, str]:
    """Two conditions a record must both meet: (test, "whose … and whose …", the second's column)."""
    def test(k: dict[str, Any]) -> bool:
        return a[0](k) and b[0](k)
    return test, f"{a[1]} and {b[1]}", b[2]


def _figures(c: TableInfo) -> list[str]:
    return [k for k, spec in c.cols.items() if spec["type"] in ("REAL", "INTEGER") and k not in c.fks
            and k not in SKIP_READ and not spec.get("enum") and not k.startswith(("is_", "has_"))]


def window_sweep(gen: Generator) -> Part:
    """A sweep decided by dates the agent works out: see the module docstring."""
    combos = [(p, gen.m.tables[ct], fk, tr) for p in gen.anchors() for ct, fk in p.children
              if gen.m.tables[ct].search and fk in gen.m.tables[ct].search_params for tr in gen.m.tables[ct].transitions]
    tables = [(t, tr) for t in gen.m.tables.values() for tr in t.transitions
              if t.search and tr["impl"]["column"] in t.search_params
              and set(gen.m.tools[t.search]["parameters"].get("required", ())) <= {t.search_params[tr["impl"]["column"]]}]
    if not combos and not tables:
        raise Skip("no changeable records to sweep")
    gen.rng.shuffle(combos)
    gen.rng.shuffle(tables)
    today = date.fromisoformat(gen.m.spec["now"][:10])
    for p, c, fk, tr in combos[:4]:          # the children of one parent, in whatever status
        parents = [r[0] for r in gen.conn.execute(
            f'SELECT "{fk}" FROM "{c.name}" WHERE "{fk}" IS NOT NULL GROUP BY 1 HAVING COUNT(*) BETWEEN 6 AND 60 ORDER BY 1')]
        gen.rng.shuffle(parents)
        for pid in parents[:4]:
            kids = gen.m.rows(gen.conn, c.name, f'"{fk}" = ?', (pid,))
            got = _window_conditions(gen, c, tr, kids, today, PARENT_WINDOW_RECORDS)
            if got is not None:
                return _window_part(gen, c, tr, got, parent=(p, fk, pid))
    for c, tr in tables[:4]:                  # every record of a table in one status the change allows
        st = tr["impl"]["column"]
        for s in gen.rng.sample(list(tr["impl"]["from"]), len(tr["impl"]["from"])):
            n = gen.conn.execute(f'SELECT COUNT(*) FROM "{c.name}" WHERE "{st}" = ?', (s,)).fetchone()[0]
            if not 12 <= n <= 150:
                continue
            kids = gen.m.rows(gen.conn, c.name, f'"{st}" = ?', (s,))
            got = _window_conditions(gen, c, tr, kids, today, WINDOW_RECORDS)
            if got is not None:
                return _window_part(gen, c, tr, got, status=s)
    raise Skip("no records that split on a date window")


def _window_conditions(gen: Generator, c: TableInfo, tr: dict[str, Any], kids: list[dict[str, Any]], today: date,
                       sizes: tuple[int, int]) -> tuple[list[dict[str, Any]], str, str | None] | None:
    """(records the conditions pick, as many as ``sizes`` allows, the conditions in words, the figure column) or None."""
    # hardest reading first: a weekday worked out per record (with a window or a span at once, then alone),
    # then a subtraction per record, then one boundary date for all of them
    spans, windows = _spans(c, kids), _windows(gen, c, tr["impl"]["to"], kids, today)
    weekends = _weekends(c, kids)
    gen.rng.shuffle(spans)
    gen.rng.shuffle(windows)
    both = [_both(w, x) for w in weekends for x in spans[:2] + windows[:3]]
    gen.rng.shuffle(both)
    windows = both[:4] + weekends + spans[:4] + windows
    figures = _figures(c)
    gen.rng.shuffle(figures)
    for test, phrase, _ in windows[:8]:
        for fig in [*figures[:3], None]:
            got = _window_fit(gen, tr, kids, test, fig, sizes)
            if got is not None:
                match, bound = got
                cond = f"{phrase} and whose {words(fig)} is above {fmt_value(bound)}" if fig else phrase
                additive = [f for f in gen.summable(c, ([fig] if fig else []) + figures) if not _NOT_ADDITIVE.search(f)]
                return match, cond, additive[0] if additive else None
    return None


def _window_fit(gen: Generator, tr: dict[str, Any], kids: list[dict[str, Any]], test: Callable[[dict[str, Any]], bool],
                fig: str | None, sizes: tuple[int, int]) -> tuple[list[dict[str, Any]], Any] | None:
    """The children the conditions pick and the figure's bound, where the split leaves plausible
    distractors (siblings the change allows that miss one condition), else None."""
    st, allowed = tr["impl"]["column"], tr["impl"]["from"]
    open_ = [k for k in kids if k[st] in allowed]
    inside = [k for k in kids if test(k)]
    if fig is None:
        match, bound = inside, None
        if not any(not test(k) for k in open_):
            return None
    else:
        vals = sorted({k[fig] for k in inside if k[st] in allowed and k[fig] is not None
                       and not (isinstance(k[fig], float) and k[fig] != round(k[fig], 2))})
        if len(vals) < 3:
            return None
        want = gen.rng.randint(sizes[0], sizes[1] - 2)
        if len(vals) <= want:
            return None
        bound = vals[-want - 1]
        match = [k for k in inside if k[fig] is not None and k[fig] > bound]
        # one sibling the change allows is in the window but sits exactly on the figure's bound, one has
        # the figure but lies outside the window
        if not any(k[fig] == bound for k in inside if k[st] in allowed):
            return None
        if not any(not test(k) and k[fig] is not None and k[fig] > bound for k in open_):
            return None
    # (``rules_allow`` also keeps the world's clock: no window sends a record to a status on the wrong side of today)
    if not sizes[0] <= len(match) <= sizes[1] or any(k[st] not in allowed or not gen.rules_allow(tr, k["id"]) for k in match):
        return None
    return match, bound


def _window_part(gen: Generator, c: TableInfo, tr: dict[str, Any], got: tuple[list[dict[str, Any]], str, str | None],
                 parent: tuple[TableInfo, str, int] | None = None, status: str | None = None) -> Part:
    match, cond, fig = got
    st, to = tr["impl"]["column"], tr["impl"]["to"]
    gen.visited.clear()
    if parent is not None:
        _, fk, pid = parent
        _, steps, pdesc = _parent(gen, c, fk, pid)
        rows, calls = gen.page(c, {c.search_params[fk]: pid})
        scope = f"{c.singular} of {pdesc}"
    else:
        rows, calls = gen.page(c, {c.search_params[st]: status})
        steps = []
        scope = in_state(str(status), c.singular)
    steps += calls
    chosen = {k["id"] for k in match}
    last_args: dict[str, Any] = {}
    for r in rows:                       # the program: test each record against the window and the bound
        if r["id"] in chosen:
            last_args = gen.transition_args(tr, r["id"])
            gen.run(tr["name"], **last_args)
            steps.append(call(tr["name"], **last_args))
    state = value_words(to)
    if parent is not None:               # what the parent holds now, those already there included
        if fig is not None:
            args = {c.search_params[fk]: pid}
            if st in c.search_params:
                args[c.search_params[st]] = to
            after, more = gen.page(c, args)
            steps += more
            vals = [r[fig] for r in after if r[st] == to and r[fig] is not None]
            ask = gen.rng.choice([f"the {total_of(fig)} of all its {state} {c.plural}, counting any that were already "
                                  f"{state}", f"what the {words(fig)} of every {state} {c.singular} it has adds up to, "
                                  f"those {state} before included"])
        else:
            confirm = _confirm(gen, c, fk, pid, st, to)
            if confirm is None:
                raise Skip("nothing confirms the writes")
            steps.append(confirm[0])
            vals = [1] * confirm[1]
            ask = f"how many of its {c.plural} are in status {state} now, counting any that already were"
    elif fig is not None:                # what the change itself touched
        vals = [k[fig] for k in match if k[fig] is not None]
        done = participle(gen.verb(tr, c))
        ask = gen.rng.choice([f"the {total_of(fig)} of those {c.plural}",
                              f"what the {_values(fig)} of the {c.plural} that were {done} add up to"])
    else:
        vals = [1] * len(match)
        ask = f"how many {c.plural} that came to"
    if parent is None:
        _confirmed(gen, c, {c.search_params[st]: status}, steps)
    total = round(float(sum(vals)), 2) if fig is not None and c.cols[fig]["type"] == "REAL" else int(sum(vals))
    _enough(steps)
    gen.hidden += 1
    act = _act(gen, tr, c, f"every {scope} {cond}")
    text = gen.rng.choice([
        f"{act[0].upper() + act[1:]}.{_reason(last_args)} Then tell me {ask}.",
        f"I'd like you to {act}.{_reason(last_args)} Afterwards, let me know {ask}.",
        f"Please {act}.{_reason(last_args)} When you are done, report {ask}.",
    ])
    # a reply may say how many it changed and what was already there ("dropped 5; 6 are now won't do": blind
    # round 98), beside the total asked for
    changed = len(match) if fig is None else round(float(sum(k[fig] for k in match if k[fig] is not None)), 2)
    said = {changed, round(total - changed, 2)} - {total, 0}
    return Part(steps, text, answer=("numeric", fmt_value(total)), writes=True, structure="conditional",
                companions=sorted(fmt_value(float(x)) for x in said))


#: Figures a price rise applies to: prices, fees, salaries, budgets, rents, premiums, limits. Never a paid
#: amount, a total of parts, a balance, one end of a range, or a rate that is itself a percentage.
_RAISABLE = re.compile(r"price|salary|fee|budget|rent|premium|fare|tuition|cost|copay|deductible|limit|coverage|bid|"
                       r"(?:nightly|daily|hourly|weekly|base)_rate|wage|stipend|allowance")
_NOT_RAISABLE = re.compile(r"^(?:total|min|max|minimum|maximum)_|_(?:min|max|paid|total|balance)$|percent|pct|ratio|override")
PERCENTS = (Decimal("2"), Decimal("2.5"), Decimal("3"), Decimal("3.5"), Decimal("4"), Decimal("4.5"),
            Decimal("5"), Decimal("6"), Decimal("7"), Decimal("7.5"), Decimal("8"), Decimal("12.5"))
_CENT = Decimal("0.01")
#: How many records one price rise changes: each is a rounding the agent works out, then all go in one total.
ADJUST_RECORDS = (16, 30)
#: How many records a window sweep changes: more than can be sorted at a glance over a whole status; fewer
#: under one parent, which the agent first finds by its fields.
WINDOW_RECORDS = (8, 18)
PARENT_WINDOW_RECORDS = (4, 10)


def raised(value: float, percent: Decimal) -> Decimal:
    """``value`` raised by ``percent`` and rounded to the cent, half a cent up (exact: no float on the way)."""
    return (Decimal(str(value)) * (100 + percent) / 100).quantize(_CENT, rounding=ROUND_HALF_UP)


def _nice_between(lo: Decimal, hi: Decimal) -> Decimal | None:
    """The roundest number strictly between ``lo`` and ``hi`` (a cap a person would set: 150,000, not
    149,873.21), or None where they are less than a cent apart."""
    for step in ("10000", "5000", "1000", "500", "100", "50", "10", "5", "1", "0.5", "0.1", "0.01"):
        s = Decimal(step)
        x = (lo / s).to_integral_value(rounding=ROUND_FLOOR) * s + s
        if lo < x < hi:
            return x
    return None


def _raise_cap(olds: list[Decimal], news: list[Decimal], rng: Any) -> Decimal | None:
    """A cap above every current figure that one or two raised figures would pass (and none touches)."""
    desc = sorted(news, reverse=True)
    for k in rng.sample([1, 2], 2):
        if len(desc) <= k:
            continue
        lo, hi = max(max(olds), desc[k]), desc[k - 1]
        cap = _nice_between(lo, hi)
        if cap is not None and cap not in news:
            return cap
    return None


#: Text columns that name or describe one record: two records sharing a value there is chance, not a group.
_FREE_TEXT = re.compile(r"name|title|description|note|comment|address|email|phone|url|summary|message|text|body|code")


def _splits(gen: Generator, c: TableInfo, rows: list[dict[str, Any]], skip: set[str], today: date
            ) -> list[tuple[Callable[[dict[str, Any]], bool], str, str]]:
    """Conditions on a record's own fields that split ``rows`` (test, "whose … " phrase, column): an enum,
    a flag or a short text few records share, or a date window relative to today."""
    out = []
    for col, spec in c.cols.items():
        if col in skip or col in SKIP_READ or col in c.fks or spec.get("unique"):
            continue
        vals = [r.get(col) for r in rows]
        if any(v is None for v in vals):
            continue
        if spec["type"] == "BOOLEAN" or set(vals) <= {0, 1} and col.startswith(("is_", "has_")):
            for v in sorted(set(vals)):
                def test(r: dict[str, Any], col: str = col, v: Any = v) -> bool:
                    return r[col] == v
                flag = flag_words(col, bool(v))
                # "{be}" agrees with its noun: "every room that is accessible", "those that are accessible"
                out.append((test, f"that {{be}} {flag}" if col.startswith("is_") else flag if col.startswith("has_")
                            else f"whose {words(col)} is {'yes' if v else 'no'}", col))
        elif spec["type"] == "TEXT" and not DATE.match(str(vals[0])) and all(len(str(v)) <= 30 for v in vals) \
                and (spec.get("enum") or len(set(vals)) <= 5) and not _FREE_TEXT.search(col):
            for v in sorted(set(vals)):
                def test(r: dict[str, Any], col: str = col, v: Any = v) -> bool:
                    return r[col] == v
                shown = value_words(v) if spec.get("enum") else f'"{v}"'
                out.append((test, f"whose {words(col)} is {shown}", col))
    # a window on a date the world keeps by the record's status (an event's start) would raise the price of
    # what is over; dates of no clock (hired, listed, joined) read as seniority
    out += [w for w in _windows(gen, c, "", rows, today) if w[2] not in skip and clock_gen(gen.m.spec, c.name, w[2]) is None]
    # a weekend rate is a rate whatever the status: any date will do
    out += [w for w in _weekends(c, rows) if w[2] not in skip]
    return out


def adjust_sweep(gen: Generator) -> Part:
    """A price rise in two tiers over the records of a parent the request describes (or of one category):
    every record a condition picks is raised by one percentage or another according to a second condition,
    rounded to the cent, never past a cap; then the new total. Each write carries a figure the agent works
    out itself, and the update tool accepts any figure: only the agent's own reading and arithmetic decide."""
    combos = []
    for c in gen.m.tables.values():
        up = c.update
        if not c.search or up is None:
            continue
        for col, value in up["impl"].get("set", {}).items():
            spec = c.cols.get(col, {})
            if (spec.get("type") == "REAL" and value == f"$param:{col}" and _RAISABLE.search(col)
                    and not _NOT_RAISABLE.search(col) and col not in c.fks and gen.summable(c, [col]) == [col]):
                combos.append((c, col))
    if not combos:
        raise Skip("no figure a price rise applies to")
    gen.rng.shuffle(combos)
    today = date.fromisoformat(gen.m.spec["now"][:10])
    for c, fig in combos[:4]:
        for scope in _adjust_scopes(gen, c, fig)[:6]:
            kids = gen.m.rows(gen.conn, c.name, scope[0], scope[1])
            if any(k[fig] is None or Decimal(str(k[fig])) != Decimal(str(k[fig])).quantize(_CENT) for k in kids):
                continue
            got = _adjust_plan(gen, c, fig, kids, today, skip=set(scope[2]))
            if got is not None:
                return _adjust_part(gen, c, fig, scope[2], got)
    raise Skip("no records that split into two tiers")


#: Statuses of records whose business is over: a price rise on them means nothing.
_OVER = re.compile(r"done|complete|cancel|close|archiv|expire|retire|terminat|refund|void|reject|withdraw|delete|"
                   r"ended|finish|churn|lapse|fulfil|deliver|settled|paid|discontinu|inactive|obsolete|sold")


def _adjust_scopes(gen: Generator, c: TableInfo, fig: str) -> list[tuple[str, tuple, dict[str, Any]]]:
    """Groups of 16 to 60 records a request can name: (where, params, {column: value} the search filters on).
    The children of one parent first (shuffled), then the records of one category or status, then the whole
    table where it is that small."""
    out: list[tuple[str, tuple, dict[str, Any]]] = []
    required = set(gen.m.tools[str(c.search)]["parameters"].get("required", ()))
    least, most = ADJUST_RECORDS[0], 2 * ADJUST_RECORDS[1]
    for fk, parent in c.fks.items():
        p = gen.m.tables.get(parent)
        if p is None or parent == c.name or not p.finders or fk not in c.search_params \
                or not required <= {c.search_params[fk]}:
            continue
        ids = [r[0] for r in gen.conn.execute(
            f'SELECT "{fk}" FROM "{c.name}" WHERE "{fk}" IS NOT NULL GROUP BY 1 HAVING COUNT(*) BETWEEN {least} AND {most} '
            f'AND MIN("{fig}") > 0 ORDER BY 1')]
        out += [(f'"{fk}" = ?', (pid,), {fk: pid}) for pid in gen.rng.sample(ids, min(len(ids), 4))]
    for col, param in c.search_params.items():
        spec = c.cols.get(col, {})
        if not spec.get("enum") or not required <= {param}:
            continue
        over = col == c.status_col()
        for v, in gen.conn.execute(f'SELECT "{col}" FROM "{c.name}" GROUP BY 1 HAVING COUNT(*) BETWEEN {least} AND {most} '
                                   f'AND MIN("{fig}") > 0 ORDER BY 1'):
            if not (over and _OVER.search(str(v))):
                out.append((f'"{col}" = ?', (v,), {col: v}))
    if not required and gen.conn.execute(f'SELECT COUNT(*) BETWEEN {least} AND {most} AND MIN("{fig}") > 0 FROM "{c.name}"'
                                         ).fetchone()[0]:
        out.append(("1", (), {}))
    return out


def _adjust_plan(gen: Generator, c: TableInfo, fig: str, kids: list[dict[str, Any]], today: date,
                 skip: set[str]) -> Any:
    """(who phrase, who, tier phrase, tier, percents, cap, new figures by id) or None."""
    # who: a condition that leaves siblings out (or everyone, where there are few enough)
    st = c.status_col()
    lo, hi = ADJUST_RECORDS
    whos = [w for w in _splits(gen, c, kids, {fig, *skip}, today) if lo <= sum(w[0](k) for k in kids) <= hi
            and not (w[2] == st and _OVER.search(w[1]))]
    gen.rng.shuffle(whos)
    if lo <= len(kids) <= hi:
        whos.append((lambda k: True, "", ""))
    for who_test, who_phrase, who_col in whos[:4]:
        scope = [k for k in kids if who_test(k)]
        # records whose business is over keep their figure, and the request says so: "every part of the
        # category" would otherwise leave a reader to guess whether the discontinued ones go up too
        over = sorted({str(k[st]) for k in scope if st and _OVER.search(str(k[st]))})
        if over:
            scope = [k for k in scope if str(k[st]) not in over]
            if not lo <= len(scope) <= hi:
                continue
        # a record's status picks who is raised, never by how much (no dearer cancelled events)
        tiers = [t for t in _splits(gen, c, scope, {fig, who_col, *skip, *(tr["impl"]["column"] for tr in c.transitions)},
                                    today)
                 if 3 <= sum(t[0](k) for k in scope) <= len(scope) - 3]
        gen.rng.shuffle(tiers)
        tiers.sort(key=lambda t: "weekend" not in t[1])   # a weekend rate: each record's weekday worked out
        for tier_test, tier_phrase, _ in tiers[:3]:
            hi, lo = sorted(gen.rng.sample(PERCENTS, 2), reverse=True)
            if gen.rng.random() < 0.5:
                hi, lo = lo, hi
            news = {k["id"]: raised(k[fig], hi if tier_test(k) else lo) for k in scope}
            olds = [Decimal(str(k[fig])) for k in scope]
            cap = _raise_cap(olds, list(news.values()), gen.rng)
            if cap is None:
                continue
            news = {i: min(v, cap) for i, v in news.items()}
            return who_phrase, scope, tier_phrase, (hi, lo), cap, news, over
    return None


def _pct(p: Decimal) -> str:
    return f"{p.normalize():f}%"


def _adjust_part(gen: Generator, c: TableInfo, fig: str, where: dict[str, Any], plan: Any) -> Part:
    who_phrase, scope, tier_phrase, (first, other), cap, news, over = plan
    up = c.update
    assert up is not None
    key = up["impl"]["key"]["param"]
    gen.visited.clear()
    steps: list[dict[str, Any]] = []
    if not where:
        group, everyone = f"every {c.singular}", f"all {c.plural}"
    else:
        (col, v), = where.items()
        if col in c.fks:
            p, steps, pdesc = _parent(gen, c, col, v)
            group, everyone = f"every {c.singular} of {pdesc}", f"all the {c.plural} of that {p.singular}"
        elif col == c.status_col():
            group, everyone = f"every {in_state(str(v), c.singular)}", f"all {in_state(str(v), c.plural)}"
        else:
            group, everyone = (f"every {c.singular} with {field_value(col, v)}",
                               f"all {c.plural} with {field_value(col, v)}")
    rows, calls = gen.page(c, {c.search_params[k]: v for k, v in where.items()})
    steps += calls
    for r in rows:                       # the program: each picked record gets its tier's rise, capped
        if r["id"] in news:
            args = {key: r["id"], fig: float(news[r["id"]])}
            gen.run(up["name"], **args)
            steps.append(call(up["name"], **args))
    f = words(fig)
    # both totals a reply may give: of the records changed, and of the whole group after the change
    changed = sum(news.values(), Decimal(0))
    whole = changed + sum((Decimal(str(r[fig])) for r in rows if r["id"] not in news and r[fig] is not None), Decimal(0))
    summed = c.sums.get(fig)
    if summed and set(where) <= set(summed[1]) and gen.rng.random() < 0.6:   # the whole group, read back
        args = {summed[1][k]: v for k, v in where.items()}
        steps.append(call(summed[0], **args))
        total = Decimal(str(gen.run(summed[0], **args)["value"] or 0)).quantize(_CENT)
        # "those it leaves alone included" only where the group holds records the change leaves alone
        alone = len(rows) > len(news)
        ask = gen.rng.choice([f"the {total_of(fig)} of {everyone} now" + (", those this change leaves alone included"
                                                                          if alone else ""),
                              f"what the {f} figures of {everyone} add up to after the change"
                              + (", unchanged ones included" if alone else "")])
    else:
        total = changed
        ask = gen.rng.choice([f"the new {total_of(fig)} of the {c.plural} you changed",
                              f"what the new {f} figures of the {c.plural} you raised add up to"])
        _confirmed(gen, c, {c.search_params[k]: v for k, v in where.items()}, steps)
    _enough(steps)
    gen.hidden += 1
    who = group + (f" {who_phrase.replace('{be}', 'is')}" if who_phrase else "")
    tiers = gen.rng.choice([
        f"by {_pct(first)} for those {tier_phrase.replace('{be}', 'are')} and by {_pct(other)} for the rest",
        f"by {_pct(first)} where the {c.singular} is one {tier_phrase.replace('{be}', 'is')}, otherwise by {_pct(other)}",
    ])
    if over:
        said = [value_words(x) for x in over]
        tiers += gen.rng.choice([f" (the {' and '.join(said)} ones stay as they are)",
                                 f", leaving any that is {' or '.join(said)} as it is"])
    rounding = "Round each new figure to the cent (half a cent rounds up)"
    capped = gen.rng.choice([f"no raised {f} may end above {fmt_value(float(cap))} (none of the ones you raise is above "
                             f"it today): one that would is set to exactly {fmt_value(float(cap))}",
                             f"cap each raised figure at {fmt_value(float(cap))}, which none of them passes before the "
                             f"rise ({indefinite(f)} that would pass it after the rise becomes {fmt_value(float(cap))})"])
    text = gen.rng.choice([
        f"Raise the {f} of {who} {tiers}. {rounding}, and {capped}. Then tell me {ask}.",
        f"We are putting up the {f} of {who}: {tiers}. {rounding}; {capped}. Afterwards, let me know {ask}.",
        f"Please increase the {f} of {who} {tiers}. {rounding}, and {capped}. When you are done, report {ask}.",
    ])
    # a reply may give the breakdown: the other total, each record's figure before (or, left alone, after) and each
    # raised record's new figure (blind round 73: "Advanced (LXE) 95,883.97; …" beside the right total failed)
    others = {whole if total == changed else changed} | {Decimal(str(r[fig])) for r in rows if r[fig] is not None} \
        | set(news.values())
    return Part(steps, text, answer=("numeric", fmt_value(float(total))), writes=True, structure="conditional",
                companions=sorted({fmt_value(float(x)) for x in others if x != total}))


def _fill(open_: list[tuple[Any, Decimal]], start: Decimal, budget: Decimal, skip: bool = True) -> list[Any] | None:
    """The ids a budget takes in order (each while the running total stays at or below ``budget``; one that
    would pass it is skipped, or ends the fill where ``skip`` is false); None where a total lands exactly on
    the budget (said either way, "within" would be read two ways)."""
    total, taken = start, []
    for rid, amount in open_:
        if total + amount == budget:
            return None
        if total + amount < budget:
            total += amount
            taken.append(rid)
        elif not skip:
            break
    return taken


def _running(seq: list[tuple[Any, Decimal]], start: Decimal, taken: Iterable[Any]) -> set[Decimal]:
    """Every total a fill in order passes through: the running total after each record taken, and the total
    each skipped record would have made ("it would have taken baseline to 11,359.88", blind round 75)."""
    out, total, took = set(), start, set(taken)
    for rid, amount in seq:
        if rid in took:
            total += amount
            out.add(total)
        else:
            out.add(total + amount)
    return out


def _round_budgets(items: list[tuple[Any, Decimal]], start: Decimal) -> Iterator[Decimal]:
    """Round budgets above what is already spent and below everything spent: steps of a power of ten
    three digits below the whole (so 1,680.00 or 4,980,000.00, never 1,673.21)."""
    whole = start + sum((a for _, a in items), Decimal(0))
    step = Decimal(10) ** max(0, len(str(int(whole))) - 3)
    b = (start / step).to_integral_value(rounding=ROUND_FLOOR) * step + step
    while b < whole:
        yield b
        b += step


def _budgets(open_: list[tuple[Any, Decimal]], start: Decimal) -> list[Decimal]:
    """Round budgets for which the fill skips a record and takes a later one, and the wrong readings (stop
    at the first that does not fit, leave out what is already spent, take the smallest first) give other
    sets."""
    out = []
    for b in _round_budgets(open_, start):
        taken = _fill(open_, start, b)
        if taken is not None and 4 <= len(taken) < len(open_):
            order = [rid for rid, _ in open_]
            skipped_then_taken = any(order.index(t) > order.index(s) for s in set(order) - set(taken) for t in taken)
            wrong = [_fill(open_, start, b, skip=False), _fill(sorted(open_, key=lambda x: x[1]), start, b)]
            if start:
                wrong.append(_fill(open_, Decimal(0), b))
            if skipped_then_taken and all(w is None or set(w) != set(taken) for w in wrong):
                out.append(b)
    return out


class _Subsets:
    """Every set of ``items`` (up to twenty-odd records), met in the middle: the subset totals of each half, in
    whole cents, so the best fit under a room is a walk over one half and a bisection in the other (2 * 2**(n/2)
    totals, not 2**n)."""

    def __init__(self, items: list[tuple[Any, Decimal]]):
        self.items = items
        cents = [int(a * 100) for _, a in items]
        half = len(items) // 2
        self.left = self._totals(cents[:half])
        self.right = self._totals(cents[half:])
        self.right_totals = [t for t, _ in self.right]
        self.half = half

    @staticmethod
    def _totals(cents: list[int]) -> list[tuple[int, int]]:
        """(total, mask) of every set of ``cents`` (the empty one too), by total: each mask's total is a smaller
        mask's plus one item."""
        totals = [0] * (1 << len(cents))
        for mask in range(1, len(totals)):
            low = mask & -mask
            totals[mask] = totals[mask ^ low] + cents[low.bit_length() - 1]
        return sorted((t, mask) for mask, t in enumerate(totals))

    def best(self, room: Decimal) -> tuple[list[Any], bool] | None:
        """The non-empty set whose total is the most not past ``room``, and whether no other set reaches that
        total (None where nothing fits)."""
        limit = int(room * 100)
        best, ways, pick = -1, 0, (0, 0)
        for a, amask in self.left:
            if a > limit:
                break
            j = bisect.bisect_right(self.right_totals, limit - a) - 1
            total = a + self.right_totals[j]
            if total > best:
                best, ways, pick = total, 0, (amask, self.right[j][1])
            if total == best:
                ways += bisect.bisect_right(self.right_totals, best - a) - bisect.bisect_left(self.right_totals, best - a)
        if best <= 0:
            return None
        amask, bmask = pick
        mask = amask | bmask << self.half
        return [self.items[j][0] for j in range(len(self.items)) if mask >> j & 1], ways == 1


def _best(items: list[tuple[Any, Decimal]], room: Decimal) -> tuple[list[Any], bool] | None:
    """The set of ``items`` whose amounts add up to the most without passing ``room``, and whether no other set
    reaches that total (None where nothing fits)."""
    return _Subsets(items).best(room)


def _best_budgets(items: list[tuple[Any, Decimal]], start: Decimal) -> list[Decimal]:
    """Round budgets whose best fit is one set only, takes at least four records and leaves out at least
    four, lands below the budget, and is not what filling smallest first or largest first would take."""
    sets = _Subsets(items)
    out = []
    for b in _round_budgets(items, start):
        got = sets.best(b - start)
        # at least four records in and four out: no one or two records to drop, a real search over combinations
        if got is not None and got[1] and 4 <= len(got[0]) <= len(items) - 4:
            ids = set(got[0])
            spent = start + sum((a for rid, a in items if rid in ids), Decimal(0))
            greedy = [_fill(sorted(items, key=lambda x: x[1]), start, b),
                      _fill(sorted(items, key=lambda x: -x[1]), start, b)]
            if spent < b and all(g is None or set(g) != ids for g in greedy):
                out.append(b)
    return out


#: How many open records a budget is filled from: enough that neither the running total nor the search over
#: combinations can be done at a glance (a best fit over 17 records weighs 131,071 sets), few enough to read.
BUDGET_RECORDS = (16, 28)
BEST_RECORDS = (17, 22)


#: Changes that spend from a budget: approving, paying, booking, funding (never closing or archiving).
_SPENDS = re.compile(r"^(?:launch|approv|accept|confirm|fund|pay|book|order|purchas|activat|grant|award|authori|reimburs|issue|"
                     r"settl|releas|disburs|enrol|register|admit|renew|hire|offer|commit|allocat|reserv|sponsor|buy)")


#: Changes that commit effort: starting or planning work within so many hours (or a budget).
_EFFORT = re.compile(r"^(?:start|plan|schedul)")


#: The figure a record's change spends where it has one (its amount, price or budget): a cap on a payment's
#: processor fee or a booking's deposit reads as no business's rule.
_MAIN_FIGURE = re.compile(r"^(?:total_)?(?:amount|price|cost|budget|value)$|^total$")


def _spending(gen: Generator) -> list[tuple[TableInfo, dict[str, Any], str, list[str]]]:
    """(table, change, figure, date columns) where the change spends the figure (approving an amount, booking
    hours), shuffled; Skip where no table has one."""
    combos = []
    for c in gen.m.tables.values():
        if not c.search:
            continue
        figs = [f for f in gen.summable(c, _figures(c)) if c.cols[f]["type"] == "REAL" and not _NOT_ADDITIVE.search(f)]
        figs = [f for f in figs if _MAIN_FIGURE.match(f)] or figs   # a payment spends its amount, not its fee
        dates = [col for col, spec in c.cols.items() if spec["type"] == "TEXT" and col not in SKIP_READ
                 and col not in c.fks and not spec.get("unique")]
        combos += [(c, tr, f, dates) for tr in c.transitions for f in figs if not f.startswith("actual")
                   and (_SPENDS.search(gen.verb(tr, c)) or _EFFORT.search(gen.verb(tr, c)) and re.search(r"hours|budget", f))]
    if not combos:
        raise Skip("no spending change on records with an amount")
    gen.rng.shuffle(combos)
    return combos


def budget_fill(gen: Generator, best: bool = False) -> Part:
    """Work through open records earliest first under a budget (over a parent's records, counting what the
    parent already has in the resulting status, or over every record in one status): each record is taken
    while the running total stays within the budget, one that would pass it is skipped and the next tried;
    then what is left of the budget. The tools take every record: only the agent's order, running total
    and the records already counted decide. With ``best``, no order: the one set of records whose figures
    use the most of the budget without passing it (a search over combinations, not a running total)."""
    combos = _spending(gen)
    lo, hi = BEST_RECORDS if best else BUDGET_RECORDS
    for c, tr, fig, dates in combos[:6]:
        st, to = tr["impl"]["column"], tr["impl"]["to"]
        for s in gen.rng.sample(list(tr["impl"]["from"]), len(tr["impl"]["from"])):
            # (search filters, open records, records already in the resulting status, the scope's further words)
            groups: list[tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], str]] = []
            for fk in [k for k in c.fks if k in c.search_params and gen.m.tables.get(c.fks[k]) is not None
                       and gen.m.tables[c.fks[k]].finders and c.fks[k] != c.name]:
                parents = [r[0] for r in gen.conn.execute(
                    f'SELECT "{fk}" FROM "{c.name}" WHERE "{fk}" IS NOT NULL GROUP BY 1 '
                    f'HAVING SUM("{st}" = ?) BETWEEN {lo} AND {hi} ORDER BY 1', (s,))]
                for pid in gen.rng.sample(parents, min(3, len(parents))):
                    kids = gen.m.rows(gen.conn, c.name, f'"{fk}" = ?', (pid,))
                    groups.append(({fk: pid}, [k for k in kids if k[st] == s], [k for k in kids if k[st] == to], ""))
            required = set(gen.m.tools[str(c.search)]["parameters"].get("required", ()))
            if st in c.search_params and required <= {c.search_params[st]}:
                rows = gen.m.rows(gen.conn, c.name, f'"{st}" = ?', (s,))
                if lo <= len(rows) <= hi:
                    groups.append(({st: s}, rows, [], ""))
                for e in [k for k in c.search_params if k != st and c.cols.get(k, {}).get("enum")]:
                    for (x,) in gen.conn.execute(f'SELECT "{e}" FROM "{c.name}" WHERE "{st}" = ? GROUP BY 1 '
                                                 f'HAVING COUNT(*) BETWEEN {lo} AND {hi}', (s,)):
                        groups.append(({st: s, e: x}, [r for r in rows if r[e] == x], [], ""))
                # the records of one calendar month, or of a run of days, of a date: the agent pages the status
                # (or narrows it with the search's date range) and reads each date
                for d in dates:
                    dated = sorted((r for r in rows if isinstance(r.get(d), str) and DATE.match(r[d])),
                                   key=lambda r: r[d])
                    months: dict[str, list[dict[str, Any]]] = {}
                    for r in dated:
                        months.setdefault(r[d][:7], []).append(r)
                    for month, got in months.items():
                        if lo <= len(got) <= hi:
                            name = f"{calendar.month_name[int(month[5:])]} {month[:4]}"
                            groups.append(({st: s}, got, [], f" whose {date_noun(d)} falls in {name}"))
                    weekend = [r for r in dated if _on_weekend(r[d])]
                    if lo <= len(weekend) <= hi and len(weekend) < len(dated):
                        groups.append(({st: s}, weekend, [], f" whose {date_noun(d)} falls on a weekend (a Saturday "
                                                              f"or a Sunday)"))
                    days = [r[d][:10] for r in dated]
                    for _ in range(8):
                        if len(days) <= lo:
                            break
                        k = gen.rng.randint(lo, min(hi, len(days) - 1))
                        i = gen.rng.randrange(len(days) - k + 1)
                        j = i + k - 1
                        if (i and days[i - 1] == days[i]) or (j + 1 < len(days) and days[j + 1] == days[j]):
                            continue
                        run = (f" whose {date_noun(d)} is {days[i]}" if days[i] == days[j] else
                               f" whose {date_noun(d)} is between {days[i]} and {days[j]} (both days included)")
                        groups.append(({st: s}, dated[i:j + 1], [], run))
            gen.rng.shuffle(groups)
            groups.sort(key=lambda g: "weekend" not in g[3])   # each record's weekday worked out first
            for where, open_, done, extra in groups:
                if not _in_cents(open_ + done, fig) or not all(gen.rules_allow(tr, k["id"]) for k in open_):
                    continue
                start = sum((Decimal(str(k[fig])) for k in done), Decimal(0))
                if best:
                    items = [(k["id"], Decimal(str(k[fig]))) for k in open_]
                    budgets = _best_budgets(items, start) if lo <= len(items) <= hi else []
                    if budgets:
                        return _budget_part(gen, c, tr, s, fig, None, gen.rng.choice(budgets), start, items, where, extra)
                    continue
                for col in gen.rng.sample(dates, len(dates)):
                    when = [k[col] for k in open_]
                    if not all(isinstance(w, str) and DATE.match(w) for w in when) or len(set(when)) < len(when):
                        continue
                    seq = [(k["id"], Decimal(str(k[fig]))) for k in sorted(open_, key=lambda k: k[col])]
                    budgets = _budgets(seq, start)
                    if budgets:
                        return _budget_part(gen, c, tr, s, fig, col, gen.rng.choice(budgets), start, seq, where, extra)
    raise Skip("no open records that fill a budget in an order that matters")


def _budget_part(gen: Generator, c: TableInfo, tr: dict[str, Any], s: str, fig: str, col: str | None,
                 budget: Decimal, start: Decimal, seq: list[tuple[Any, Decimal]], where: dict[str, Any],
                 extra: str = "") -> Part:
    """The request and reference for :func:`budget_fill`: ``col`` orders the fill, or is None for the best fit."""
    if col is None:
        taken = (_best(seq, budget - start) or ([], True))[0]
    else:
        taken = _fill(seq, start, budget) or []
    gen.visited.clear()
    key, v = next(iter(where.items()))
    steps: list[dict[str, Any]] = []
    to = tr["impl"]["to"]
    state = value_words(to)
    if key in c.fks:
        _, steps, pdesc = _parent(gen, c, key, v)
        scope = f"the {in_state(s, c.plural)} of {pdesc}"
        counted = gen.rng.choice([
            f"as long as the {words(fig)} of all its {state} {c.plural}, those {state} already included, adds up to "
            f"no more than {{b}}: one that would take that total past {{b}} is skipped and the next one is tried",
            f"within a budget of {{b}} for the {total_of(fig)} of its {state} {c.plural} (the ones already {state} "
            f"count too); skip any that would go over it and carry on with the next",
        ])
    else:
        scope = f"the {in_state(s, c.plural)}" + "".join(f" with {field_value(k, x)}" for k, x in where.items()
                                                          if k != key) + extra
        counted = gen.rng.choice([
            f"as long as the {words(fig)} of the ones you {participle(gen.verb(tr, c))} adds up to no more than {{b}}: "
            f"one that would take that total past {{b}} is skipped and the next one is tried",
            f"within a budget of {{b}} for their {total_of(fig)}; skip any that would go over it and carry on with "
            f"the next",
        ])
    rows, calls = gen.page(c, {c.search_params[k]: x for k, x in where.items()})
    steps += calls
    last_args: dict[str, Any] = {}
    for rid, _ in seq:                   # the program: each record the fill (or the best fit) takes
        if rid in taken:
            last_args = gen.transition_args(tr, rid)
            gen.run(tr["name"], **last_args)
            steps.append(call(tr["name"], **last_args))
    _confirmed(gen, c, {c.search_params[k]: x for k, x in where.items()}, steps)
    _enough(steps)
    gen.hidden += 1
    spent = start + sum((a for rid, a in seq if rid in taken), Decimal(0))
    left = budget - spent
    b = fmt_value(float(budget))
    act = _act(gen, tr, c, scope)
    ask = gen.rng.choice([f"how much of the {b} is left", f"how much room is left under {b}"])
    if col is None:
        already = f", counting its {state} ones," if key in c.fks else ""
        fit = gen.rng.choice([
            f"so that their {_values(fig)}{already} use as much of a budget of {b} as possible without going over "
            f"it: of every combination that fits, take the one whose total is highest (exactly one is)",
            f"by choosing the combination whose {total_of(fig)}{already} comes closest to {b} without passing it "
            f"(only one does)",
        ])
        text = gen.rng.choice([
            f"{act[0].upper() + act[1:]} {fit}.{_reason(last_args)} Then tell me {ask}.",
            f"Please {act} {fit}.{_reason(last_args)} When you are done, report {ask}.",
        ])
    else:
        order = f"taking them by {date_noun(col)}, earliest first"   # "plan drop in, in order of" read doubled
        rule = counted.replace("{b}", b)
        text = gen.rng.choice([
            f"{act[0].upper() + act[1:]} {order}, {rule}.{_reason(last_args)} Then tell me {ask}.",
            f"Please {act} {order}, {rule}.{_reason(last_args)} When you are done, report {ask}.",
        ])
    # a reply may explain itself: what was spent, each candidate's figure (the one skipped), what was already in,
    # and (filling in order) each running total and the total a skipped record would have made
    figures = {spent, start, *(a for _, a in seq)} | (_running(seq, start, taken) if col is not None else set())
    figures -= {left}
    return Part(steps, text, answer=("numeric", fmt_value(float(left))), writes=True, structure="conditional",
                companions=sorted(fmt_value(float(x)) for x in figures if x))


#: How many open records one cap per group is filled from, and into how many groups they fall: enough
#: running totals side by side that none can be kept at a glance.
GROUP_RECORDS = (16, 30)
GROUPS = (3, 6)


def _in_cents(rows: list[dict[str, Any]], fig: str) -> bool:
    return all(r[fig] is not None and r[fig] > 0 and Decimal(str(r[fig])) == Decimal(str(r[fig])).quantize(_CENT)
               for r in rows)


def _group_take(seqs: dict[Any, list[tuple[Any, Decimal]]], starts: dict[Any, Decimal], cap: Decimal,
                skip: bool = True, counted: bool = True, smallest: bool = False) -> set[Any] | None:
    """The ids a cap per group takes: each group's records in order while its running total (what it already
    has, unless not ``counted``) stays within ``cap``; None where a total lands exactly on the cap."""
    taken: set[Any] = set()
    for key, seq in seqs.items():
        got = _fill(sorted(seq, key=lambda x: x[1]) if smallest else seq, starts[key] if counted else Decimal(0),
                    cap, skip)
        if got is None:
            return None
        taken |= set(got)
    return taken


def _group_caps(seqs: dict[Any, list[tuple[Any, Decimal]]], starts: dict[Any, Decimal],
                order: list[tuple[Any, Decimal]]) -> list[Decimal]:
    """Round caps (steps three digits below the largest group's whole) under which every wrong reading takes
    another set: forgetting what the groups already have, stopping a group at its first misfit, taking each
    group's smallest first, or spending one budget across all of them (``order``: every record, earliest
    first). At least four records are taken and three left, at least two groups take some, and a group that
    skips a record takes a later one."""
    n = len(order)
    whole = max(starts[k] + sum((a for _, a in seq), Decimal(0)) for k, seq in seqs.items())
    step = Decimal(10) ** max(0, len(str(int(whole))) - 3)
    b = (min(starts.values()) / step).to_integral_value(rounding=ROUND_FLOOR) * step + step
    out = []
    while b < whole:
        taken = _group_take(seqs, starts, b)
        if taken is not None and 4 <= len(taken) <= n - 3 \
                and sum(1 for seq in seqs.values() if any(rid in taken for rid, _ in seq)) >= 2 \
                and any(rid in taken and any(x not in taken for x, _ in seq[:i]) for seq in seqs.values()
                        for i, (rid, _) in enumerate(seq)):
            one_budget = _fill(order, sum(starts.values(), Decimal(0)), b)
            wrong = [_group_take(seqs, starts, b, skip=False), _group_take(seqs, starts, b, counted=False),
                     _group_take(seqs, starts, b, smallest=True), None if one_budget is None else set(one_budget)]
            if all(w is None or w != taken for w in wrong):
                out.append(b)
        b += step
    return out


def _group_scopes(gen: Generator, rows: list[dict[str, Any]], dates: list[str]
                  ) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Runs of days of a date column holding 16 to 30 of ``rows`` (no record shares the first or last day with
    one outside), each with its records earliest first: (column, records)."""
    lo, hi = GROUP_RECORDS
    for col in gen.rng.sample(dates, len(dates)):
        dated = sorted((r for r in rows if isinstance(r.get(col), str) and DATE.match(r[col])), key=lambda r: r[col])
        if len({r[col] for r in dated}) < len(dated):
            continue
        days = [r[col][:10] for r in dated]
        for _ in range(6):
            if len(days) < lo:
                break
            k = gen.rng.randint(lo, min(hi, len(days)))
            i = gen.rng.randrange(len(days) - k + 1)
            j = i + k - 1
            if (i and days[i - 1] == days[i]) or (j + 1 < len(days) and days[j + 1] == days[j]):
                continue
            yield col, dated[i:j + 1]


def group_fill(gen: Generator) -> Part:
    """The records in one status whose date falls in a run of days (16 to 30 of them, in 3 to 6 groups of a
    field), earliest first, each changed while its group's total of a figure over the records in the resulting
    status (those already there count: the figure's total tool, asked per group, shows it) stays within one cap
    per group; one that would take its group past the cap is skipped and the next tried. Then the total of
    what was changed. Running totals side by side, each starting from what a group already has: the tools take
    every record."""
    for c, tr, fig, dates in _spending(gen)[:6]:
        st, to = tr["impl"]["column"], tr["impl"]["to"]
        required = set(gen.m.tools[str(c.search)]["parameters"].get("required", ()))
        summed = c.sums.get(fig)
        if st not in c.search_params or not required <= {c.search_params[st]} or not summed or st not in summed[1]:
            continue
        keys = [k for k in summed[1] if k != st and (c.cols.get(k, {}).get("enum") or k in c.fks)]
        for s in gen.rng.sample(list(tr["impl"]["from"]), len(tr["impl"]["from"])):
            for col, rows in _group_scopes(gen, gen.m.rows(gen.conn, c.name, f'"{st}" = ?', (s,)), dates):
                if not _in_cents(rows, fig) or not all(gen.rules_allow(tr, r["id"]) for r in rows):
                    continue
                for g in gen.rng.sample(keys, len(keys)):
                    groups = sorted({r[g] for r in rows if r[g] is not None}, key=str)
                    if any(r[g] is None for r in rows) or not GROUPS[0] <= len(groups) <= GROUPS[1]:
                        continue
                    starts = {k: Decimal(str(gen.run(summed[0], **{summed[1][st]: to, summed[1][g]: k})["value"] or 0))
                              for k in groups}
                    if not any(starts.values()) or any(v != v.quantize(_CENT) for v in starts.values()):
                        continue                  # what a group already has must count, in whole cents
                    order = [(r["id"], Decimal(str(r[fig]))) for r in rows]
                    owner = {r["id"]: r[g] for r in rows}
                    seqs = {k: [x for x in order if owner[x[0]] == k] for k in groups}
                    caps = _group_caps(seqs, starts, order)
                    if caps:
                        return _group_part(gen, c, tr, s, fig, col, g, gen.rng.choice(caps), seqs, starts, order,
                                           (rows[0][col][:10], rows[-1][col][:10]))
    raise Skip("no open records in several groups that a cap per group fills in an order that matters")


def _group_part(gen: Generator, c: TableInfo, tr: dict[str, Any], s: str, fig: str, col: str, g: str, cap: Decimal,
                seqs: dict[Any, list[tuple[Any, Decimal]]], starts: dict[Any, Decimal],
                order: list[tuple[Any, Decimal]], span: tuple[str, str]) -> Part:
    """The request and reference for :func:`group_fill`."""
    taken = _group_take(seqs, starts, cap) or set()
    gen.visited.clear()
    st, to = tr["impl"]["column"], tr["impl"]["to"]
    state = value_words(to)
    tool, params = c.sums[fig]
    steps = gen.page(c, {c.search_params[st]: s})[1]
    for k in seqs:                       # what each group already has
        steps.append(call(tool, **{params[st]: to, params[g]: k}))
    last_args: dict[str, Any] = {}
    for rid, _ in order:                 # the program: each record its group's cap takes, earliest first
        if rid in taken:
            last_args = gen.transition_args(tr, rid)
            gen.run(tr["name"], **last_args)
            steps.append(call(tr["name"], **last_args))
    _enough(steps)
    gen.hidden += 1
    b = fmt_value(float(cap))
    group = words(g[:-3]) if g in c.fks and g.endswith("_id") else words(g)
    one = c.singular or c.plural
    verb = participle(gen.verb(tr, c))
    spent = sum((a for rid, a in order if rid in taken), Decimal(0))
    scope = f"the {in_state(s, c.plural)} whose {date_noun(col)} is between {span[0]} and {span[1]} (both days included)"
    act = _act(gen, tr, c, scope)
    rule = gen.rng.choice([
        f"Each {group} has a cap of {b}: take {indefinite(one)} only while the {words(fig)} of the {state} {c.plural} of its "
        f"{group}, the ones already {state} included, adds up to no more than {b}; one that would take its {group} "
        f"past {b} is skipped and the next one is tried",
        f"No {group} may end up with {state} {c.plural} whose {total_of(fig)} passes {b} (count every one that is "
        f"{state} already, whatever its date): skip any {one} that would take its {group} over and carry on with "
        f"the next",
    ])
    ask = gen.rng.choice([f"the {total_of(fig)} of the {c.plural} you {verb}",
                          f"how much {words(fig)} the {c.plural} you {verb} come to"])
    text = gen.rng.choice([
        f"{act[0].upper() + act[1:]}, earliest first. {rule}.{_reason(last_args)} Then tell me {ask}.",
        f"Please {act}, taking them by {date_noun(col)}, earliest first. {rule}.{_reason(last_args)} When you are "
        f"done, report {ask}.",
    ])
    # a reply may explain itself: each group's total before and after, each candidate's figure
    figures = ({*starts.values(), cap, *(a for _, a in order)}
               | {starts[k] + sum((a for rid, a in seq if rid in taken), Decimal(0)) for k, seq in seqs.items()}
               | {x for k, seq in seqs.items() for x in _running(seq, starts[k], taken)})
    return Part(steps, text, answer=("numeric", fmt_value(float(spent))), writes=True, structure="conditional",
                companions=sorted(fmt_value(float(x)) for x in figures - {spent} if x))
