"""Python hooks that a test spec names by ``"plugin_hooks:<function>"`` (no decorator, no registration)."""

from __future__ import annotations

from typing import Any

IMPORTED = True


def lost_books(ctx: Any) -> dict[str, Any]:
    """A Python tool: how many books are lost."""
    return {"lost": ctx.value("SELECT COUNT(*) FROM books WHERE status = 'lost'")}


def nothing_lent(initial: Any, final: Any, answer: Any, task: dict[str, Any]) -> tuple[bool, str]:
    """A Python verifier: no book changed to 'lent'."""
    before = initial.execute("SELECT COUNT(*) FROM books WHERE status = 'lent'").fetchone()[0]
    after = final.execute("SELECT COUNT(*) FROM books WHERE status = 'lent'").fetchone()[0]
    return after == before, f"lent books {before} -> {after}"


NOT_CALLABLE = 3
