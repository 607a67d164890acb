"""Entities → tools: lookups, searches, aggregates, creates, updates, deletes and workflow transitions.

Names and descriptions use the theme's own words for its records (``book_visit``,
``find_visit_by_reference``) and the service's title in descriptions.
"""

from __future__ import annotations

from typing import Any

from ..engine.language import indefinite, verb_phrase
from .naming import create_verb, title
from .schema import Entity
from .semantics import PAID, stamp_status, status_stamps

_JSON_TYPES = {"INTEGER": "integer", "REAL": "number", "TEXT": "string", "BOOLEAN": "boolean"}
_SKIP_ON_CREATE = {"id", "status", "status_changed_at", "status_reason"}


def _param(col: dict[str, Any], description: str | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": _JSON_TYPES[col["type"]]}
    if col.get("enum"):
        schema["enum"] = list(col["enum"])
    schema["description"] = description or col.get("description") or title(col["name"]).capitalize()
    return schema


def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        out["required"] = required
    return out


def _tool(name: str, description: str, parameters: dict[str, Any], impl: dict[str, Any]) -> dict[str, Any]:
    return {"name": name[:63], "description": description, "parameters": parameters, "impl": impl}


def entity_tools(ent: Entity, entities: list[Entity], service: str) -> list[dict[str, Any]]:
    s, p = ent.singular, ent.table
    words, plural_words = title(s), title(p)
    id_param = f"{s}_id"
    tools: list[dict[str, Any]] = []
    children = [(c.table, fk) for c in entities if c is not ent for fk, parent in c.refs.items() if parent == ent.table]

    # get by id, with a few related child rows
    include = [{"table": t, "column": fk, "as": t, "limit": 5} for t, fk in children[:3]]
    related = "".join(f" Includes up to 5 related {title(t)} (use search_{t} with {fk} to list them all)."
                      for t, fk in children[:3])
    tools.append(_tool(f"get_{s}", f"Get one {words} in {service} by its internal id. Returns all its fields.{related}",
                       _obj({id_param: {"type": "integer", "description": f"Internal id of the {words}"}}, [id_param]),
                       {"kind": "get", "table": p, "key": {"param": id_param, "column": "id"}, **({"include": include} if include else {})}))

    label = ent.column(ent.label)
    if label is not None and label.get("unique"):
        tools.append(_tool(f"find_{s}_by_{ent.label}", f"Find {indefinite(words)} by its {title(ent.label)} (exact match). Returns the record with all its fields and its id.",
                           _obj({ent.label: _param(label)}, [ent.label]),
                           {"kind": "get", "table": p, "key": {"param": ent.label, "column": ent.label}}))

    # search with filters and pagination
    props: dict[str, Any] = {}
    filters: list[dict[str, Any]] = []
    searchable = {c["name"]: c.get("search") for c in ent.module["columns"] if c.get("search")}
    if label is not None and ent.label not in searchable:
        searchable[ent.label] = "like"
    for col in ent.columns:
        mode = searchable.get(col["name"])
        if col["name"] in ent.refs:
            props[col["name"]] = {"type": "integer", "description": f"Only {plural_words} of this {title(ent.refs[col['name']])[:-1] or 'parent'} id"}
            filters.append({"param": col["name"], "column": col["name"], "op": "eq"})
        elif col["name"] == "status":
            props["status"] = _param(col, f"Only {plural_words} in this status")
            filters.append({"param": "status", "column": "status", "op": "eq"})
        elif mode in ("eq", "prefix") or (mode and col.get("enum")):
            props[col["name"]] = _param(col, f"Filter by {title(col['name'])}" + (" (prefix)" if mode == "prefix" else ""))
            filters.append({"param": col["name"], "column": col["name"], "op": "prefix" if mode == "prefix" and col["type"] == "TEXT" else "eq"})
        elif mode == "like" and col["type"] == "TEXT":
            props[f"{col['name']}_contains"] = {"type": "string", "description": f"Text contained in the {title(col['name'])} (case-insensitive)"}
            filters.append({"param": f"{col['name']}_contains", "column": col["name"], "op": "like"})
        elif mode == "range" or (mode and col["type"] in ("INTEGER", "REAL")):
            kind = {"type": _JSON_TYPES[col["type"]]} if col["type"] != "TEXT" else {"type": "string"}
            props[f"{col['name']}_from"] = {**kind, "description": f"Smallest {title(col['name'])} to include"}
            props[f"{col['name']}_to"] = {**kind, "description": f"Largest {title(col['name'])} to include"}
            filters.append({"param": f"{col['name']}_from", "column": col["name"], "op": "gte"})
            filters.append({"param": f"{col['name']}_to", "column": col["name"], "op": "lte"})
    props["limit"] = {"type": "integer", "minimum": 1, "maximum": 50, "description": "Page size (default 10, max 50)"}
    props["offset"] = {"type": "integer", "minimum": 0, "description": "Rows to skip, for paging"}
    sort_col = next((c["name"] for c in ent.module["columns"] if c.get("sort") and ent.column(c["name"])), "id")
    tools.append(_tool(f"search_{p}", f"Search {plural_words} in {service} with optional filters, ordered by {title(sort_col)}. "
                       f"Returns one page of matching records (limit: default 10, at most 50) and the total number of "
                       f"matches; use offset to read further pages.",
                       _obj(props), {"kind": "search", "table": p, "filters": filters, "order_by": [[sort_col, "asc"], ["id", "asc"]],
                                     "limit": {"param": "limit", "default": 10, "max": 50}, "offset_param": "offset"}))

    # aggregates
    agg_filters = [f for f in filters if f["op"] == "eq"]
    agg_props = {f["param"]: props[f["param"]] for f in agg_filters}
    tools.append(_tool(f"count_{p}", f"Count {plural_words} matching optional filters. Returns the number as value.", _obj(agg_props),
                       {"kind": "aggregate", "table": p, "func": "count", "filters": agg_filters}))
    group = "status" if ent.workflow else next((c["name"] for c in ent.columns if c.get("enum") and c["name"] != "status"), None)
    if group:
        tools.append(_tool(f"count_{p}_by_{group}", f"Number of {plural_words} per {title(group)}. Returns one group per {title(group)} with its count.", _obj({}),
                           {"kind": "aggregate", "table": p, "func": "count", "group_by": group}))
    numeric = [c for c in ent.module["columns"] if c.get("aggregate") and ent.column(c["name"]) and c.get("type") in ("INTEGER", "REAL")]
    for col in numeric[:2]:
        tools.append(_tool(f"total_{col['name']}_of_{p}", f"Sum of {title(col['name'])} over {plural_words} matching optional filters. Returns the total as value.",
                           _obj(agg_props), {"kind": "aggregate", "table": p, "func": "sum", "column": col["name"], "filters": agg_filters}))
    if numeric:
        col = numeric[0]
        tools.append(_tool(f"average_{col['name']}_of_{p}", f"Average {title(col['name'])} of {plural_words} matching optional filters. Returns the average as value.",
                           _obj(agg_props), {"kind": "aggregate", "table": p, "func": "avg", "column": col["name"], "filters": agg_filters}))

    # create
    create_props, required, values = {}, [], {}
    for col in ent.columns:
        if col["name"] in _SKIP_ON_CREATE:
            continue
        create_props[col["name"]] = _param(col) if col["name"] not in ent.refs else {
            "type": "integer", "description": f"Id of the {title(ent.refs[col['name']])[:-1]} it belongs to"}
        values[col["name"]] = f"$param:{col['name']}"
        if col.get("nullable") is False or col.get("unique"):
            required.append(col["name"])
    if ent.workflow:
        values["status"] = ent.workflow["states"][0]
        values["status_changed_at"] = "$now"
    verb = create_verb(ent.roles, s)
    if ent.workflow and any(t["verb"] == verb for t in ent.workflow["transitions"]):
        verb = "create"  # "start" or "publish" already name a status change of this record
    tools.append(_tool(f"{verb}_{s}", f"{verb.capitalize()} a new {words} in {service}. Returns the created record with its id.",
                       _obj(create_props, required), {"kind": "create", "table": p, "values": values}))

    # update editable fields
    editable = [c["name"] for c in ent.module["columns"] if c.get("editable") and ent.column(c["name"]) and c["name"] not in ent.refs]
    if editable:
        up_props = {id_param: {"type": "integer", "description": f"Internal id of the {words}"}}
        up_props.update({c: _param(ent.column(c), f"New {title(c)}") for c in editable})
        tools.append(_tool(f"update_{s}", f"Change the {', '.join(title(c) for c in editable)} of {indefinite(words)}; only the fields given are changed. "
                       f"Returns the updated record.",
                           _obj(up_props, [id_param]),
                           {"kind": "update", "table": p, "key": {"param": id_param, "column": "id"}, "set": {c: f"$param:{c}" for c in editable}}))

    # delete (records without a lifecycle); rows still referenced elsewhere cannot be deleted
    if not ent.workflow:
        tools.append(_tool(f"delete_{s}", f"Permanently delete {indefinite(words)}. Fails while other records still reference it. Returns the deleted record.",
                           _obj({id_param: {"type": "integer", "description": f"Internal id of the {words}"}}, [id_param]),
                           {"kind": "delete", "table": p, "key": {"param": id_param, "column": "id"}}))

    # workflow transitions
    if ent.workflow:
        stamps = status_stamps([c["name"] for c in ent.columns], ent.workflow)
        for tr in ent.workflow["transitions"]:
            tprops = {id_param: {"type": "integer", "description": f"Internal id of the {words}"}}
            tset: dict[str, Any] = {"status_changed_at": "$now"}
            for col, reached in stamps.items():
                # A status timestamp is set on reaching its status and cleared on leaving for an earlier one.
                nullable = (ent.column(col) or {}).get("nullable", True) is not False
                if tr["to"] == stamp_status(col):
                    tset[col] = "$today" if col.endswith(("_on", "_date")) else "$now"
                elif tr["to"] not in reached and nullable:
                    tset[col] = None
            paid = ent.workflow.get("paid") or {}
            if tr["to"] in paid.get("full", ()):
                # paying in full settles the amount: a paid invoice owes nothing more
                names = {c["name"] for c in ent.columns}
                settled = next(((p_, d) for p_, d in PAID if p_ in names and d in names), None)
                if settled:
                    tset[settled[0]] = f"$row:{settled[1]}"
            treq = [id_param]
            if tr.get("reason"):
                tprops["reason"] = {"type": "string", "minLength": 3, "description": "Why (recorded on the record)"}
                tset["status_reason"] = "$param:reason"
                treq.append("reason")
            allowed = " or ".join(tr["from"])
            act = verb_phrase(tr["verb"], indefinite(words))
            tools.append(_tool(f"{tr['verb']}_{s}",
                               f"{act[0].upper() + act[1:]}: moves it from {allowed} to {tr['to']}. "
                               f"Refused for {indefinite(words)} in any other status." + (" A reason is required." if tr.get("reason") else "")
                               + " Returns the updated record.",
                               _obj(tprops, treq),
                               {"kind": "transition", "table": p, "key": {"param": id_param, "column": "id"}, "column": "status",
                                "from": list(tr["from"]), "to": tr["to"], "set": tset}))
    return tools


def generate_tools(entities: list[Entity], service: str) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    seen: set[str] = set()
    for ent in entities:
        for tool in entity_tools(ent, entities, service):
            name = tool["name"]
            if name in seen or name == "submit":
                # Two records sharing a word ("open" a ticket, "open" a case): name the table instead.
                name = f"{name}_in_{ent.table}"[:63]
            n = 2
            while name in seen:
                name, n = f"{tool['name']}_{ent.table}_{n}"[:63], n + 1
            tool["name"] = name
            seen.add(name)
            tools.append(tool)
    return tools
