"""A small declarative spec that exercises every tool kind (used by engine tests)."""

from __future__ import annotations

import copy
from typing import Any

_TOY: dict[str, Any] = {
    "spec_version": 1,
    "id": "toy-library",
    "title": "Toy library",
    "description": "A lending library with members, books and loans.",
    "taxonomy": {"l1": "education", "l2": "training-elearning", "l3": "Toy library"},
    "now": "2026-06-15T12:00:00Z",
    "policy": "Members may hold at most 3 active loans. Only available books can be lent.",
    "max_turns": 12,
    "tables": [
        {"name": "members", "columns": [
            {"name": "id", "type": "INTEGER", "primary_key": True},
            {"name": "name", "type": "TEXT", "nullable": False},
            {"name": "email", "type": "TEXT", "unique": True},
            {"name": "tier", "type": "TEXT", "enum": ["basic", "gold"]}]},
        {"name": "books", "columns": [
            {"name": "id", "type": "INTEGER", "primary_key": True},
            {"name": "title", "type": "TEXT", "nullable": False},
            {"name": "status", "type": "TEXT", "enum": ["available", "lent", "lost"]},
            {"name": "copies", "type": "INTEGER", "check": "copies >= 0"}]},
        {"name": "loans", "columns": [
            {"name": "id", "type": "INTEGER", "primary_key": True},
            {"name": "member_id", "type": "INTEGER", "references": "members.id", "nullable": False},
            {"name": "book_id", "type": "INTEGER", "references": "books.id", "nullable": False},
            {"name": "status", "type": "TEXT", "enum": ["active", "returned"]},
            {"name": "opened_at", "type": "TEXT"}]},
    ],
    "data": {"seed": 3, "tables": {
        "members": {"rows": 20, "columns": {
            "name": {"gen": "faker", "provider": "name"},
            "email": {"gen": "faker", "provider": "email", "unique": True},
            "tier": {"gen": "choice", "values": ["basic", "gold"], "weights": [3, 1]}}},
        "books": {"rows": 30, "columns": {
            "title": {"gen": "words", "count": [2, 4]},
            "status": {"gen": "choice", "values": ["available", "lent", "lost"], "weights": [6, 3, 1]},
            "copies": {"gen": "int", "min": 0, "max": 3}}},
        "loans": {"rows": 25, "columns": {
            "member_id": {"gen": "ref", "ref": "members.id"},
            "book_id": {"gen": "ref", "ref": "books.id"},
            "status": {"gen": "choice", "values": ["active", "returned"]},
            "opened_at": {"gen": "datetime", "days": [-60, 0]}}},
    }},
    "tools": [
        {"name": "get_member", "description": "Look up a member by id.",
         "parameters": {"type": "object", "properties": {"member_id": {"type": "integer"}}, "required": ["member_id"]},
         "impl": {"kind": "get", "table": "members", "key": {"param": "member_id", "column": "id"},
                  "include": [{"table": "loans", "column": "member_id", "as": "loans"}]}},
        {"name": "search_books", "description": "Search books by title words and status.",
         "parameters": {"type": "object", "properties": {
             "title": {"type": "string"}, "status": {"type": "string", "enum": ["available", "lent", "lost"]},
             "limit": {"type": "integer", "minimum": 1}, "offset": {"type": "integer", "minimum": 0}}},
         "impl": {"kind": "search", "table": "books", "filters": [
             {"param": "title", "column": "title", "op": "like"}, {"param": "status", "column": "status"}],
             "limit": {"param": "limit", "default": 10, "max": 50}, "offset_param": "offset"}},
        {"name": "count_books", "description": "Count books, optionally by status, grouped by status.",
         "parameters": {"type": "object", "properties": {"status": {"type": "string"}}},
         "impl": {"kind": "aggregate", "table": "books", "func": "count", "group_by": "status",
                  "filters": [{"param": "status", "column": "status"}]}},
        {"name": "register_member", "description": "Register a new member.",
         "parameters": {"type": "object", "properties": {"name": {"type": "string", "minLength": 1},
                                                         "email": {"type": "string"}}, "required": ["name", "email"]},
         "impl": {"kind": "create", "table": "members", "values": {"name": "$param:name", "email": "$param:email", "tier": "basic"}}},
        {"name": "update_member_email", "description": "Change a member's email.",
         "parameters": {"type": "object", "properties": {"member_id": {"type": "integer"}, "email": {"type": "string"}},
                        "required": ["member_id", "email"]},
         "impl": {"kind": "update", "table": "members", "key": {"param": "member_id", "column": "id"}, "set": {"email": "$param:email"}}},
        {"name": "lend_book", "description": "Lend an available book to a member.",
         "parameters": {"type": "object", "properties": {"book_id": {"type": "integer"}, "member_id": {"type": "integer"}},
                        "required": ["book_id", "member_id"]},
         "impl": {"kind": "transition", "table": "books", "key": {"param": "book_id", "column": "id"}, "column": "status",
                  "from": ["available"], "to": "lent",
                  "preconditions": [{"expr": "(SELECT COUNT(*) FROM loans WHERE member_id = :member_id AND status = 'active') < 3",
                                     "message": "member already has 3 active loans"}],
                  "effects": [{"op": "insert", "table": "loans", "values": {
                      "member_id": "$param:member_id", "book_id": "$key", "status": "active", "opened_at": "$now"}}]}},
        {"name": "delete_member", "description": "Delete a member with no loans.",
         "parameters": {"type": "object", "properties": {"member_id": {"type": "integer"}}, "required": ["member_id"]},
         "impl": {"kind": "delete", "table": "members", "key": {"param": "member_id", "column": "id"}}},
    ],
    "tasks": [
        {"id": "lend-1", "instruction": "Lend book 2 to member 1.", "kind": "handcrafted", "difficulty": 1,
         "solution": [{"name": "lend_book", "arguments": {"book_id": 2, "member_id": 1}}, {"name": "submit", "arguments": {}}],
         "checks": [{"type": "sql", "query": "SELECT status FROM books WHERE id = 2", "expect": [["lent"]]},
                    {"type": "footprint", "tables": ["books", "loans"]}]},
        {"id": "count-1", "instruction": "How many books are lost?", "kind": "handcrafted", "difficulty": 1,
         "solution": [{"name": "count_books", "arguments": {"status": "lost"}}, {"name": "submit", "arguments": {"answer": "__LOST__"}}],
         "checks": [{"type": "answer", "mode": "numeric", "expected": "__LOST__"}, {"type": "footprint", "tables": []}]},
    ],
}


def toy_spec() -> dict[str, Any]:
    """A fresh deep copy (tests mutate it), with the count task's answer read from the generated data."""
    from agentworld_envs.engine import state

    spec = copy.deepcopy(_TOY)
    conn = state.episode_connection(state.golden_bytes(spec))
    lost = conn.execute("SELECT COUNT(*) FROM books WHERE status = 'lost'").fetchone()[0]
    available = conn.execute("SELECT status FROM books WHERE id = 2").fetchone()[0]
    conn.close()
    assert available == "available", "the lend task expects book 2 to be available"
    task = next(t for t in spec["tasks"] if t["id"] == "count-1")
    task["solution"][-1]["arguments"]["answer"] = str(lost)
    task["checks"][0]["expected"] = lost
    return spec
