"""Candidate tasks: graph walks and short programs, executed against the golden state.

*Graph tasks* start at a tool that finds a record by a label the user knows (a code, an
e-mail), walk the dependency graph (foreign-key hops to parents, then a terminal tool fed by
the current record: a field read, a transition, an update, a child count / total / listing /
write), execute every call on the golden state and take the ground truth from that run: the
answer it produced and ``sql`` checks whose expected rows are read from the resulting state.

*Programmatic tasks* are small Python programs over the tools (loops with pagination,
branches, aggregations, conditional writes, refusals); their execution trace becomes the
reference ``solution`` and a ``tasks.*`` Python verifier recomputes the truth from the
initial and final databases.

Every candidate then goes through :func:`~agentworld_envs.tasks.gate.gate`.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..engine.language import (average_of, field_question, field_value, flag_words, in_state, indefinite, set_flag_phrase,
                        value_words, verb_phrase)
from ..engine.actions import format_call
from ..engine.rules import Rule
from ..engine.tools import ToolError
from .model import EnvModel, TableInfo, clock_side, words
from .runner import Runner

SKIP_READ = {"id", "status_changed_at", "status_reason"}
DATE = re.compile(r"\d{4}-\d\d-\d\d")
REASONS = ["requested by the customer", "duplicate entry", "customer asked by phone", "data clean-up",
           "per manager approval", "entered in error"]
HELLOS = ["", "", "", "Hi, ", "Hello! ", "Good morning. ", "Hey there. "]
BYES = ["", "", "", " Thanks!", " Thank you."]


def key(value: Any) -> Any:
    """A value as a request states it: a timestamp by its day."""
    return value[:10] if isinstance(value, str) and DATE.match(value) else value


class Skip(Exception):
    """This family does not apply here (or the chosen records do not fit)."""


@dataclass
class Part:
    steps: list[dict[str, Any]]
    text: str
    checks: list[dict[str, Any]] = field(default_factory=list)
    answer: tuple[str, Any] | None = None     # (mode, value)
    candidates: list[str] = field(default_factory=list)   # table.column sources of competing answer values
    #: figures a reply may name beside the answer without competing with it (what a budget's remainder leaves
    #: spent, the other total of a price rise): the request's own arithmetic, no guess at the answer
    companions: list[str] = field(default_factory=list)
    refusal: str | None = None                # text explaining a refusal (policy trap)
    refusal_check: dict[str, Any] | None = None   # what the refusal must say (reasons, competitors, claims)
    structure: str = "linear"
    writes: bool = False
    rule: str | None = None                   # the policy rule the part exercises, in words


def call(name: str, /, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def total_of(column: str) -> str:
    """ "total fee", but "combined total fare" (not "total total fare")."""
    w = words(column)
    return f"combined {w}" if w.startswith("total") else f"total {w}"


def fmt_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


class Generator:
    def __init__(self, model: EnvModel, runner: Runner, rng: random.Random):
        self.m, self.r, self.rng = model, runner, rng
        self.conn = runner.initial
        #: (table, id) of every record a part's chain has reached: a hop or a target never comes back to one.
        self.visited: set[tuple[str, int]] = set()
        #: Conditions the outcome hinges on that the request does not state (a blocking status, a rule's
        #: figure, a related record's field): counted for the difficulty, never said in the text.
        self.hidden = 0
        self._reason: str | None = None
        #: The follow-up duties each trigger tool brings (see :meth:`owed`), and the calls each trigger call
        #: of this candidate was followed by (keyed by the call's text): the reference carries them out.
        self.duties: dict[str, list[Rule]] = {}
        for raw in model.spec.get("rules", ()):
            if raw.get("kind") == "duty" and raw.get("follow") in model.tools:
                self.duties.setdefault(raw["tool"], []).append(Rule.from_json(raw))
        self.followed: dict[str, list[dict[str, Any]]] = {}

    # ------------------------------------------------------------------ helpers
    def run(self, name: str, /, **arguments: Any) -> Any:
        """Execute a call on the live (savepointed) episode connection; tool errors are Skip. A call that
        triggers a follow-up duty is followed by it (see :meth:`owed`)."""
        try:
            out = self.r.call(name, arguments)
        except ToolError as exc:
            raise Skip(f"{name}: {exc.code}") from None
        if name in self.duties:
            self.followed[format_call(name, arguments)] = self.owed(name, arguments)
        return out

    def owed(self, name: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
        """Carry out the duties a successful ``name`` call owes on the live state: list the closed record's
        children, then close each one still open. Returns those calls, for the reference."""
        tool = self.m.tools[name]
        rid = arguments[tool["impl"]["key"]["param"]]
        steps: list[dict[str, Any]] = []
        for duty in self.duties[name]:
            p = self.m.tables[duty.parent]
            label = self.row_now(p.name, rid).get(p.label) if p.label else None
            about = f"{self.verb(tool, p)} {p.singular} {label if label is not None else rid}"
            c = self.m.tables[duty.table]
            if not c.search or duty.column not in c.search_params:
                raise Skip("a duty's records cannot be listed")
            args = {c.search_params[duty.column]: rid}
            if c.search_limit:
                args[c.search_limit] = 50
            res = self.run(c.search, **args)
            if res["total"] > len(res["results"]):
                raise Skip("a duty owed on more records than one page shows")
            steps.append(call(c.search, **args))
            follow = self.m.tools[duty.follow]
            for row in res["results"]:
                if row.get("status") in duty.states:
                    # the agent words its own reason for a follow-up: the reference's is one no request states
                    fargs = {k: (f"follow-up: {about}" if k != follow["impl"]["key"]["param"] else v)
                             for k, v in self.transition_args(follow, row["id"]).items()}
                    self.run(duty.follow, **fargs)
                    steps.append(call(duty.follow, **fargs))
        return steps

    def rules_allow(self, tool: dict[str, Any], rid: int) -> bool:
        """Whether the theme's enforced rules (thresholds, time windows) let ``tool`` act on row ``rid``, and the
        world's clock lets the status it moves the row to stand (no invoice marked overdue before it is due, no
        session completed before it starts: a task never asks for a state the world could not hold)."""
        impl = tool.get("impl") or {}
        if impl.get("kind") == "transition" and not self.clock_allows(impl["table"], impl["to"], rid):
            return False
        conds = [Rule.from_json(r).sql(self.m.spec["now"]) for r in self.m.spec.get("rules", [])
                 if r.get("tool") == tool["name"] and r.get("kind") not in ("quota", "duty")]
        if not conds:
            return True
        table = tool["impl"]["table"]
        where = " AND ".join(f"({c})" for c in conds)
        return self.conn.execute(f'SELECT 1 FROM "{table}" WHERE id = ? AND {where}', (rid,)).fetchone() is not None

    def clock_allows(self, table: str, status: str, rid: int) -> bool:
        """Whether row ``rid`` of ``table`` may be in ``status`` on the world's clock: each of its dates the world
        keeps on one side of today for that status (``clock_side``) lies there."""
        today = self.m.spec["now"][:10]
        row = None
        for col in self.m.tables[table].cols if table in self.m.tables else ():
            side = clock_side(self.m.spec, table, col, status)
            if side is None:
                continue
            row = row or self.m.rows(self.conn, table, "id = ?", (rid,))[0]
            value = row.get(col)
            # a past date lies before today (the lint's reading: a load delivered today was due before it)
            if isinstance(value, str) and (value[:10] >= today if side == "past" else value[:10] <= today):
                return False
        return True

    def row_now(self, table: str, rid: int) -> dict[str, Any]:
        cur = self.r.conn.execute(f'SELECT * FROM "{table}" WHERE id = ?', (rid,))
        return dict(zip([d[0] for d in cur.description], cur.fetchone()))

    def summable(self, c: TableInfo, cols: Iterable[str]) -> list[str]:
        """The numeric columns of ``cols`` whose values add up across ``c``'s records: amounts of money are
        left out where the records hold more than one currency (a total of USD and EUR means nothing)."""
        cur = next((k for k in c.cols if k == "currency" or k.endswith("_currency")), None)
        mixed = cur is not None and self.conn.execute(
            f'SELECT COUNT(DISTINCT "{cur}") FROM "{c.name}"').fetchone()[0] > 1
        return [k for k in cols if not (mixed and c.cols[k]["type"] == "REAL")]

    def anchors(self) -> list[TableInfo]:
        return [t for t in self.m.tables.values() if t.finders]

    def pick_row(self, t: TableInfo, where: str = "1", params: tuple = ()) -> dict[str, Any]:
        cond = f'{where} AND "{t.label}" IS NOT NULL'
        n = self.conn.execute(f'SELECT COUNT(*) FROM "{t.name}" WHERE {cond}', params).fetchone()[0]
        if not n:
            raise Skip("no rows")
        cur = self.conn.execute(f'SELECT * FROM "{t.name}" WHERE {cond} ORDER BY id LIMIT 1 OFFSET ?',
                                (*params, self.rng.randrange(n)))
        return dict(zip([d[0] for d in cur.description], cur.fetchone()))

    def describe(self, t: TableInfo, row: dict[str, Any]) -> str:
        col = t.label
        v = row[col]
        if "email" in col:
            return self.rng.choice([f"the {t.singular} with e-mail {v}", f"the {t.singular} registered as {v}"])
        if "name" in col or "title" in col:
            return f"the {t.singular} named {v}"
        return self.rng.choice([f"{t.singular} {v}", f"the {t.singular} with {words(col)} {v}"])

    def find(self, t: TableInfo, row: dict[str, Any]) -> dict[str, Any]:
        tool, param = t.finders[t.label]
        return call(tool, **{param: row[t.label]})

    def reason(self) -> str:
        # One reason per task: the instruction states it once, so every write of the task must use it.
        if self._reason is None:
            self._reason = self.rng.choice(REASONS)
        return self._reason

    def transition_args(self, tool: dict[str, Any], rid: int) -> dict[str, Any]:
        impl = tool["impl"]
        args: dict[str, Any] = {impl["key"]["param"]: rid}
        for p in tool["parameters"].get("required", []):
            if p not in args:
                args[p] = self.reason()
        return args

    @staticmethod
    def verb(tool: dict[str, Any], t: TableInfo) -> str:
        stem = t.get_param[:-3] if t.get_param.endswith("_id") else t.name
        name = tool["name"]
        return words(name[: -len(stem) - 1]) if name.endswith("_" + stem) else words(name)

    def pick_parent(self, p: TableInfo, c: TableInfo, fk: str, where: str = "1", params: tuple = (),
                    lo: int = 2, hi: int = 120) -> dict[str, Any]:
        """A random row of ``p`` with ``lo``..``hi`` children in ``c`` (via ``fk``) matching ``where``."""
        rows = self.conn.execute(f'SELECT "{fk}" FROM "{c.name}" WHERE {where} AND "{fk}" IS NOT NULL GROUP BY 1 '
                                 f"HAVING COUNT(*) BETWEEN ? AND ? ORDER BY 1", (*params, lo, hi)).fetchall()
        if not rows:
            raise Skip("no parent with children")
        prow = self.m.rows(self.conn, p.name, "id = ?", (self.rng.choice(rows)[0],))[0]
        if prow.get(p.label) is None:
            raise Skip("parent has no label")
        return prow

    def related(self, fk: str, parent: str, desc: str) -> str:
        """The parent a key points at, said in words: "the nurse of …", "the origin warehouse of …",
        "the workspace member in the created-by field of …"."""
        fkw = words(fk[:-3]) if fk.endswith("_id") else words(fk)
        role = fkw[: -len(parent)].strip() if fkw.endswith(parent) else ""
        if role.split(" ")[-1:] and role.split(" ")[-1] in ("by", "to", "for", "from", "with", "on", "at"):
            # A role ending in a preposition reads as a form field: "the employee in the assigned-to field of …"
            return f"the {parent} in the {role.replace(' ', '-')} field of {desc}"
        rel = f"the {fkw}" if fkw.endswith(parent) else f"the {fkw} ({parent})"
        links = ["of", "linked to"] + ([] if desc.startswith("on ") else ["on"])   # never "on on call shift"
        return f"{rel} {self.rng.choice(links)} {desc}"

    def lifecycle_rule(self, tool: dict[str, Any], t: TableInfo) -> str:
        """The status rule a transition enforces, in words ("Only ship a shipment order that is processing.")."""
        froms = [words(s) for s in tool["impl"]["from"]]
        states = ", ".join(froms[:-1]) + " or " + froms[-1] if len(froms) > 1 else froms[0]
        return f"Only {self.act(tool, t, indefinite(t.singular))} when it is {states}."

    def act(self, tool: dict[str, Any], t: TableInfo, obj: str) -> str:
        """The imperative for a transition tool on ``obj`` ("start maintenance on the logger")."""
        return verb_phrase(self.verb(tool, t).replace(" ", "_"), obj)

    def row_check(self, table: str, rid: int, exclude: set[str] = frozenset(), desc: str = "") -> dict[str, Any]:
        """An sql check on one row's columns, expected values read from the live (post-chain) state."""
        row = self.row_now(table, rid)
        cols = [c for c in row if c not in exclude and c != "id"]
        query = f'SELECT {", ".join(chr(34) + c + chr(34) for c in cols)} FROM "{table}" WHERE id = ?'
        return {"type": "sql", "query": query, "params": [rid], "expect": [[row[c] for c in cols]],
                "description": desc or f"{table} row as the request leaves it"}

    # ------------------------------------------------------------------ finding the first record
    def attribute_phrase(self, col: str, value: Any) -> str:
        """How a request singles a record out by one of its fields: "placed on 2026-03-10",
        "reserved for 2026-06-19", "titled "Spring audit"", "with party size 6"."""
        if isinstance(value, str) and DATE.match(value):
            day = value[:10]
            m = re.fullmatch(r"(.+?)_(at|on|date|time)", col)
            if m and m.group(1).endswith("ed") and "_" not in m.group(1):
                return f"{m.group(1)} on {day}"
            if m:
                return f"with its {words(m.group(1))} {'date' if m.group(2) in ('on', 'date') else 'time'} on {day}"
            if col.rsplit("_", 1)[-1] in ("for", "until", "by", "from", "to"):
                return f"{words(col)} {day}"
            return f"with {words(col)} {day}"
        if isinstance(value, str):
            if any(k in col for k in ("name", "title")):
                return f'{"titled" if "title" in col else "named"} "{value}"'
            return f'with {words(col)} "{value}"'
        if isinstance(value, bool):
            return f"that is {flag_words(col, value)}"
        return f"with {words(col)} {fmt_value(value)}"

    def by_attributes(self, t: TableInfo, row: dict[str, Any]) -> tuple[list[dict[str, Any]], str, str] | None:
        """Reach ``row`` the way a person describes it: its parent (found by label) and one of its own
        fields that no sibling shares ("the booking of diner a@b.org placed on 2026-03-10"), not its code.
        Returns (steps, description, last tool) or None where no such description fits."""
        if not t.search:
            return None
        opts = []
        for fk, parent in t.fks.items():
            p = self.m.tables.get(parent)
            if p is None or parent == t.name or not p.finders or row.get(fk) is None or fk not in t.search_params:
                continue
            if self.m.feeds(p.finders[p.label][0], t.search, f"{parent}.id", t.search_params[fk]):
                opts.append((fk, p))
        self.rng.shuffle(opts)
        for fk, p in opts:
            siblings = self.m.rows(self.conn, t.name, f'"{fk}" = ?', (row[fk],))
            if not 2 <= len(siblings) <= 40:
                continue
            st = t.status_col()
            cols = [c for c, spec in t.cols.items() if c not in SKIP_READ and c not in t.fks and c != st
                    and not spec.get("unique") and not spec.get("enum") and row.get(c) not in (None, "")
                    and len(str(row[c])) <= 40]
            self.rng.shuffle(cols)
            for c in cols:
                if isinstance(row[c], float) or sum(key(s[c]) == key(row[c]) for s in siblings) != 1:
                    continue
                prow = self.m.rows(self.conn, p.name, "id = ?", (row[fk],))[0]
                if prow.get(p.label) is None:
                    continue
                args: dict[str, Any] = {t.search_params[fk]: row[fk]}
                if t.search_limit:
                    args[t.search_limit] = 50
                steps = [self.find(p, prow), call(t.search, **args)]
                for s in steps:
                    self.run(s["name"], **s["arguments"])
                self.visited.add((p.name, prow["id"]))
                pdesc = self.describe(p, prow)
                return steps, f"the {t.singular} of {pdesc} {self.attribute_phrase(c, key(row[c]))}", t.search
        return None

    def locate(self, t: TableInfo, row: dict[str, Any], attributes: float = 0.5) -> tuple[list[dict[str, Any]], str, str]:
        """The lookups that reach ``row`` and its description: by its fields and parent (with probability
        ``attributes``, where that singles it out), else by its label. Returns (steps, desc, last tool)."""
        self.visited.add((t.name, row["id"]))
        if self.rng.random() < attributes or not t.label:
            found = self.by_attributes(t, row)
            if found:
                return found
        if not t.label or row.get(t.label) is None:
            raise Skip("no way to describe the record")
        steps = [self.find(t, row)]
        self.run(steps[0]["name"], **steps[0]["arguments"])
        return steps, self.describe(t, row), steps[0]["name"]

    # ------------------------------------------------------------------ graph walk
    def walk(self, write: bool | None = None, trap: bool = False) -> tuple[Part, TableInfo, dict[str, Any]]:
        """A random walk from a record the request describes, through FK hops to new records (never one
        the chain has reached before), to a terminal tool."""
        anchors = self.anchors()
        if not anchors:
            raise Skip("no label lookups")
        t = self.rng.choice(anchors)
        row = self.pick_row(t)
        steps, desc, cur_tool = self.locate(t, row)
        for _ in range(self.rng.choice([0, 1, 1, 2, 2, 3])):
            hops = []
            for fk, parent in t.fks.items():
                p = self.m.tables[parent]
                if row.get(fk) is None or not p.get or parent == t.name or (parent, row[fk]) in self.visited:
                    continue
                if self.m.feeds(cur_tool, p.get, f"{t.name}.{fk}", p.get_param):
                    hops.append((fk, p))
            if not hops:
                break
            fk, p = self.rng.choice(hops)
            step = call(p.get, **{p.get_param: row[fk]})
            self.run(p.get, **step["arguments"])
            steps.append(step)
            desc = self.related(fk, p.singular, desc)
            t, row, cur_tool = p, self.row_now(p.name, row[fk]), p.get
            self.visited.add((t.name, row["id"]))
        return self.terminal(t, row, desc, steps, cur_tool, write, trap), t, row

    def terminal(self, t: TableInfo, row: dict[str, Any], desc: str, steps: list[dict[str, Any]], cur: str,
                 write: bool | None, trap: bool) -> Part:
        options: list[Callable[[], Part]] = []
        if trap:
            options += [lambda: self.t_transition(t, row, desc, steps, cur, trap=True)] * 2
        else:
            if write is not True:
                options += [lambda: self.t_field(t, row, desc, steps),
                            lambda: self.t_child_agg(t, row, desc, steps, cur),
                            lambda: self.t_child_list(t, row, desc, steps, cur)]
            if write is not False:
                options += [lambda: self.t_transition(t, row, desc, steps, cur),
                            lambda: self.t_transition(t, row, desc, steps, cur),
                            lambda: self.t_update(t, row, desc, steps, cur),
                            lambda: self.t_child_write(t, row, desc, steps, cur)]
        self.rng.shuffle(options)
        for opt in options:
            sp = "walk_terminal"
            self.r.conn.execute(f"SAVEPOINT {sp}")
            try:
                part = opt()
                self.r.conn.execute(f"RELEASE {sp}")
                return part
            except Skip:
                self.r.conn.execute(f"ROLLBACK TO {sp}")
                self.r.conn.execute(f"RELEASE {sp}")
        raise Skip("no terminal fits")

    def t_field(self, t: TableInfo, row: dict[str, Any], desc: str, steps: list[dict[str, Any]]) -> Part:
        cols = [c for c, spec in t.cols.items() if c not in SKIP_READ and c not in t.fks and c != t.label
                and spec["type"] != "BOOLEAN" and row.get(c) not in (None, "") and len(str(row[c])) <= 40
                # never the field the record is described by ("the reading with signal strength -49": its strength)
                and not (words(c) in desc and str(fmt_value(row[c])) in desc)]
        if not cols:
            raise Skip("no readable field")
        c = self.rng.choice(cols)
        v = row[c]
        numeric = t.cols[c]["type"] in ("INTEGER", "REAL")
        q = field_question(c, desc, self.rng.randrange(3))
        return Part(list(steps), q, answer=("numeric" if numeric else "exact", fmt_value(v)),
                    candidates=[] if numeric else [f"{t.name}.{c}"])

    def _child_filters(self, t: TableInfo, row: dict[str, Any], cur: str, tool_params: dict[str, str], tool: str,
                       child: TableInfo, fk: str) -> tuple[dict[str, Any], str] | None:
        if fk not in tool_params or not self.m.feeds(cur, tool, f"{t.name}.id", tool_params[fk]):
            return None
        args: dict[str, Any] = {tool_params[fk]: row["id"]}
        extra = ""
        st = child.status_col()
        if st and st in tool_params and self.rng.random() < 0.6:
            statuses = [r[0] for r in self.conn.execute(
                f'SELECT DISTINCT "{st}" FROM "{child.name}" WHERE "{fk}" = ? ORDER BY 1', (row["id"],))]
            if statuses:
                s = self.rng.choice(statuses)
                args[tool_params[st]] = s
                extra = f" that are {words(s)}"
        return args, extra

    def t_child_agg(self, t: TableInfo, row: dict[str, Any], desc: str, steps: list[dict[str, Any]], cur: str) -> Part:
        opts = []
        for ct, fk in t.children:
            c = self.m.tables[ct]
            if c.count:
                opts.append((c, fk, c.count, c.count_params, None))
            for col in self.summable(c, c.sums):
                tool, params = c.sums[col]
                opts.append((c, fk, tool, params, col))
        if not opts:
            raise Skip("no child aggregate")
        c, fk, tool, params, col = self.rng.choice(opts)
        got = self._child_filters(t, row, cur, params, tool, c, fk)
        if got is None:
            raise Skip("graph has no edge")
        args, extra = got
        value = self.run(tool, **args)["value"]
        if value is None or value == 0:
            raise Skip("empty aggregate")
        fkw = words(fk[:-3]) if fk.endswith("_id") else words(fk)
        via = "" if fkw == t.singular else f" (as {fkw})"
        if col is None:
            q = self.rng.choice([f"How many {c.plural}{extra} does {desc} have{via}?",
                                 f"Count the {c.plural}{extra} of {desc}{via}."])
            ans = str(int(value))
        else:
            q = self.rng.choice([f"What is the {total_of(col)} of the {c.plural}{extra} of {desc}{via}?",
                                 f"What do the {c.plural}{extra} of {desc}{via} come to in {words(col)}, all together?",
                                 f"Give me the sum of {words(col)} across the {c.plural}{extra} of {desc}{via}."])
            ans = fmt_value(float(value))
        return Part(steps + [call(tool, **args)], q, answer=("numeric", ans), structure="aggregation")

    def t_child_list(self, t: TableInfo, row: dict[str, Any], desc: str, steps: list[dict[str, Any]], cur: str) -> Part:
        opts = [(self.m.tables[ct], fk) for ct, fk in t.children if self.m.tables[ct].search and self.m.tables[ct].label]
        if not opts:
            raise Skip("no child listing")
        c, fk = self.rng.choice(opts)
        got = self._child_filters(t, row, cur, c.search_params, c.search, c, fk)
        if got is None:
            raise Skip("graph has no edge")
        args, extra = got
        if c.search_limit:
            args[c.search_limit] = 50
        res = self.run(c.search, **args)
        labels = [r[c.label] for r in res["results"] if r.get(c.label)]
        if not 1 <= len(labels) <= 6 or res["total"] != len(labels):
            raise Skip("listing size")
        if any((c.name, r["id"]) in self.visited for r in res["results"]):
            raise Skip("the listing holds a record the chain came from")
        q = self.rng.choice([f"List the {words(c.label)}s of the {c.plural}{extra} belonging to {desc}.",
                             f"Which {c.plural}{extra} does {desc} have? Give me their {words(c.label)}s."])
        return Part(steps + [call(c.search, **args)], q, answer=("set", ", ".join(labels)), structure="aggregation",
                    candidates=[f"{c.name}.{c.label}"])

    def t_transition(self, t: TableInfo, row: dict[str, Any], desc: str, steps: list[dict[str, Any]], cur: str,
                     trap: bool = False) -> Part:
        trs = [tr for tr in t.transitions if self.m.feeds(cur, tr["name"], f"{t.name}.id", tr["impl"]["key"]["param"])]
        if not trs:
            raise Skip("no transition")
        st = trs[0]["impl"]["column"]
        if trap:
            trs = [tr for tr in trs if row[st] not in tr["impl"]["from"] and row[st] != tr["impl"]["to"]]
        else:
            trs = [tr for tr in trs if row[st] in tr["impl"]["from"]]
        if not trs:
            raise Skip("status does not fit")
        tr = self.rng.choice(trs)
        args = self.transition_args(tr, row["id"])
        verb = self.verb(tr, t)
        why = f" The reason is: {args['reason']}." if "reason" in args else ""
        act = self.act(tr, t, desc)
        text = self.rng.choice([f"Please {act}.{why}", f"I need you to {act}.{why}", f"Could you {act}?{why}"])
        if trap:
            self.hidden += 1   # the blocking status is only seen by looking the record up
            refusal = f"I cannot {act}: the policy does not allow it while it is {row[st]}"
            # The reason is the blocking status; the statuses the rule allows (and the target status)
            # may be named when stating the rule; any other status competes with the reason.
            allowed = sorted({*tr["impl"]["from"], tr["impl"]["to"]})
            check = {"reasons": [[row[st]]], "candidates": [f"{t.name}.{st}"], "values": list(t.cols[st].get("enum") or []),
                     "exclude": allowed, "results": [tr["impl"]["to"]],
                     "about": [str(v) for v in steps[0]["arguments"].values()]}
            return Part(list(steps), text, refusal=refusal, refusal_check=check, structure="conditional",
                        rule=self.lifecycle_rule(tr, t))
        self.run(tr["name"], **args)
        check = self.row_check(t.name, row["id"], exclude={"status_reason"}, desc=f"{t.singular} {verb}")
        return Part(steps + [call(tr["name"], **args)], text, checks=[check], writes=True, rule=self.lifecycle_rule(tr, t))

    def new_value(self, col: dict[str, Any], old: Any) -> Any:
        if col.get("enum"):
            choices = [v for v in col["enum"] if v != old]
            return self.rng.choice(choices) if choices else None
        if col["type"] == "BOOLEAN":
            return None if old is None else not bool(old)
        if col["type"] == "REAL":
            return round((old or 10.0) * self.rng.choice([1.1, 1.25, 0.9]) + 1, 2)
        if col["type"] == "INTEGER":
            return (old or 0) + self.rng.randint(1, 5)
        if any(k in col["name"] for k in ("note", "message", "instruction", "description", "comment", "bio")):
            return self.rng.choice(["Leave at the front desk", "Call before arriving", "Handle with care",
                                    "Priority follow-up", "Customer prefers e-mail"])
        return None

    def t_update(self, t: TableInfo, row: dict[str, Any], desc: str, steps: list[dict[str, Any]], cur: str) -> Part:
        tool = t.update
        if tool is None or not self.m.feeds(cur, tool["name"], f"{t.name}.id", tool["impl"]["key"]["param"]):
            raise Skip("no update")
        fields = [(e.split(":", 1)[1], c) for c, e in tool["impl"]["set"].items() if isinstance(e, str) and e.startswith("$param:")]
        self.rng.shuffle(fields)
        for param, col in fields:
            new = self.new_value(t.cols[col], row[col])
            if new is None or new == row[col]:
                continue
            args = {tool["impl"]["key"]["param"]: row["id"], param: new}
            self.run(tool["name"], **args)
            if isinstance(new, float):
                shown = fmt_value(new)
            elif isinstance(new, str):   # a category in words; free text quoted, so it reads as the value
                shown = value_words(new) if t.cols[col].get("enum") else f'"{new}"'
            else:
                shown = new
            if isinstance(new, bool):
                text = set_flag_phrase(col, new, desc)
            else:
                # desc may end in a preposition ("the employee the alert was assigned to"): never follow it with "to".
                text = self.rng.choice([f"For {desc}, please change the {words(col)} to {shown}.",
                                        f"Set the {words(col)} to {shown} for {desc}.",
                                        f"Update {desc}: its {words(col)} should be {shown}."])
            check = self.row_check(t.name, row["id"], desc=f"{words(col)} updated")
            return Part(steps + [call(tool["name"], **args)], text, checks=[check], writes=True)
        raise Skip("nothing to update")

    def t_child_write(self, t: TableInfo, row: dict[str, Any], desc: str, steps: list[dict[str, Any]], cur: str) -> Part:
        for ct, fk in self.rng.sample(t.children, len(t.children)):
            c = self.m.tables[ct]
            st = c.status_col()
            if not c.search or not st or fk not in c.search_params or st not in c.search_params:
                continue
            if not self.m.feeds(cur, c.search, f"{t.name}.id", c.search_params[fk]):
                continue
            for tr in self.rng.sample(c.transitions, len(c.transitions)):
                for s in tr["impl"]["from"]:
                    ids = [r[0] for r in self.conn.execute(
                        f'SELECT id FROM "{ct}" WHERE "{fk}" = ? AND "{st}" = ?', (row["id"], s))]
                    if len(ids) != 1 or (ct, ids[0]) in self.visited:   # never back to where the chain started
                        continue
                    sargs = {c.search_params[fk]: row["id"], c.search_params[st]: s}
                    res = self.run(c.search, **sargs)
                    if not self.m.feeds(c.search, tr["name"], f"{ct}.id", tr["impl"]["key"]["param"]):
                        continue
                    args = self.transition_args(tr, res["results"][0]["id"])
                    self.run(tr["name"], **args)
                    verb = self.verb(tr, c)
                    why = f" Reason: {args['reason']}." if "reason" in args else ""
                    act = self.act(tr, c, "it")
                    text = self.rng.choice([f"{desc[0].upper() + desc[1:]} has exactly one {in_state(s, c.singular)}; please {act}.{why}",
                                            f"Find the one {c.singular} of {desc} that is {words(s)} and {act}.{why}"])
                    check = self.row_check(ct, ids[0], exclude={"status_reason"}, desc=f"{c.singular} {verb}")
                    return Part(steps + [call(c.search, **sargs), call(tr["name"], **args)], text, checks=[check],
                                writes=True, structure="branching")
        raise Skip("no single child to change")

    # ------------------------------------------------------------------ programs
    def _bulk_setup(self, min_n: int = 2, max_n: int = 6, mixed: bool = False, threshold: bool = False):
        """(parent, child, fk, transition, row, from statuses, refuse statuses, threshold) for a bulk write."""
        combos = []
        for p in self.anchors():
            for ct, fk in p.children:
                c = self.m.tables[ct]
                st = c.status_col()
                if c.search and st and fk in c.search_params and st in c.search_params:
                    combos += [(p, c, fk, tr) for tr in c.transitions]
        self.rng.shuffle(combos)
        for p, c, fk, tr in combos[:6]:
            st = tr["impl"]["column"]
            nums = [k for k, v in c.cols.items() if v["type"] in ("REAL", "INTEGER") and k not in c.fks and k != "id"]
            if threshold and not nums:
                continue
            allowed = list(tr["impl"]["from"])
            s = self.rng.choice(allowed)
            bad = [x for x in (c.cols[st].get("enum") or []) if x not in allowed and x != tr["impl"]["to"]]
            refuse = [self.rng.choice(bad)] if mixed and bad else []
            if mixed and not refuse:
                continue
            rows = self.conn.execute(
                f'SELECT "{fk}", SUM("{st}" = ?), SUM("{st}" = ?) FROM "{c.name}" WHERE "{fk}" IS NOT NULL GROUP BY 1 '
                f'HAVING SUM("{st}" = ?) BETWEEN ? AND ? ORDER BY 1', (s, refuse[0] if refuse else "", s, min_n, max_n)).fetchall()
            rows = [r for r in rows if not mixed or r[2] >= 1]
            if not rows:
                continue
            pid = self.rng.choice(rows)[0]
            prow = self.m.rows(self.conn, p.name, "id = ?", (pid,))[0]
            if prow.get(p.label) is None:
                continue
            thr = None
            if threshold:
                col = self.rng.choice(nums)
                vals = sorted(v[0] for v in self.conn.execute(
                    f'SELECT "{col}" FROM "{c.name}" WHERE "{fk}" = ? AND "{st}" = ? AND "{col}" IS NOT NULL', (pid, s)))
                if len(vals) < 2 or vals[0] == vals[-1]:
                    continue
                cut = vals[len(vals) // 2 - 1]
                if isinstance(cut, float):
                    cut = round(cut, 2)
                thr = {"column": col, "value": cut}
            return p, c, fk, tr, prow, [s], refuse, thr
        raise Skip("no bulk combination")

    def page(self, c: TableInfo, args: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """All rows a search returns, paging by 50; returns (rows, calls)."""
        rows, calls, offset = [], [], 0
        while True:
            a = dict(args)
            if c.search_limit:
                a[c.search_limit] = 50
            if offset and c.search_offset:
                a[c.search_offset] = offset
            res = self.run(c.search, **a)
            calls.append(call(c.search, **a))
            rows += res["results"]
            offset += len(res["results"])
            if offset >= res["total"] or not res["results"] or not c.search_offset:
                return rows, calls

    def p_bulk_hidden(self, attributes: float = 0.0, allowed: tuple[int, int] = (1, 6)) -> Part:
        """Change every child of a parent, where the policy forbids it for some: the request names no status,
        so only reading each record shows which to refuse (and why)."""
        combos = []
        for p in self.anchors():
            for ct, fk in p.children:
                c = self.m.tables[ct]
                st = c.status_col()
                if c.search and st and fk in c.search_params:
                    combos += [(p, c, fk, tr) for tr in c.transitions]
        self.rng.shuffle(combos)
        lo, hi = allowed
        for p, c, fk, tr in combos[:6]:
            st, allowed, to = tr["impl"]["column"], list(tr["impl"]["from"]), tr["impl"]["to"]
            marks = ", ".join("?" * len(allowed))
            parents = self.conn.execute(
                f'SELECT "{fk}" FROM "{c.name}" WHERE "{fk}" IS NOT NULL GROUP BY 1 HAVING SUM("{st}" IN ({marks})) BETWEEN ? AND ? '
                f'AND SUM("{st}" NOT IN ({marks}) AND "{st}" != ?) >= 1 AND COUNT(*) <= ? ORDER BY 1',
                (*allowed, lo, hi, *allowed, to, hi + 9)).fetchall()
            if not parents:
                continue
            prow = self.m.rows(self.conn, p.name, "id = ?", (self.rng.choice(parents)[0],))[0]
            if prow.get(p.label) is None:
                continue
            self.visited.clear()
            steps, desc, _ = self.locate(p, prow, attributes)
            rows, calls = self.page(c, {c.search_params[fk]: prow["id"]})
            steps += calls
            if any(r[st] in allowed and not self.rules_allow(tr, r["id"]) for r in rows):
                continue   # a business rule would refuse one too: not this shape's question
            done, refused = 0, []
            for r in rows:                        # the program: read each status, act or refuse
                if r[st] in allowed:
                    args = self.transition_args(tr, r["id"])
                    self.run(tr["name"], **args)
                    steps.append(call(tr["name"], **args))
                    done += 1
                elif r[st] != to:
                    refused.append(r[st])
            if not done or not refused:
                continue
            refuse = sorted(set(refused))
            self.hidden += 1
            verb = self.verb(tr, c)
            reason = " Use the reason: " + steps[-1]["arguments"]["reason"] + "." if "reason" in steps[-1]["arguments"] else ""
            text = self.rng.choice([
                f"Please {self.act(tr, c, f'all {c.plural} of {desc}')}.{reason}",
                f"For {desc}, {self.act(tr, c, f'every one of its {c.plural}')}, please.{reason}",
                f"I need every {c.singular} of {desc} handled: {self.act(tr, c, 'each of them')}.{reason}"])
            args = {"table": c.name, "fk": fk, "parent_table": p.name, "parent_label_col": p.label,
                    "parent_label": prow[p.label], "column": st, "from_statuses": allowed, "to": to,
                    "refuse_statuses": refuse}
            check = {"type": "python", "function": "tasks.bulk_transition", "args": args,
                     "description": f"{verb} the {c.plural} the policy allows, refuse the rest"}
            part = Part(steps, text, checks=[check], writes=True, structure="conditional", rule=self.lifecycle_rule(tr, c))
            part.refusal = (f"I moved {done} of them to {to}, but I cannot {verb} the {len(refused)} that are "
                            f"{' or '.join(refuse)}: the policy does not allow it")
            return part
        raise Skip("no parent with allowed and forbidden children")

    def p_bulk(self, mixed: bool = False, threshold: bool = False) -> Part:
        if mixed:
            return self.p_bulk_hidden()
        p, c, fk, tr, prow, froms, refuse, thr = self._bulk_setup(mixed=mixed, threshold=threshold)
        st = tr["impl"]["column"]
        desc = self.describe(p, prow)
        verb = self.verb(tr, c)
        steps = [self.find(p, prow)]
        self.run(steps[0]["name"], **steps[0]["arguments"])
        done, refused = 0, 0
        for s in froms + refuse:
            rows, calls = self.page(c, {c.search_params[fk]: prow["id"], c.search_params[st]: s})
            steps += calls
            for r in rows:                        # the program: loop, branch, write
                if s in refuse:
                    refused += 1
                    continue
                if thr and not (r[thr["column"]] is not None and r[thr["column"]] > thr["value"]):
                    continue
                args = self.transition_args(tr, r["id"])
                self.run(tr["name"], **args)
                steps.append(call(tr["name"], **args))
                done += 1
        if not done:
            raise Skip("nothing to do")
        states = " or ".join(words(x) for x in froms + refuse)
        cond = f" whose {words(thr['column'])} is above {fmt_value(thr['value'])}" if thr else ""
        reason = f" Use the reason: {self._reason}." if self._reason else ""   # the one every write of the task uses
        every = self.act(tr, c, f"every {c.singular} of {desc} that is {states}{cond}")
        text = self.rng.choice([f"{every[0].upper() + every[1:]}.{reason}",
                                f"Please {self.act(tr, c, f'all {c.plural} of {desc} that are {states}{cond}')}.{reason}",
                                f"For {desc}: {self.act(tr, c, f'each of its {states} {c.plural}{cond}')}.{reason}"])
        args = {"table": c.name, "fk": fk, "parent_table": p.name, "parent_label_col": p.label,
                "parent_label": prow[p.label], "column": st, "from_statuses": froms, "to": tr["impl"]["to"]}
        if thr:
            args["threshold"] = thr
        if refuse:
            args["refuse_statuses"] = refuse
        check = {"type": "python", "function": "tasks.bulk_transition", "args": args,
                 "description": f"{verb} the matching {c.plural}, nothing else"}
        part = Part(steps, text, checks=[check], writes=True, structure="conditional" if (thr or refuse) else "branching")
        if refuse:
            part.rule = self.lifecycle_rule(tr, c)
            part.refusal = (f"I moved {done} of them to {tr['impl']['to']}, but I cannot {verb} the {refused} that are "
                            f"{' or '.join(refuse)}: the policy does not allow it")
        return part

    def p_aggregate(self) -> Part:
        opts = []
        for p in self.anchors():
            for ct, fk in p.children:
                c = self.m.tables[ct]
                if c.search and fk in c.search_params:
                    opts.append((p, c, fk))
        if not opts:
            return self.p_table_aggregate()
        p, c, fk = self.rng.choice(opts)
        nums = self.summable(c, [k for k, v in c.cols.items() if v["type"] in ("REAL", "INTEGER") and k not in c.fks
                                 and k != "id"])
        funcs = ["count"] + (["sum", "avg"] if nums else []) + (["argmax"] if nums and c.label else [])
        func = self.rng.choice(funcs)
        col = self.rng.choice(nums) if func != "count" else None
        st = c.status_col()
        where: dict[str, Any] = {}
        prow = self.pick_parent(p, c, fk)
        pid = prow["id"]
        search = {c.search_params[fk]: pid}
        extra = ""
        if st and st in c.search_params and self.rng.random() < 0.5:
            s = self.rng.choice([r[0] for r in self.conn.execute(
                f'SELECT DISTINCT "{st}" FROM "{c.name}" WHERE "{fk}" = ? ORDER BY 1', (pid,))])
            search[c.search_params[st]] = s
            where[st] = s
            extra = f" that are {words(s)}"
        desc = self.describe(p, prow)
        steps = [self.find(p, prow)]
        self.run(steps[0]["name"], **steps[0]["arguments"])
        rows, calls = self.page(c, search)
        steps += calls
        if not rows:
            raise Skip("empty")
        if func == "count":                       # the program: aggregate in Python
            ans = str(len(rows))
            q = f"How many {c.plural}{extra} does {desc} have in total?"
        elif func == "sum":
            vals = [r[col] for r in rows if r[col] is not None]
            ans = fmt_value(round(float(sum(vals)), 2))
            q = self.rng.choice([f"Total the {words(col)} of the {c.plural}{extra} of {desc}.",
                                 f"What do the {words(col)} values of all {c.plural}{extra} of {desc} add up to?"])
        elif func == "avg":
            vals = [r[col] for r in rows if r[col] is not None]
            if not vals:
                raise Skip("no values")
            ans = fmt_value(round(sum(vals) / len(vals), 2))
            q = f"What is the {average_of(col)} across the {c.plural}{extra} of {desc}?"
        else:
            vals = sorted(((r[col], r[c.label]) for r in rows if r[col] is not None), reverse=True)
            if not vals or (len(vals) > 1 and vals[0][0] == vals[1][0]):
                raise Skip("tie")
            ans = str(vals[0][1])
            q = f"Among the {c.plural}{extra} of {desc}, which one has the highest {words(col)}? Give its {words(c.label)}."
        args = {"table": c.name, "func": func, "where": where,
                "parent": {"table": p.name, "label_col": p.label, "label": prow[p.label], "fk": fk}}
        if col:
            args["column"] = col
        if func == "argmax":
            args["label_col"] = c.label
        check = {"type": "python", "function": "tasks.aggregate_answer", "args": args,
                 "description": f"{func} over {c.plural}, recomputed from the initial state"}
        return Part(steps, q, checks=[check], answer=(None, ans), structure="aggregation")

    def p_argmax(self) -> Part:
        combos = []
        for p in self.anchors():
            for ct, fk in p.children:
                c = self.m.tables[ct]
                st = c.status_col()
                if c.search and st and st in c.search_params and p.get:
                    combos.append((p, c, fk, st))
        self.rng.shuffle(combos)
        for p, c, fk, st in combos[:4]:
            statuses = [r[0] for r in self.conn.execute(
                f'SELECT "{st}", COUNT(*) FROM "{c.name}" GROUP BY 1 HAVING COUNT(*) BETWEEN 2 AND 100 ORDER BY 1')]
            self.rng.shuffle(statuses)
            for s in statuses:
                top = self.conn.execute(f'SELECT "{fk}", COUNT(*) AS n FROM "{c.name}" WHERE "{st}" = ? AND "{fk}" IS NOT NULL '
                                        f"GROUP BY 1 ORDER BY n DESC LIMIT 2", (s,)).fetchall()
                if not top or top[0][1] > 6 or (len(top) > 1 and top[0][1] == top[1][1]):
                    continue
                rows, steps = self.page(c, {c.search_params[st]: s})
                counts: dict[int, int] = {}
                for r in rows:                    # the program: group and count
                    if r[fk] is not None:
                        counts[r[fk]] = counts.get(r[fk], 0) + 1
                best = max(counts, key=lambda k: (counts[k], -k))
                prow = self.run(p.get, **{p.get_param: best})
                steps.append(call(p.get, **{p.get_param: best}))
                trs = [tr for tr in c.transitions if s in tr["impl"]["from"]]
                to = None
                text = f"Which {p.singular} has the most {in_state(s, c.plural)}? Tell me their {words(p.label)}"
                if trs and self.rng.random() < 0.7:
                    tr = self.rng.choice(trs)
                    for r in rows:
                        if r[fk] == best:
                            args = self.transition_args(tr, r["id"])
                            self.run(tr["name"], **args)
                            steps.append(call(tr["name"], **args))
                    to = tr["impl"]["to"]
                    why = f" (reason: {steps[-1]['arguments']['reason']})" if "reason" in steps[-1]["arguments"] else ""
                    text += f", and {self.act(tr, c, f'all of those {in_state(s, c.plural)}')}{why}"
                args = {"table": c.name, "fk": fk, "parent_table": p.name, "parent_label_col": p.label, "column": st,
                        "status": s}
                if to:
                    args["to"] = to
                check = {"type": "python", "function": "tasks.argmax_parent", "args": args,
                         "description": "the right record named (and its records changed)"}
                return Part(steps, text + ".", checks=[check], answer=(None, str(prow[p.label])),
                            structure="aggregation", writes=bool(to))
        raise Skip("no argmax")

    def p_table_aggregate(self) -> Part:
        """Count or total the rows of one table in an enum value (e.g. a status), paging through a search."""
        opts = []
        for c in self.m.tables.values():
            if not c.search:
                continue
            for col, param in c.search_params.items():
                if c.cols.get(col, {}).get("enum"):
                    opts.append((c, col, param))
        if not opts:
            raise Skip("no enum filter")
        c, col, param = self.rng.choice(opts)
        values = [r[0] for r in self.conn.execute(
            f'SELECT "{col}", COUNT(*) FROM "{c.name}" GROUP BY 1 HAVING COUNT(*) BETWEEN 2 AND 140 ORDER BY 1')]
        if not values:
            raise Skip("no suitable value")
        v = self.rng.choice(values)
        rows, steps = self.page(c, {param: v})
        nums = self.summable(c, [k for k, x in c.cols.items() if x["type"] in ("REAL", "INTEGER") and k not in c.fks
                                 and k != "id"])
        if nums and self.rng.random() < 0.5:
            num = self.rng.choice(nums)
            ans = fmt_value(round(float(sum(r[num] for r in rows if r[num] is not None)), 2))
            q = f"What is the {total_of(num)} of all {c.plural} whose {words(col)} is {words(str(v))}?"
            args = {"table": c.name, "func": "sum", "column": num, "where": {col: v}}
        else:
            ans = str(len(rows))
            q = f"How many {c.plural} have {field_value(col, v)}? Count them for me."
            args = {"table": c.name, "func": "count", "where": {col: v}}
        check = {"type": "python", "function": "tasks.aggregate_answer", "args": args,
                 "description": "aggregate recomputed from the initial state"}
        return Part(steps, q, checks=[check], answer=(None, ans), structure="aggregation")
