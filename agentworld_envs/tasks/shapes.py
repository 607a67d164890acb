"""Task shapes whose difficulty is reasoning about rules and state, not chain length.

* **Rule tasks** (``rule_threshold``, ``time_window``): a status change the policy allows by its
  lifecycle, on a record that meets — or breaks — one of the theme's enforced business rules
  (an amount limit, a lead time, a time window). The trap must be refused with the reason.
* **Multi-constraint selection**: the one record meeting several conditions at once.
* **Compare-then-act**: act on the result of an aggregate (the child with the highest amount).
* **Create-record**: a new record with the fields the request gives, linked to its parent.

Each function takes the :class:`~agentworld_envs.tasks.generate.Generator` of one candidate and
returns a :class:`~agentworld_envs.tasks.generate.Part`, or raises ``Skip`` where the shape does
not fit the environment or the drawn records.
"""

from __future__ import annotations

from typing import Any

from ..engine.language import field_value, flag_words, in_state, indefinite, number, value_words, verb_phrase
from ..engine.rules import Rule
from .generate import Generator, Part, Skip, call, fmt_value
from .model import TableInfo, words

RULE_KINDS = {"rule_threshold": ("threshold",), "time_window": ("min_lead_time", "max_age")}


def _verb(gen: Generator, tool: dict[str, Any], t: TableInfo) -> str:
    return gen.verb(tool, t).replace(" ", "_")


def rule_task(gen: Generator, shape: str, trap: bool) -> Part:
    """A transition on a record that meets (or, for a trap, breaks) an enforced rule of ``shape``."""
    rules = [r for r in gen.m.spec.get("rules", []) if r["kind"] in RULE_KINDS[shape] and r["tool"] in gen.m.tools]
    if not rules:
        raise Skip("no rule of this shape")
    rule = gen.rng.choice(rules)
    tool = gen.m.tools[rule["tool"]]
    t = gen.m.tables[rule["table"]]
    if not t.label:
        raise Skip("no label lookup")
    impl = tool["impl"]
    marks = ", ".join("?" * len(impl["from"]))
    cond = Rule.from_json(rule).sql(gen.m.spec["now"])
    where = f'"{impl["column"]}" IN ({marks}) AND "{rule["column"]}" IS NOT NULL AND ' + (f"NOT ({cond})" if trap else f"({cond})")
    row = gen.pick_row(t, where, tuple(impl["from"]))
    desc = gen.describe(t, row)
    steps = [gen.find(t, row)]
    gen.run(steps[0]["name"], **steps[0]["arguments"])
    args = gen.transition_args(tool, row["id"])
    act = verb_phrase(_verb(gen, tool, t), desc)
    why = f" The reason is: {args['reason']}." if "reason" in args else ""
    text = gen.rng.choice([f"Please {act}.{why}", f"Could you {act}?{why}", f"I need you to {act}.{why}"])
    if trap:
        gen.hidden += 1   # the value that breaks the rule is only seen by looking the record up
        value = row[rule["column"]]
        limit = fmt_value(rule["value"]) if rule["kind"] == "threshold" else number(rule["value"])
        # The reason, not the record's code: a code's digits would read as competing figures.
        refusal = f"I cannot {verb_phrase(_verb(gen, tool, t), 'it')}: {rule['text']} ({words(rule['column'])}: {fmt_value(value)})"
        # Saying why means citing the record's own value that breaks the rule (the rule and its limit are
        # public: the policy shows them, so they are no evidence of a lookup).
        shown = fmt_value(value) if rule["kind"] == "threshold" else str(value)[:10]
        reasons = [[shown]]
        check = {"reasons": reasons, "candidates": [], "values": numeric_words(gen, [limit, shown]), "exclude": [limit],
                 "results": [impl["to"]],
                 "about": [str(v) for v in steps[0]["arguments"].values()]}
        return Part(steps, text, refusal=refusal, refusal_check=check, structure="conditional", rule=rule["text"])
    gen.run(tool["name"], **args)
    check = gen.row_check(t.name, row["id"], exclude={"status_reason"}, desc=f"{t.singular} changed within the rule")
    return Part(steps + [call(tool["name"], **args)], text, checks=[check], writes=True, structure="conditional",
                rule=rule["text"])


def numeric_words(gen: Generator, figures: list[str]) -> list[str]:
    """The environment's numeric category values other than ``figures``: competitors, so a refusal that
    lists every category word (a hack) does not pass for citing a small limit."""
    from .probes import enum_words

    out = []
    for v in enum_words(gen.m.spec):
        try:
            float(v)
        except ValueError:
            continue
        if not any(_same_number(v, f) for f in figures):
            out.append(v)
    return out


def _same_number(a: str, b: str) -> bool:
    try:
        return float(a) == float(b)
    except ValueError:
        return False


def _search_tool(gen: Generator, t: TableInfo) -> dict[str, Any] | None:
    return gen.m.tools.get(t.search) if t.search else None


def multi_constraint(gen: Generator) -> Part:
    """The single record meeting two or three conditions (a status or category, and a bound on a number or
    date): the record with the highest (or lowest) value among those matching the categories, so the bound at
    its own value singles it out."""
    options = []
    for t in gen.m.tables.values():
        tool = _search_tool(gen, t)
        if tool is None or not t.label:
            continue
        flts = tool["impl"].get("filters", [])
        eqs = [f for f in flts if f["op"] == "eq" and t.cols.get(f["column"], {}).get("enum")]
        ranges = [f for f in flts if f["op"] in ("gte", "lte") and f["column"] != "id"]
        if eqs and ranges:
            options.append((t, tool, eqs, ranges))
    if not options:
        raise Skip("no search with category and range filters")
    t, tool, eqs, ranges = gen.rng.choice(options)
    seed_row = gen.pick_row(t)
    chosen_eq = gen.rng.sample(eqs, min(len(eqs), gen.rng.choice([1, 2])))
    if any(seed_row.get(f["column"]) is None for f in chosen_eq):
        raise Skip("empty category")
    rng_f = gen.rng.choice(ranges)
    col = rng_f["column"]
    where = " AND ".join(f'"{f["column"]}" = ?' for f in chosen_eq)
    params = tuple(seed_row[f["column"]] for f in chosen_eq)
    order = "DESC" if rng_f["op"] == "gte" else "ASC"
    top = gen.conn.execute(f'SELECT id, "{col}" FROM "{t.name}" WHERE {where} AND "{col}" IS NOT NULL '
                           f'AND "{t.label}" IS NOT NULL ORDER BY "{col}" {order} LIMIT 2', params).fetchall()
    if len(top) < 2 or top[0][1] == top[1][1]:
        raise Skip("no single extreme record")
    row = gen.row_now(t.name, top[0][0])
    args: dict[str, Any] = {f["param"]: row[f["column"]] for f in chosen_eq}
    args[rng_f["param"]] = row[col]
    limit_param = tool["impl"].get("limit", {}).get("param")
    if limit_param:
        args[limit_param] = 50
    res = gen.run(tool["name"], **args)
    if res["total"] != 1 or res["results"][0]["id"] != row["id"]:
        raise Skip("conditions do not single out one record")
    parts = [f"is {value_words(row[f['column']])}" if f["column"] == "status" else
             f"has {field_value(f['column'], row[f['column']])}" for f in chosen_eq]
    bound = "at least" if rng_f["op"] == "gte" else "at most"
    shown = fmt_value(row[col]) if isinstance(row[col], (int, float)) else str(row[col])
    parts.append(f"has {indefinite(words(col))} of {bound} {shown}")
    conds = ", ".join(parts[:-1]) + f" and {parts[-1]}"
    text = gen.rng.choice([f"Which {t.singular} {conds}? Give me its {words(t.label)}.",
                           f"I'm looking for the one {t.singular} that {conds}. What is its {words(t.label)}?"])
    return Part([call(tool["name"], **args)], text, answer=("exact", str(row[t.label])),
                candidates=[f"{t.name}.{t.label}"], structure="branching")


def compare_then_act(gen: Generator) -> Part:
    """Among a parent's children in one status, change the one with the highest (or lowest) value."""
    combos = []
    for p in gen.anchors():
        for ct, fk in p.children:
            c = gen.m.tables[ct]
            st = c.status_col()
            if not (c.search and st and fk in c.search_params and st in c.search_params and c.label):
                continue
            nums = [k for k, v in c.cols.items() if v["type"] in ("REAL", "INTEGER") and k not in c.fks and k != "id"]
            for tr in c.transitions:
                for col in nums:
                    combos.append((p, c, fk, st, tr, col))
    if not combos:
        raise Skip("no parent with changeable numeric children")
    p, c, fk, st, tr, col = gen.rng.choice(combos)
    s = gen.rng.choice(tr["impl"]["from"])
    prow = gen.pick_parent(p, c, fk, f'"{st}" = ? AND "{col}" IS NOT NULL', (s,), hi=8)
    pid = prow["id"]
    highest = gen.rng.random() < 0.6
    desc = gen.describe(p, prow)
    steps = [gen.find(p, prow)]
    gen.run(steps[0]["name"], **steps[0]["arguments"])
    rows, calls = gen.page(c, {c.search_params[fk]: pid, c.search_params[st]: s})
    steps += calls
    vals = sorted((r[col] for r in rows if r[col] is not None), reverse=highest)
    if len(vals) < 2 or vals[0] == vals[1]:
        raise Skip("tie")
    target = next(r for r in rows if r[col] == vals[0])
    args = gen.transition_args(tr, target["id"])
    gen.run(tr["name"], **args)          # a rule may refuse it: then the candidate is skipped
    steps.append(call(tr["name"], **args))
    which = "highest" if highest else "lowest"
    act = verb_phrase(_verb(gen, tr, c), f"the one with the {which} {words(col)}")
    why = f" Reason: {args['reason']}." if "reason" in args else ""
    text = gen.rng.choice([f"Of the {in_state(s, c.plural)} of {desc}, {act}.{why}",
                           f"Look at the {in_state(s, c.plural)} of {desc} and {act}.{why}"])
    check = gen.row_check(c.name, target["id"], exclude={"status_reason"}, desc=f"the {which} {words(col)} {c.singular} changed")
    return Part(steps, text, checks=[check], writes=True, structure="aggregation")


def _fresh_text(gen: Generator, t: TableInfo, col: str, template: Any) -> str | None:
    """A value for a unique text column that no row has yet, shaped like ``template``."""
    if not isinstance(template, str):
        return None
    for _ in range(20):
        if "@" in template:
            local, _, domain = template.partition("@")
            value = f"{local}{gen.rng.randint(10, 99)}@{domain}"
        else:
            value = "".join(str(gen.rng.randrange(10)) if ch.isdigit() else ch for ch in template)
        if not gen.conn.execute(f'SELECT 1 FROM "{t.name}" WHERE "{col}" = ?', (value,)).fetchone():
            return value
    return None


def _create_request(gen: Generator, tool: dict[str, Any], link: tuple[str, dict[str, Any]] | None = None):
    """The lookups, arguments and wording of a request to create one record with ``tool``.

    ``link`` = (key column, parent row) fixes the parent; otherwise one is drawn. Nothing is created.
    Returns (steps, args, text, table).
    """
    t = gen.m.tables[tool["impl"]["table"]]
    props = tool["parameters"]["properties"]
    required = set(tool["parameters"].get("required", []))
    if t.label:
        template = gen.pick_row(t)
    else:
        cur = gen.conn.execute(f'SELECT * FROM "{t.name}" ORDER BY id LIMIT 1')
        found = cur.fetchone()
        if found is None:
            raise Skip("no row to model the new one on")
        template = dict(zip([d[0] for d in cur.description], found))
    steps: list[dict[str, Any]] = []
    args: dict[str, Any] = {}
    phrases: list[str] = []
    parent_desc = ""
    optional = [p for p in props if p not in required]
    gen.rng.shuffle(optional)
    params = sorted(required) + optional[:2]
    if link and link[0] not in params:
        params.append(link[0])
    for param in params:
        col = t.cols.get(param)
        if col is None:
            continue
        if param in t.fks:
            parent = gen.m.tables[t.fks[param]]
            forced = link is not None and param == link[0]
            if not parent.label or (parent_desc and not forced) or (link is not None and not forced):
                if param in required:
                    raise Skip("a required link cannot be looked up")
                continue
            prow = link[1] if forced else gen.pick_row(parent)
            step = gen.find(parent, prow)
            gen.run(step["name"], **step["arguments"])
            steps.append(step)
            args[param] = prow["id"]
            parent_desc = gen.describe(parent, prow)
            continue
        value = template.get(param)
        if col.get("unique"):
            value = _fresh_text(gen, t, param, value)
        if value is None or (isinstance(value, str) and (not value or len(value) > 60)):
            if param in required:
                raise Skip("no value for a required field")
            continue
        if col["type"] == "BOOLEAN":
            value = bool(value)
        args[param] = value
        if isinstance(value, bool):
            phrases.append(flag_words(param, value))
        elif col.get("enum"):
            phrases.append(field_value(param, value))
        else:
            phrases.append(f"{words(param)} {fmt_value(value)}")
    if len(phrases) < 2:
        raise Skip("too few fields to state")
    verb = tool["name"].split("_", 1)[0]
    listing = ", ".join(phrases[:-1]) + f" and {phrases[-1]}"
    where = f" for {parent_desc}" if parent_desc else ""
    text = gen.rng.choice([f"Please {verb} a new {t.singular}{where} with {listing}.",
                           f"{verb.capitalize()} {indefinite(t.singular)}{where}: {listing}."])
    return steps, args, text, t


def _newest_row_check(gen: Generator, t: TableInfo, new_id: int, desc: str) -> dict[str, Any]:
    """An sql check on the created row, found as the table's newest row (its id is the agent's to get)."""
    check = gen.row_check(t.name, new_id, desc=desc)
    check["query"] = check["query"].replace("WHERE id = ?", "ORDER BY id DESC LIMIT 1")
    check["params"] = []
    return check


def create_record(gen: Generator) -> Part:
    """Create a record with the fields the request spells out, linked to a parent found by its label."""
    creates = [tool for tool in gen.m.tools.values() if tool["impl"]["kind"] == "create" and tool["impl"]["table"] in gen.m.tables]
    if not creates:
        raise Skip("no create tool")
    tool = gen.rng.choice(creates)
    steps, args, text, t = _create_request(gen, tool)
    res = gen.run(tool["name"], **args)
    steps.append(call(tool["name"], **args))
    check = _newest_row_check(gen, t, res["created"]["id"], f"the new {t.singular} as requested")
    return Part(steps, text, checks=[check], writes=True, structure="linear")


def listing_done(steps: list[dict[str, Any]], t: TableInfo) -> bool:
    return bool(t.search) and any(s["name"] == t.search for s in steps)


def quota_task(gen: Generator, trap: bool) -> Part:
    """Create a record for a parent below its quota of open records, or (trap) refuse one at the quota."""
    rules = [Rule.from_json(r) for r in gen.m.spec.get("rules", []) if r["kind"] == "quota" and r["tool"] in gen.m.tools]
    if not rules:
        raise Skip("no quota rule")
    rule = gen.rng.choice(rules)
    tool = gen.m.tools[rule.tool]
    parent = gen.m.tables[gen.m.tables[rule.table].fks[rule.column]]
    if not parent.label:
        raise Skip("parent has no label")
    count = rule.active_count(f'"{parent.name}".id')
    prow = gen.pick_row(parent, f"{count} {'>=' if trap else '<'} ?", (int(rule.value),))
    steps, args, text, t = _create_request(gen, tool, (rule.column, prow))
    if trap:
        gen.hidden += 1   # how many the parent already holds is only seen by counting
        held = gen.conn.execute(f'SELECT {count} FROM "{parent.name}" WHERE id = ?', (prow["id"],)).fetchone()[0]
        desc = gen.describe(parent, prow)
        refusal = (f"I cannot add the new {t.singular} for {desc}: {rule.text} It already has {held}.")
        cap = fmt_value(int(rule.value))
        # Caps are small numbers any list of words may contain: the refusal must also name whose quota it is.
        who = str(prow[parent.label])
        figures = [cap, fmt_value(held)]
        options = [[cap, fmt_value(held), who], [cap, who], [fmt_value(held), who]]
        child = gen.m.tables[rule.table]
        if child.search and rule.column in child.search_params:   # count them: the records the quota holds
            listing = call(child.search, **{child.search_params[rule.column]: prow["id"]})
            gen.run(listing["name"], **listing["arguments"])
            steps = steps + [listing]
        held_rows = gen.conn.execute(f'SELECT "{child.label or "id"}" FROM "{child.name}" AS quota_rows WHERE "{rule.column}" = ? '
                                     f'AND status IN ({", ".join("?" * len(rule.states))})',
                                     (prow["id"], *rule.states)).fetchall()
        # The count is evidence only with a lookup of the records it counts (at the cap it equals the rule's figure).
        evidence = [r[0] for r in held_rows if isinstance(r[0], str)] if listing_done(steps, child) else []
        check = {"reasons": [list(dict.fromkeys(o)) for o in options if fmt_value(held) in o],
                 "candidates": [], "values": numeric_words(gen, figures),
                 "exclude": [cap], "results": ["created", "added"], "about": [str(a) for a in args.values()][:3]}
        if evidence:
            check["evidence"] = evidence
        return Part(steps, text, refusal=refusal, refusal_check=check, structure="conditional", rule=rule.text)
    res = gen.run(tool["name"], **args)
    steps.append(call(tool["name"], **args))
    check = _newest_row_check(gen, t, res["created"]["id"], f"the new {t.singular} within the quota")
    return Part(steps, text, checks=[check], writes=True, structure="conditional", rule=rule.text)
