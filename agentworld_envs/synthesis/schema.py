"""Theme → tables: pick the theme's entity modules, rename them, link their foreign keys.

Each theme names 4-7 entity modules; a module's ``ref`` columns point at *roles*
(``person``, ``staff``, ``item`` …) and resolve to the first other entity of the theme
that plays that role, or are dropped when none does. Optional columns are kept or
dropped by a seeded coin per theme, which (with renames) gives each theme its own schema.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import env_registry

from ..engine import datagen
from . import semantics
from .naming import plural, title


@dataclass
class Entity:
    """One table of a synthesised environment, with the module it came from."""

    key: str                 # module key
    singular: str            # the service's word for one record
    table: str
    module: dict[str, Any]
    columns: list[dict[str, Any]] = field(default_factory=list)   # spec columns (with 'gen' kept aside)
    gens: dict[str, dict[str, Any]] = field(default_factory=dict)  # column → generator
    refs: dict[str, str] = field(default_factory=dict)             # fk column → parent table
    workflow: dict[str, Any] | None = None
    rows: int = 0

    @property
    def label(self) -> str:
        return self.module["label"]

    @property
    def roles(self) -> list[str]:
        return self.module["roles"]

    def column(self, name: str) -> dict[str, Any] | None:
        return next((c for c in self.columns if c["name"] == name), None)


def _rng(theme: dict[str, Any], purpose: str) -> random.Random:
    return random.Random(f"{theme['slug']}:{purpose}")


def build_entities(theme: dict[str, Any]) -> list[Entity]:
    modules = env_registry.entity_modules()
    workflows = env_registry.workflows()
    rng = _rng(theme, "schema")
    entities: list[Entity] = []
    used_tables: set[str] = set()
    for ref in theme["entities"]:
        module = modules[ref["module"]]
        singular = ref.get("as") or ref["module"]
        table = plural(singular) if ref.get("as") else module["table"]
        while table in used_tables:
            table += "_x"
        used_tables.add(table)
        entities.append(Entity(key=ref["module"], singular=singular, table=table, module=module))

    import networkx as nx

    depends = nx.DiGraph()  # child table → parent table; kept acyclic so rows can be generated parents-first
    depends.add_nodes_from(e.table for e in entities)
    for _i, ent in enumerate(entities):
        cols: list[dict[str, Any]] = [{"name": "id", "type": "INTEGER", "primary_key": True}]
        names = {"id"}
        for col in ent.module["columns"]:
            if col.get("optional") and rng.random() < 0.5:
                continue
            if "ref" in col:
                target = next((e for e in entities if e is not ent and col["ref"] in e.roles
                               and not nx.has_path(depends, e.table, ent.table)), None)
                if target is None:
                    continue
                depends.add_edge(ent.table, target.table)
                name = semantics.fk_name(col["name"], target.singular)
                if name in names:
                    continue
                role = name[: -len(f"{target.singular}_id")].strip("_").replace("_", " ")
                what = f"The {target.singular.replace('_', ' ')}" + (f" ({role})" if role else "")
                spec_col = {"name": name, "type": "INTEGER", "references": f"{target.table}.id",
                            "description": f"{what} of this {ent.singular.replace('_', ' ')}."}
                if col.get("nullable") is False:
                    spec_col["nullable"] = False
                cols.append(spec_col)
                names.add(name)
                ent.refs[name] = target.table
                gen: dict[str, Any] = {"gen": "ref", "ref": f"{target.table}.id"}
                if col.get("nullable") is not False:
                    gen["null_p"] = 0.05
                ent.gens[name] = gen
                continue
            if col["name"] in names:
                continue
            if col["name"] in semantics.SPENT_SINCE[0] and _spent_on_record(ent, entities):
                continue   # what the records of the world come to says it: a figure drawn beside them would not agree
            fits, values = semantics.vocabulary_for(theme, ent.key, col["name"])
            if not fits and col["name"] != ent.module["label"]:
                continue  # a column from another domain (a commuter's frequent-flyer number) is not generated
            own_words = semantics.theme_words(theme, ent.singular, col["name"], ent.key)
            if own_words == [] and col["name"] != ent.module["label"]:
                continue  # the theme says this column is not its trade's (a domain name has no condition)
            if isinstance(own_words, dict):
                # A figure's range the theme states (bags over 30 kg are refused): its data keeps to it.
                if col.get("gen", {}).get("gen") in ("int", "float", "money"):
                    col = {**col, "gen": {**col["gen"], **own_words}}
                own_words = None
            elif col.get("gen", {}).get("gen") == "money":
                # a money figure on the business's own scale (``library/scales.json``)
                scale = semantics.money_scale(theme, ent.key, col["name"])
                if scale is not None:
                    col = {**col, "gen": {**col["gen"], **scale}}
            if col["name"] != ent.module["label"] and col.get("gen", {}).get("gen") == "choice" \
                    and semantics.is_kind_column(ent, col["name"]):
                if own_words is None:
                    continue  # a tea ceremony is no 'boat' or 'wine' tour: without the theme's words, no kinds
                values = own_words
            spec_col = {k: col[k] for k in ("name", "type", "unique", "nullable", "check", "enum", "description") if k in col}
            if spec_col.get("type") not in ("INTEGER", "REAL", "TEXT", "BOOLEAN"):
                spec_col["type"] = "TEXT"
            gen = dict(col["gen"])
            if gen.get("gen") == "faker" and gen.get("provider") in semantics.FOREIGN_FAKER:
                gen = {"gen": "choice", "values": semantics.job_titles(theme, ent, col["name"])}
            if own_words is not None and gen.get("gen") == "choice":
                values = own_words
            if values and gen.get("gen") == "choice":
                gen = {k: v for k, v in gen.items() if k != "weights"}
                gen["values"] = values
                if own_words is not None:
                    gen["theme_words"] = True
                if "enum" in spec_col:
                    spec_col["enum"] = list(values)
            if col.get("unique"):
                gen["unique"] = True
            if gen.get("unique"):
                spec_col["unique"] = True
            cols.append(spec_col)
            ent.gens[col["name"]] = gen
            names.add(col["name"])
        wf_key = ent.module.get("workflow")
        if wf_key and "status" not in names:
            wf = workflows[wf_key]
            ent.workflow = wf
            cols.append({"name": "status", "type": "TEXT", "nullable": False, "enum": wf["states"],
                         "description": lifecycle_text(wf, ent.singular)})
            ent.gens["status"] = {"gen": "choice", "values": wf["states"], "weights": wf["weights"]}
            cols.append({"name": "status_changed_at", "type": "TEXT"})
            ent.gens["status_changed_at"] = {"gen": "datetime", "days": [-90, 0]}
            if any(t.get("reason") for t in wf["transitions"]):
                cols.append({"name": "status_reason", "type": "TEXT"})
                # a record that reached its status through a change that takes a reason has one, of that change
                reasoned = sorted({t["to"] for t in wf["transitions"] if t.get("reason")})
                ent.gens["status_reason"] = {"gen": "when", "column": "status", "in": reasoned,
                                             "then": {"gen": "text", "kind": "reason", "by_status": "status"}}
        ent.columns = cols
        semantics.apply_value_semantics(theme, ent)
        base = int(ent.module.get("rows", 200))
        ent.rows = max(20, min(900, int(base * rng.uniform(0.5, 1.2))))
        # Unique code generators need room; shrink tables whose unique pools are small.
        for gen in ent.gens.values():
            if gen.get("unique") and gen["gen"] == "code":
                room = 10 ** gen["pattern"].count("#") * 26 ** gen["pattern"].count("?")
                ent.rows = min(ent.rows, room // 4 or 1)
            if gen.get("unique") and gen["gen"] in ("choice", "pick"):
                ent.rows = min(ent.rows, len(gen["values"]))
    link_same_parents(entities)
    link_parent_dates(entities)
    link_parent_made(entities)
    link_parent_amounts(entities)
    link_parent_figures(entities)
    link_lines(entities)
    link_passing(entities)
    link_live_parents(entities)
    link_released_parents(entities)
    link_one_at_a_time(entities)
    link_covered_events(entities)
    link_elapsed(entities)
    link_started_parents(entities)
    link_schedule_places(entities)
    link_paid_once(entities)
    for ent in entities:
        for col in [c for c, g in ent.gens.items() if semantics.WEEK_START.search(c) and semantics.date_kind(g) == "date"]:
            ent.gens[col] = {**ent.gens[col], "weekday": semantics.WEEK_STARTS_ON}   # a timesheet's week starts on a Monday
    return entities


def _spent_on_record(ent: Entity, entities: list[Entity]) -> bool:
    """Whether another record of the world points at ``ent`` (its role) and carries money (an order's total, a
    booking's price, a payment): a customer's lifetime spend is then what those come to, which a figure drawn
    beside them contradicts (stop 45's scan: below the sum of the customer's orders in 200 worlds)."""
    return any(other is not ent
               and any(c.get("ref") in ent.roles for c in other.module["columns"])
               and any(c.get("gen", {}).get("gen") == "money" for c in other.module["columns"])
               for other in entities)


def made_columns(ent: Entity) -> list[str]:
    """The dates a record was made or came about (created, placed, observed …) that no status stamps."""
    stamps = set(semantics.status_stamps(list(ent.gens), ent.workflow)) if ent.workflow else set()
    return [c for c, g in ent.gens.items() if semantics.is_made_column(c) and c not in stamps and semantics.date_kind(g)]


def came_about(ent: Entity) -> list[str]:
    """When a record came about, what the records that belong to it come after: its dates of making and the
    status stamps every record holds whatever its status (an estate's ``opened_on``: no filing before it)."""
    return made_columns(ent) + (semantics.making_stamps(list(ent.gens), ent.workflow) if ent.workflow else [])


def _latest_days(gen: dict[str, Any]) -> float:
    """The latest a date generator draws, in days from now (0 where it may reach now or beyond): a date a
    record's status puts in the past stays there (a completed ride departed at least ``gap`` days ago)."""
    kind = gen.get("gen")
    if kind in ("date", "datetime"):
        return min(0, gen.get("days", [-365, 0])[1])
    if kind == "clock":
        inner = _latest_days(gen["inner"])
        # (and a stay that has ended, its longest stay before that)
        return min(inner, -gen.get("gap", 1) - gen.get("longest", 0)) if gen.get("past") else inner
    if kind == "when":
        return _latest_days(gen["then"])
    if kind in ("not_before", "after_parents"):
        return _latest_days(gen["inner"])
    if kind == "recent":
        tops = [w["days"][1] if "days" in w else 0 for w in gen["windows"].values()]
        return max([_latest_days(gen["inner"]), *tops])
    return 0


def worked_columns(ent: Entity) -> list[str]:
    """The dates a record's work took place (its start), where a status says it took place (done, in progress):
    a route driven, a stay checked in."""
    states = set(ent.workflow.get("states", ())) if ent.workflow else set()
    if not states & semantics.WORKED_STATES:
        return []
    made = set(made_columns(ent))
    return [c for c, g in ent.gens.items() if c not in made and semantics.clock_role(c) == "start" and semantics.date_kind(g)]


def link_passing(entities: list[Entity]) -> None:
    """A record in a passing status got there lately (``semantics.passing_windows``): no session in progress
    for weeks, no order processing for months. The window is drawn last, still after the row's making and
    its parents' (the floors ``link_parent_made`` set), and the status change follows it. A session cancelled
    before it began names records made by its start."""
    for ent in entities:
        if not ent.workflow:
            continue
        stamps = semantics.status_stamps(list(ent.gens), ent.workflow)
        dates = [c for c, g in ent.gens.items() if semantics.date_kind(g)]
        made = [c for c in dates if semantics.happens_before_change(c) and "birth" not in c]
        passing = semantics.passing_windows(list(ent.gens), dates, ent.workflow, stamps)
        for col, windows in passing.items():
            gen = ent.gens[col]
            after = [c for c in made if c != col and col not in semantics.reads(ent.gens, c)] \
                if semantics.clock_role(col) == "start" else []
            parents = gen.get("parents") if gen.get("gen") == "after_parents" else None
            ent.gens[col] = semantics.wrap(gen, gen="recent", column="status", windows=windows,
                                           kind=semantics.date_kind(gen), **({"after": after} if after else {}),
                                           **({"parents": parents} if parents else {}))
        changed = ent.gens.get("status_changed_at", {})
        for col, windows in passing.items():
            for state, window in windows.items() if changed.get("gen") == "changed" else ():
                if "minutes" in window:
                    # a session in progress got there when it began (a business rule's window stays)
                    changed.setdefault("windows", {}).setdefault(state, {"after": col, "days": 1})
        if changed.get("windows") and changed.get("gen") == "changed":
            changed["windows"] = semantics.timed_windows(changed["windows"], ent.gens)
        for window in (changed.get("windows") or {}).values() if changed.get("gen") == "changed" else ():
            if "before" not in window:
                continue
            # cancelled before it began: the records it belongs to were made by then
            for parent in changed.get("parents", ()):
                semantics.made_by_date(ent.gens, parent["via"], window["before"])
        ent.gens = semantics.dependency_order(ent.gens)


def _both_made_by(have: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """One ``made_by`` holding a key's own making and its record's owner's (``through``): a membership's member
    joined by the day it started, and so had the club it names through that member opened."""
    if not have:
        return new
    through, plain = (new, have) if "through" in new else (have, new)
    if "through" not in through or "through" in plain:
        return new   # two owners' makings: the later-set one holds, as before
    return {**through, "own": sorted({*through.get("own", ()), *plain["fields"]}),
            "days": min(have["days"], new["days"]),
            **({"by": sorted({*have.get("by", ()), *new.get("by", ())})} if have.get("by") or new.get("by") else {})}


def link_parent_made(entities: list[Entity]) -> None:
    """What a record was made or what happened to it comes no earlier than the making of the records it
    belongs to: no text to a lead before the lead was created, no payment before its invoice was issued.

    Each such date is floored at its parents' making (``after_parents``), never past the latest its own
    generator draws; the parent is drawn among those made by then (``made_by``), so the floor always fits."""
    by_table = {e.table: e for e in entities}
    for ent in entities:
        parents = []
        for fk, parent in ent.refs.items():
            pent = by_table.get(parent)
            gen = ent.gens.get(fk, {})
            if gen.get("gen") == "when":
                gen = gen["then"]   # a winner, only once the game is over
            if pent is None or parent == ent.table or gen.get("gen") not in ("ref", "lookup"):
                continue
            parents += [(fk, {"via": fk, "table": parent, "field": made}) for made in came_about(pent)]
            done, _ = semantics.completion_states(parent, pent.workflow, ent.table)
            if done and gen.get("gen") == "ref" and "status_changed_at" in pent.gens:
                # and no earlier than it completed, where its last change is when (no refund before its charge was
                # captured, no return requested before its order was delivered)
                parents.append((fk, {"via": fk, "table": parent, "field": "status_changed_at", "in": done}))
        if not parents:
            continue
        cutoff: dict[str, float] = {}
        by: dict[str, list[str]] = {}
        for col, gen in list(ent.gens.items()):
            # (a status's stamp read off the status change follows the change, floored below)
            if not semantics.date_kind(gen) or not semantics.follows_parent(col) \
                    or gen.get("gen") in ("not_before", "by") or "status_changed_at" in semantics.reads(ent.gens, col):
                continue
            # never a loop: a date is floored through a key only where that key is not drawn from it
            own = [(fk, p) for fk, p in parents if fk not in semantics.reads(ent.gens, col) and col not in semantics.reads(ent.gens, fk)]
            for fk in {fk for fk, _ in parents if col in semantics.reads(ent.gens, fk) and fk not in semantics.reads(ent.gens, col)}:
                # the key is drawn from this date (an invoice's shipment by its due date): it names a record
                # made by this date instead
                by.setdefault(fk, []).append(col)
                cutoff.setdefault(fk, 0)
            if not own:
                continue
            latest = _latest_days(gen)
            ent.gens[col] = semantics.wrap(gen, gen="after_parents", parents=[p for _, p in own],
                                           kind=semantics.date_kind(gen), latest=latest)
            for fk, _ in own:
                cutoff[fk] = min(cutoff.get(fk, 0), latest)
        status = ent.gens.get("status_changed_at", {})
        own_status = [(fk, p) for fk, p in parents if "status_changed_at" not in semantics.reads(ent.gens, fk)]
        if status.get("gen") == "changed" and own_status:
            ent.gens["status_changed_at"] = {**status, "parents": [p for _, p in own_status]}
            for fk, _ in own_status:
                cutoff.setdefault(fk, 0)
        for col in semantics.making_stamps(list(ent.gens), ent.workflow) if ent.workflow else ():
            # an alert triggered before it was resolved was still triggered after its device was installed
            own = [p for fk, p in parents if col not in semantics.reads(ent.gens, fk)]   # the key drawn first
            if own:
                ent.gens[col] = _before_change(ent.gens[col], "parents", own)
        for fk, days in cutoff.items():
            gen = ent.gens[fk]
            only = {p["field"]: p["in"] for k, p in parents if k == fk and p.get("in")}
            made_by = {"fields": [p["field"] for k, p in parents if k == fk], "days": days,
                       **({"by": by[fk]} if fk in by else {}), **({"in": only} if only else {})}
            if gen.get("gen") == "when":
                ent.gens[fk] = {**gen, "then": {**gen["then"], "made_by": made_by}}
            elif gen.get("gen") == "ref":
                ent.gens[fk] = {**gen, "made_by": _both_made_by(gen.get("made_by"), made_by)}
            elif gen.get("gen") == "lookup" and ent.gens.get(gen["via"], {}).get("gen") == "ref":
                # the owner copied from another record (a payment's buyer, its offer's): that record is drawn
                # among those whose owner was made by then (and, where it has its own making, made by then too)
                via = ent.gens[gen["via"]]
                ent.gens[gen["via"]] = {**via, "made_by": _both_made_by(via.get("made_by"), {
                    **made_by, "through": {"field": gen["field"], "table": ent.refs[fk]}})}
                if gen.get("else", {}).get("gen") == "ref":
                    ent.gens[fk] = {**gen, "else": {**gen["else"], "made_by": made_by}}
        ent.gens = semantics.dependency_order(ent.gens)


def _alive(ent: Entity, key: str, update: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Set ``alive_after`` (``update`` of what it holds) on the reference that draws ``key``: the key's own, or
    the one a copied key falls back on where the record it is copied from names none."""
    gen = ent.gens.get(key, {})
    if gen.get("gen") == "ref":
        ent.gens[key] = {**gen, "alive_after": update(gen.get("alive_after", {"parents": [], "in": []}))}
    elif gen.get("gen") == "lookup" and gen.get("else", {}).get("gen") == "ref":
        fallback = gen["else"]
        ent.gens[key] = {**gen, "else": {**fallback, "alive_after": update(fallback.get("alive_after", {"parents": [], "in": []}))}}


def link_started_parents(entities: list[Entity]) -> None:
    """Work done under a record took place once it had started: a row whose status says its work took place
    (in progress, done, attended, shipped) points at a parent that is no longer waiting to start (no done task
    under a project still in its backlog, no attended booking of a class still scheduled)."""
    by_table = {e.table: e for e in entities}
    for ent in entities:
        if "status" not in ent.gens or not ent.workflow:
            continue
        worked = sorted(set(ent.workflow.get("states", ())) & semantics.WORKED_STATES - {"paid"})
        if not worked:
            continue
        for fk, parent in ent.refs.items():
            pent = by_table.get(parent)
            gen = ent.gens.get(fk, {})
            if pent is None or parent == ent.table or not pent.workflow or "status" not in pent.gens \
                    or gen.get("gen") != "ref" or fk in semantics.reads(ent.gens, "status"):
                continue
            waiting = sorted(set(pent.workflow.get("states", ())) & semantics.UNSTARTED_STATES)
            if waiting:
                ent.gens[fk] = {**gen, "started_parent": {"column": "status", "in": worked, "parent_not_in": waiting}}
        ent.gens = semantics.dependency_order(ent.gens)   # the status is drawn before the keys that read it


def link_live_parents(entities: list[Entity]) -> None:
    """Nothing open sits under a shut record, and nothing was made under it after it was shut: no crossing
    still scheduled on a vehicle taken out of service, no order placed with a supplier after it went
    inactive (``semantics.shut_states``). A record still open (``semantics.open_states``) points at a parent
    not shut (:func:`_open_under_live`); its dates of making come no later than the day a shut parent was
    shut (:func:`_made_before_shut`)."""
    by_table = {e.table: e for e in entities}
    for ent in entities:
        shut_parents, down_parents, ended_parents = [], [], []
        for fk, parent in ent.refs.items():
            pent = by_table.get(parent)
            if pent is None or parent == ent.table or "status" not in pent.gens or "status_changed_at" not in pent.gens \
                    or ent.gens.get(fk, {}).get("gen") not in ("ref", "lookup"):
                continue
            _, ended = semantics.completion_states(parent, pent.workflow, ent.table)
            if ended:
                # a follower was made before its record's story ended, and is no longer open: no return requested
                # after its order was returned, none still under review on an order returned
                ended_parents.append({"via": fk, "table": parent, "field": "status_changed_at", "in": ended})
                if "status" in ent.gens and semantics.open_states(ent.workflow):
                    _open_under_live(ent, fk, parent, ended, sorted(semantics.open_states(ent.workflow)))
            shut = sorted(semantics.shut_states(pent.workflow))
            down = sorted(semantics.down_states(pent.workflow))
            worked = sorted(set((ent.workflow or {}).get("states", ())) & semantics.WORKED_STATES
                            - semantics.open_states(ent.workflow))
            if down and worked and "status" in ent.gens:
                # down for now: the rows whose work is over (not those ahead or under way) took place before
                down_parents.append({"via": fk, "table": parent, "field": "status_changed_at", "in": down,
                                     "rows_in": {"column": "status", "in": worked}})
            if not shut:
                continue
            if "status" in ent.gens and semantics.open_states(ent.workflow):
                _open_under_live(ent, fk, parent, shut, sorted(semantics.open_states(ent.workflow)))
            shut_parents.append({"via": fk, "table": parent, "field": "status_changed_at", "in": shut})
        closing = _closing_parents(ent, by_table)
        for col in made_columns(ent):
            _sent_after_opening(ent, col, by_table)
        for col in made_columns(ent) if shut_parents or closing or ended_parents else ():
            _made_before_shut(ent, col, shut_parents + closing + ended_parents)
        for col in worked_columns(ent) if shut_parents or down_parents else ():
            # nor did its work take place there afterwards: no route driven on a vehicle retired weeks before, no
            # shift run on a beamline offline since last year (alerts under it are right: they are not work)
            _made_before_shut(ent, col, shut_parents + down_parents)
        for col in semantics.making_stamps(list(ent.gens), ent.workflow) if shut_parents and ent.workflow else ():
            # nor did it come about there afterwards: no alarm triggered on a panel retired a year before
            if "status_changed_at" not in semantics.reads(ent.gens, col):
                _made_before_shut(ent, col, shut_parents)   # drawn on its own (applied, then screened)
                continue
            until = [p for p in shut_parents if col not in semantics.reads(ent.gens, p["via"])]
            if until:
                ent.gens[col] = _before_change(ent.gens[col], "until", until)
        ent.gens = semantics.dependency_order(ent.gens)


def link_released_parents(entities: list[Entity]) -> None:
    """Nothing takes up what was never put out: a bid, a review, a booking or a payment (``semantics.takes_up``)
    points at a record that has left its draft (``semantics.unreleased_states``): no bids on a draft lot, no
    payments of a draft invoice, no reviews of an unpublished listing (world audit 88 found 359 of 803 reviews on
    listings never published). Nor does anything follow what never completed (``semantics.uncompleted_states``):
    no refund of a charge never captured, no return of an order not delivered, no repayment of a loan still under
    review or denied. The reference is drawn among the records out and completed (``live_parent``)."""
    by_table = {e.table: e for e in entities}
    for ent in entities:
        for fk, parent in ent.refs.items():
            pent = by_table.get(parent)
            if pent is None or parent == ent.table or "status" not in pent.gens:
                continue
            unreleased = sorted(set(semantics.unreleased_states(pent.workflow, ent.table)
                                    if semantics.takes_up(ent.table) else ())
                                | set(semantics.uncompleted_states(parent, pent.workflow, ent.table)))
            gen = ent.gens.get(fk, {})
            if not unreleased:
                continue
            if gen.get("gen") == "ref":
                ent.gens[fk] = {**gen, "live_parent": {"parent_not_in": unreleased}}
            elif gen.get("gen") == "lookup" and gen.get("else", {}).get("gen") == "ref":
                ent.gens[fk] = {**gen, "else": {**gen["else"], "live_parent": {"parent_not_in": unreleased}}}


def link_paid_once(entities: list[Entity]) -> None:
    """A record paid for once has one payment through: a trade-in is paid out once, an obituary notice paid for
    once (``semantics.paid_once``). Its key holds a quota of one payment through per record (a business rule's
    own quota on that key, set later, stands instead)."""
    by_table = {e.table: e for e in entities}
    for ent in entities:
        pays_whole = any(semantics.is_whole(by_table[p].gens) for p in ent.refs.values() if p in by_table and p != ent.table)
        if "status" not in ent.gens or pays_whole:
            continue
        for fk, parent in ent.refs.items():
            pent = by_table.get(parent)
            gen = ent.gens.get(fk, {})
            if pent is None or parent == ent.table or gen.get("gen") != "ref" or "quota" in gen \
                    or fk in semantics.reads(ent.gens, "status"):
                continue
            done = semantics.paid_once(ent.table, ent.workflow, parent, pent.gens, bool(set(pent.roles) & OWNER_ROLES))
            if done:
                ent.gens[fk] = {**gen, "quota": {"column": "status", "in": done, "cap": 1},
                                "nullable": bool((ent.column(fk) or {}).get("nullable", True))}
                ent.gens = semantics.dependency_order(ent.gens)


def link_schedule_places(entities: list[Entity]) -> None:
    """An instalment's number is a place in its loan's schedule: at most the loan's term, and no two instalments of
    one loan share it (``semantics.schedule_length``; world audit 94 found 778 of 900 instalments numbered past
    their loan's term). The key goes to a record with room left in its schedule (``room``), and the number is drawn
    from that record's own length (``ordinal``) once the key is drawn."""
    by_table = {e.table: e for e in entities}
    for ent in entities:
        for col, gen in list(ent.gens.items()):
            for fk, parent in ent.refs.items():
                pent = by_table.get(parent)
                length = semantics.schedule_length(col, pent.gens) if pent is not None and parent != ent.table else None
                if length and gen.get("gen") == "int" and ent.gens.get(fk, {}).get("gen") == "ref":
                    ent.gens[col] = {"gen": "ordinal", "via": fk, "table": parent, "field": length,
                                     "nullable": bool((ent.column(col) or {}).get("nullable", True))}
                    ent.gens[fk] = {**ent.gens[fk], "room": {"field": length}}
                    ent.rows = min(ent.rows, max(20, pent.rows))   # schedules with room for every row
                    if semantics.amortized(ent.gens, pent.gens):
                        # its payment is the loan's, split by what is left after the instalments before it
                        for part in semantics.PORTIONS:
                            ent.gens[part] = {"gen": "amortized", "via": fk, "table": parent, "number": col,
                                              "part": part, "inner": ent.gens[part]}
                    break
        ent.gens = semantics.dependency_order(ent.gens)


def link_one_at_a_time(entities: list[Entity]) -> None:
    """A person, a room or a beamline holds one timed event at a time: no therapist in two sessions at once, no
    meeting room booked twice over (``semantics.one_at_a_time``; 1,647 overlapping pairs in 108 of 931 worlds).
    ``datagen.one_at_a_time`` moves an event that would overlap another of the same record (its time drawn
    again), or gives it another record, once the table is drawn; events called off hold no time."""
    for ent in entities:
        dates = [c for c, g in ent.gens.items() if semantics.date_kind(g)]
        dead = sorted(semantics.CALLED_OFF & set((ent.workflow or {}).get("states", ()))) if "status" in ent.gens else []
        for fk, parent in ent.refs.items():
            gen = ent.gens.get(fk, {})
            drawn = gen.get("gen") in ("ref", "lookup") or gen.get("gen") == "when" and gen["then"].get("gen") == "ref"
            plan = semantics.one_at_a_time(ent.table, parent, ent.gens, dates) if drawn else None
            if plan and plan["start"] not in semantics.reads(ent.gens, fk):
                ent.gens[fk] = {**gen, "one_at_a_time": {**plan, "column": "status", "dead": dead}}


def link_covered_events(entities: list[Entity]) -> None:
    """What happens under a record's cover or during its run happens within its term: a claim's incident between
    its policy's effective and expiration dates, a conversion while its campaign ran (``semantics.covered_event``,
    ``semantics.term_of``). The date is floored at the term's start (``parents``) and capped at its end (``until``,
    whatever the record's status); the record is drawn among those whose term had begun by then (``made_by``)."""
    by_table = {e.table: e for e in entities}
    for ent in entities:
        for fk, parent in ent.refs.items():
            pent = by_table.get(parent)
            if pent is None or parent == ent.table or ent.gens.get(fk, {}).get("gen") != "ref":
                continue
            term = semantics.term_of(c for c, g in pent.gens.items() if semantics.date_kind(g))
            if term is None:
                continue
            for col in [c for c, g in ent.gens.items() if semantics.covered_event(c) and semantics.date_kind(g)]:
                if col in semantics.reads(ent.gens, fk):
                    continue   # never a loop: the key is drawn before the date that reads it
                start = {"via": fk, "table": parent, "field": term[0]}
                ent.gens[col] = _within_term(ent.gens[col], start, {"via": fk, "table": parent, "field": term[1], "in": []})
                _begun_by(ent, fk, term[0], _latest_days(ent.gens[col]))
                recent = ent.gens[col] if ent.gens[col].get("gen") == "recent" else None
                if recent and recent.get("column") in ent.gens and fk not in semantics.reads(ent.gens, recent["column"]):
                    # a status whose date lies in its last days (a claim under review) is under a term not ended before them
                    windows = {st: w["days"][0] for st, w in recent["windows"].items() if "days" in w}
                    if windows:
                        ent.gens[fk] = {**ent.gens[fk], "in_term": {"end": term[1], "column": recent["column"], "windows": windows}}
        ent.gens = semantics.dependency_order(ent.gens)


def link_elapsed(entities: list[Entity]) -> None:
    """A record's time to something (a review's hours to review) is the time from the making of what it is about (its
    pull request, never a person) to its own making (its submission), not a figure drawn beside them."""
    by_table = {e.table: e for e in entities}
    for ent in entities:
        own = made_columns(ent)
        for col in [c for c in ent.gens if semantics.elapsed_unit(c)] if own else ():
            for fk, parent in ent.refs.items():
                pent = by_table.get(parent)
                if pent is None or parent == ent.table or set(pent.roles) & OWNER_ROLES or not came_about(pent) \
                        or col in semantics.reads(ent.gens, fk) or col in semantics.reads(ent.gens, own[0]):
                    continue
                ent.gens[col] = {"gen": "elapsed", "of": own[0], "via": fk, "table": parent, "field": came_about(pent)[0],
                                 "unit": semantics.elapsed_unit(col), "decimals": 1,
                                 "default": {k: v for k, v in ent.gens[col].items() if k != "null_p"},
                                 **({"null_p": ent.gens[col]["null_p"]} if "null_p" in ent.gens[col] else {})}
                break
        ent.gens = semantics.dependency_order(ent.gens)


def _begun_by(ent: Entity, fk: str, field: str, days: float) -> None:
    """The reference ``fk`` names a record whose ``field`` (its term's start, its opening day) had come by ``days``
    from today, beside what its ``made_by`` already asks (the later of the dates, the earlier of the days)."""
    have = ent.gens[fk].get("made_by")
    if have and "through" not in have:
        made_by = {**have, "fields": sorted({*have["fields"], field}), "days": min(have["days"], days)}
    else:
        made_by = _both_made_by(have, {"fields": [field], "days": days})
    ent.gens[fk] = {**ent.gens[fk], "made_by": made_by}


def _within_term(gen: dict[str, Any], start: dict[str, Any], end: dict[str, Any] | None) -> dict[str, Any]:
    """``gen`` floored at ``start`` and capped at ``end`` where given (a passing status's window too, where it has
    one)."""
    top = gen if gen.get("gen") == "recent" else None
    inner = top["inner"] if top else gen
    if inner.get("gen") != "after_parents":
        inner = semantics.wrap(inner, gen="after_parents", parents=[], kind=semantics.date_kind(inner),
                               latest=_latest_days(inner))
    caps = [end] if end else []
    inner = {**inner, "parents": [*inner.get("parents", ()), start], "until": [*inner.get("until", ()), *caps]}
    if top:
        return {**top, "inner": inner, "parents": [*top.get("parents", ()), start], "until": [*top.get("until", ()), *caps]}
    return inner


def _sent_after_opening(ent: Entity, col: str, by_table: dict[str, Entity]) -> None:
    """What is sent in to a record (a survey's responses, a poll's votes) is made no earlier than the day it opened
    (``semantics.opening_column``): floored there, the record drawn among those open by then (``made_by``)."""
    if not semantics.is_sent_in(ent.table):
        return
    for fk, parent in ent.refs.items():
        pent = by_table.get(parent)
        if pent is None or parent == ent.table or ent.gens.get(fk, {}).get("gen") != "ref" \
                or col in semantics.reads(ent.gens, fk):
            continue
        opens = semantics.opening_column([c for c, g in pent.gens.items() if semantics.date_kind(g)])
        if opens is None:
            continue
        ent.gens[col] = _within_term(ent.gens[col], {"via": fk, "table": parent, "field": opens}, None)
        _begun_by(ent, fk, opens, _latest_days(ent.gens[col]))
    ent.gens = semantics.dependency_order(ent.gens)


def _closing_parents(ent: Entity, by_table: dict[str, Entity]) -> list[dict[str, Any]]:
    """The parents a record sent in is capped by (``until``, whatever their status): no survey response
    submitted after its survey closed, no bid after its auction's cut-off."""
    if not semantics.is_sent_in(ent.table):
        return []
    out = []
    for fk, parent in ent.refs.items():
        pent = by_table.get(parent)
        if pent is None or parent == ent.table:
            continue
        col = semantics.closing_column([c for c, g in pent.gens.items() if semantics.date_kind(g)])
        if col is not None:
            out.append({"via": fk, "table": parent, "field": col, "in": []})
    return out


def _before_change(gen: dict[str, Any], key: str, parents: list[dict[str, Any]]) -> dict[str, Any]:
    """``gen`` with ``key`` (``parents`` or ``until``) set on the date it draws before the status change (a
    status stamp reached on the way, ``after`` the change by a negative span); the stamp read off the change
    itself follows the change, which keeps to the parents through its own generator."""
    if gen.get("gen") == "after" and gen.get("of") == "status_changed_at":
        return {**gen, key: parents}
    out = dict(gen)
    for k in ("then", "default", "inner", "else"):
        if isinstance(gen.get(k), dict):
            out[k] = _before_change(gen[k], key, parents)
    if isinstance(gen.get("cases"), dict):
        out["cases"] = {s: _before_change(g, key, parents) for s, g in gen["cases"].items()}
    return out


def _open_parent(have: dict[str, Any] | None, opened: list[str], shut: list[str]) -> dict[str, Any]:
    """An ``open_parent`` holding ``have``'s (a duty's) and this one: the stricter of the two, so both hold."""
    have = have or {"in": [], "parent_not_in": []}
    return {"column": "status", "in": sorted({*have["in"], *opened}), "parent_not_in": sorted({*have["parent_not_in"], *shut})}


def _open_under_live(ent: Entity, fk: str, parent: str, shut: list[str], opened: list[str]) -> None:
    """A row in an ``opened`` status points (through ``fk``) at a ``parent`` not in a ``shut`` status."""
    gen = ent.gens[fk]
    if gen["gen"] == "ref" and fk not in semantics.reads(ent.gens, "status"):
        ent.gens[fk] = {**gen, "open_parent": _open_parent(gen.get("open_parent"), opened, shut)}
    elif gen["gen"] == "lookup" and ent.gens.get(gen["via"], {}).get("gen") == "ref" \
            and gen["via"] not in semantics.reads(ent.gens, "status"):
        # the key copied from another record (a request's designer, its app's): that record is drawn among
        # those whose own key names a parent not shut, and the key drawn itself where that record names none
        via = ent.gens[gen["via"]]
        ent.gens[gen["via"]] = {**via, "open_through": [*via.get("open_through", ()), {
            "column": "status", "in": opened, "parent_not_in": shut, "table": parent, "field": gen["field"]}]}
        fallback = gen.get("else", {})
        if fallback.get("gen") == "ref":
            ent.gens[fk] = {**gen, "else": {**fallback, "open_parent": _open_parent(fallback.get("open_parent"), opened, shut)}}


def _made_before_shut(ent: Entity, col: str, shut_parents: list[dict[str, Any]]) -> None:
    """The date ``col`` a record was made comes no later than the day each of its ``shut_parents`` was shut (where
    it is): capped there (``until``), with the records it points at drawn so that the cap leaves room."""
    for p in shut_parents:
        if col in semantics.reads(ent.gens, p["via"]):
            # the key is drawn after this date (and from it): a record not shut before it
            _alive(ent, p["via"], lambda have, p=p: {**have, "in": sorted({*have["in"], *p["in"]}),
                                                     "by": sorted({*have.get("by", ()), col})})
    until = [p for p in shut_parents if col not in semantics.reads(ent.gens, p["via"])]
    if not until:
        return
    gen = ent.gens[col]
    top = gen if gen.get("gen") == "recent" else None   # a passing status's window: capped there too
    gen = top["inner"] if top else gen
    if gen.get("gen") != "after_parents":
        gen = semantics.wrap(gen, gen="after_parents", parents=[], kind=semantics.date_kind(gen), latest=_latest_days(gen))
    gen = {**gen, "until": until}
    ent.gens[col] = {**top, "inner": gen, "until": until} if top else gen
    for u in until:
        # the shut record is drawn among those not shut before the row's other records were made (a courier
        # who had not left before the customer signed up): the date then fits between them
        others = [p for p in gen.get("parents", ()) if p["via"] != u["via"] and u["via"] not in semantics.reads(ent.gens, p["via"])]
        if others:
            _alive(ent, u["via"], lambda have, o=others, u=u: {
                **have, "parents": have["parents"] + [p for p in o if p not in have["parents"]],
                "in": sorted({*have["in"], *u["in"]}), **({} if u["in"] else {"closes": u["field"]})})
    for p in [p for p in gen.get("parents", ()) if not p.get("in")]:
        # and a record whose making floors the date is drawn among those made by the day the row's other records
        # were shut (an approval requested before its page was archived; not a completion, which only some hold)
        first = [u for u in until if u["via"] != p["via"] and p["via"] not in semantics.reads(ent.gens, u["via"])]
        if first:
            _alive(ent, p["via"], lambda have, p=p, s=first: {**have, "made": p["field"], "before_shut": [
                *have.get("before_shut", ()), *(u for u in s if u not in have.get("before_shut", ()))]})


def _keyed_parents(ent: Entity, by_table: dict[str, Entity]) -> list[tuple[str, Entity]]:
    """``(key, parent)`` for each key of ``ent`` to another table's record that its generator draws (``ref``) or
    copies from another record (``lookup``): the records whose figures and dates a row may follow."""
    out = []
    for fk, parent in ent.refs.items():
        pent = by_table.get(parent)
        if pent is not None and parent != ent.table and ent.gens.get(fk, {}).get("gen") in ("ref", "lookup"):
            out.append((fk, pent))
    return out


def link_parent_amounts(entities: list[Entity]) -> None:
    """The payments of an invoice (the refunds of a payment) pay part of it: together they never come to more
    than its whole (``semantics.part_of_whole``; ``datagen.fit_parts`` scales them once drawn, so no other
    column of the row may read the part)."""
    by_table = {e.table: e for e in entities}
    for ent in entities:
        for fk, pent in _keyed_parents(ent, by_table):
            parent = pent.table
            pair = semantics.part_of_whole(ent.table, ent.gens, pent.gens)
            if pair is None:
                continue
            part, whole = pair
            read = any(part in semantics.sources(g) and not datagen.refigured(g, part) for g in ent.gens.values())
            if (ent.column(part) or {}).get("type") != "REAL" or (pent.column(whole) or {}).get("type") != "REAL" \
                    or part in semantics.reads(ent.gens, fk) or read:
                continue
            ent.gens[part] = semantics.wrap(ent.gens[part], gen="part_of", via=fk, table=parent, field=whole)
            plan = semantics.settle_plan(ent.workflow.get("states", ()), pent.workflow.get("states", ()), pent.gens) \
                if ent.workflow and pent.workflow and "status" in ent.gens and "status" in pent.gens else None
            if plan:
                ent.gens[part] = {**ent.gens[part], "settle": plan}
            ent.gens = semantics.dependency_order(ent.gens)
            break


#: Generators a figure may be drawn with and still take over its parent's (not a sum, a share or a status's part).
_DRAWN = frozenset({"money", "float", "int"})


def _unwrapped(gen: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """A figure's drawn generator under its same-row caps and its bounds by the records it points at (``within``,
    ``part_of``), and the keys of those records."""
    keys: set[str] = set()
    while gen.get("gen") in ("at_most", "at_least", "within", "part_of") and "inner" in gen:
        keys |= {gen["via"]} if "via" in gen else set()
        gen = gen["inner"]
    return gen, keys


def link_parent_figures(entities: list[Entity]) -> None:
    """A figure that is the figure of the record it points at takes it over (a rental's daily rate, an
    appointment's fee, an invoice's total); pieces weigh no more than their whole together; a claim on a
    payment is about no more than it, and a total for what a record points at costs at least one of it
    (``semantics.figure_link``). Only figures drawn free are linked; pieces only where no other column reads
    them (``datagen.fit_parts`` scales them once the table is drawn)."""
    by_table = {e.table: e for e in entities}
    for ent in entities:
        linked = False
        for fk, pent in _keyed_parents(ent, by_table):
            parent = pent.table
            for col in list(ent.gens):
                kind_type = (ent.column(col) or {}).get("type")
                drawn, bound = _unwrapped(ent.gens[col])
                if kind_type not in ("REAL", "INTEGER") or drawn.get("gen") not in _DRAWN or fk in bound:
                    continue
                read = any(col in semantics.sources(g) and not datagen.refigured(g, col) for g in ent.gens.values())
                for pcol in [c["name"] for c in pent.columns if c["name"] in pent.gens]:
                    link = semantics.figure_link(ent.table, col, parent, pcol, ent.gens, pent.gens)
                    if link is None or (pent.column(pcol) or {}).get("type") != kind_type or link == "part" and read:
                        continue
                    old = ent.gens[col]
                    if link == "copy":
                        ent.gens[col] = {"gen": "lookup", "via": fk, "table": parent, "field": pcol, "else": old}
                    elif link == "part":
                        ent.gens[col] = semantics.wrap(old, gen="part_of", via=fk, table=parent, field=pcol)
                    else:
                        ent.gens[col] = semantics.wrap(old, gen="within", via=fk, table=parent, field=pcol,
                                                       side="max" if link == "at_most" else "min")
                    linked = True
                    break
        if linked:
            ent.gens = semantics.dependency_order(ent.gens)


def link_lines(entities: list[Entity]) -> None:
    """The subtotal of a record with lines (an order's items, an invoice's lines) is the sum of what its
    lines come to, and a pay run's totals the sums over its payslips (``semantics.sums_of``): a ``rollup`` that
    ``datagen`` works out once the lines are drawn, redrawing what the record computes from it (its tax, its
    total, what is paid of it). Where the lines' key is free, every record gets at least one line."""
    by_table = {e.table: e for e in entities}
    for ent in entities:
        for fk, pent in _keyed_parents(ent, by_table):
            got = [(whole, figures) for whole, figures in semantics.sums_of(ent.table, ent.gens, pent.gens)
                   if pent.gens[whole].get("gen") in _DRAWN]
            if not got:
                continue
            if set(ent.gens[fk]) <= {"gen", "ref", "null_p"} and ent.gens[fk]["gen"] == "ref":
                # each record has a line: enough lines to go round, dealt first one per record
                ent.gens[fk] = {**ent.gens[fk], "cover": True}
                ent.rows = max(ent.rows, min(900, pent.rows * 3 // 2))
            for whole, figures in got:
                pent.gens[whole] = semantics.wrap(pent.gens[whole], gen="rollup", table=ent.table, key=fk,
                                                  figures=list(figures))
            break
        for fk, pent in _keyed_parents(ent, by_table):
            # a chat's message count is how many of its messages there are
            count = semantics.count_of(ent.table, pent.gens)
            if not count or (pent.column(count) or {}).get("type") != "INTEGER" or pent.gens[count].get("gen") not in _DRAWN:
                continue
            if set(ent.gens[fk]) <= {"gen", "ref", "null_p"} and ent.gens[fk]["gen"] == "ref":
                # none has none (a chat counts its messages from one), and each of them belongs to one
                ent.gens[fk] = {"gen": "ref", "ref": ent.gens[fk]["ref"], "cover": True}
                ent.rows = max(ent.rows, min(900, pent.rows * 3 // 2))
            else:
                pent.column(count)["check"] = f"{count} >= 0"   # records drawn apart: one may have none yet
            pent.gens[count] = semantics.wrap(pent.gens[count], gen="rollup", table=ent.table, key=fk, figures=[], count=True)


def link_parent_dates(entities: list[Entity]) -> None:
    """A record's due dates do not come before the start of the record it belongs to: no rent is due
    before its lease starts, no premium before its policy takes effect."""
    by_table = {e.table: e for e in entities}

    def starts_of(parent: str) -> list[str]:
        return [c for c, g in by_table[parent].gens.items()
                if semantics.clock_role(c) == "start" and semantics.date_rank(c) == 1 and semantics.date_kind(g)]

    for ent in entities:
        changed = False
        for fk, parent in ent.refs.items():
            starts = starts_of(parent)
            if not starts or ent.gens.get(fk, {}).get("gen") not in ("ref", "lookup"):
                continue
            # never a loop: a due date is floored through a key only where that key is not drawn from it
            dues = [c for c, g in ent.gens.items() if semantics.clock_role(c) == "due" and semantics.date_kind(g)
                    and fk not in semantics.reads(ent.gens, c) and c not in semantics.reads(ent.gens, fk)]
            # a key another dated parent is looked up through (a rent payment's resident, through its lease)
            # is drawn first, so the due date can follow both parents
            read_through = any(fk in semantics.sources(g) and c in ent.refs and starts_of(ent.refs[c])
                               for c, g in ent.gens.items() if c != fk)
            chosen = [c for c in dues if ent.gens[c].get("gen") != "not_before"]
            if chosen and not read_through and ent.gens[fk].get("gen") == "ref" \
                    and not {"quota", "same", "not_after"} & set(ent.gens[fk]):
                # The record is drawn among those already started by its due date, which keeps the due date's
                # side of today (an overdue payment belongs to a lease that has started).
                ent.gens[fk] = {**ent.gens[fk], "not_after": {"column": chosen[0], "field": starts[0]}}
                changed = True
                continue
            for col in dues:
                gen = ent.gens[col]
                ent.gens[col] = semantics.wrap(gen, gen="not_before", via=fk, table=parent, field=starts[0],
                                               kind=semantics.date_kind(gen))
                changed = True
        if changed:
            ent.gens = semantics.dependency_order(ent.gens)


#: Roles of records that own others: a row that names one of them and one of its records names its own.
OWNER_ROLES = frozenset({"person", "organization", "account"})


def same_key_links(refs: dict[str, str], fks: dict[str, dict[str, str]], owned: Callable[[str], bool]
                   ) -> list[tuple[str, str, str, str]]:
    """``(a_col, b_col, target, via)``: a row's key ``a_col`` to a record that is no owner, which the one other
    record it points at (``b_col``, of ``target``) names under the same name (``via == a_col``): both name the
    same one (a quality inspection's product is its production run's). ``refs``: the row's keys and their
    tables; ``fks``: every table's keys. Left out where two records of the row name it (a fixture's home and
    away sides) or where ``a_col``'s record gives an owner key of the row (the owner's link reads it)."""
    out = []
    for a_col, parent in refs.items():
        if owned(parent):
            continue
        links = [(b_col, target) for b_col, target in refs.items() if b_col != a_col
                 and [v for v, t in fks.get(target, {}).items() if t == parent] == [a_col]]
        feeds_owner = any(owned(o) and c != a_col and any(t == o for t in fks.get(parent, {}).values())
                          for c, o in refs.items())
        if len(links) == 1 and not feeds_owner:
            out.append((a_col, links[0][0], links[0][1], a_col))
    return out


def link_same_parents(entities: list[Entity]) -> None:
    """A row that points at an owner A and at a record B of A's points at one of *A's* records: a card
    payment of a bidder pays that bidder's order, a claim's renter is its policy's renter.

    The owner key is copied from the first such record (``lookup``); any further key to another record
    of A's is drawn among that owner's records (``same``). Keys to other records follow :func:`same_key_links`."""
    by_table = {e.table: e for e in entities}
    fks = {e.table: e.refs for e in entities}

    def owned(table: str) -> bool:
        return table in by_table and bool(set(by_table[table].roles) & OWNER_ROLES)

    for ent in entities:
        for a_col, owner in list(ent.refs.items()):
            if not owned(owner):
                continue
            links = []
            for b_col, target in ent.refs.items():
                vias = [v for v, t in by_table[target].refs.items() if t == owner] if b_col != a_col else []
                if len(vias) == 1 and ent.gens.get(b_col, {}).get("gen") == "ref":
                    links.append((b_col, target, vias[0]))
            if not links or ent.gens.get(a_col, {}).get("gen") != "ref":
                continue
            (b_col, target, via), rest = links[0], links[1:]
            ent.gens[a_col] = {"gen": "lookup", "via": b_col, "table": target, "field": via, "else": ent.gens[a_col]}
            for c_col, _, c_via in rest:
                nullable = (ent.column(c_col) or {}).get("nullable") is not False
                ent.gens[c_col] = {**ent.gens[c_col], "same": {"column": a_col, "via": c_via}, "nullable": nullable}
        for a_col, b_col, target, via in same_key_links(ent.refs, fks, owned):
            if ent.gens.get(a_col, {}).get("gen") == "ref" and ent.gens.get(b_col, {}).get("gen") == "ref":
                ent.gens[a_col] = {"gen": "lookup", "via": b_col, "table": target, "field": via, "else": ent.gens[a_col]}
        ent.gens = semantics.dependency_order(ent.gens)


def tables_of(entities: list[Entity]) -> list[dict[str, Any]]:
    return [{"name": e.table, "description": e.module.get("description", ""), "columns": e.columns} for e in entities]


def data_recipe(theme: dict[str, Any], entities: list[Entity], seed: int) -> dict[str, Any]:
    return {"seed": seed, "locale": theme.get("locale", "en_US"),
            "tables": {e.table: {"rows": e.rows, "columns": e.gens} for e in entities}}


def schema_signature(tables: list[dict[str, Any]]) -> str:
    """Normalised table/column structure (names and types), for counting distinct schemas."""
    parts = sorted(f"{t['name']}({','.join(sorted(c['name'] + ':' + c['type'] for c in t['columns']))})" for t in tables)
    return ";".join(parts)


def lifecycle_text(workflow: dict[str, Any], singular: str) -> str:
    """A workflow's description said of this record: "Protocols are drafted, scheduled, launched …", not the
    library's "Campaigns are drafted …" (its ``noun`` is replaced by the record's plural)."""
    text = workflow["description"]
    noun = workflow.get("noun")
    if not noun:
        return text
    own = title(plural(singular))
    return re.sub(rf"\b{re.escape(noun)}\b", lambda m: own.capitalize() if m.group(0)[0].isupper() else own, text,
                  flags=re.IGNORECASE)
