"""The integrations' commands: ``agentworld db`` and ``agentworld serve-openenv``.

Registered on the ``agentworld`` app by :func:`register_integration_commands`; each command
imports its framework only when it runs, so the CLI starts without any of them installed.
"""

from __future__ import annotations

import json
from typing import Any, Optional

import typer


def register_integration_commands(app: typer.Typer) -> None:
    """Add ``db`` and ``serve-openenv`` to a typer app (the ``agentworld`` CLI)."""

    @app.command("db")
    def db(
        env_id: str = typer.Argument(..., help="environment id or name, e.g. agentworld/retail-v0"),
        out: str = typer.Option(..., "--out", help="the SQLite file to write (a new file)"),
        task: Optional[str] = typer.Option(None, help="a task id (with --after-solution: whose solution to replay)"),
        after_solution: bool = typer.Option(False, "--after-solution",
                                            help="write the state after the task's reference solution"),
        overwrite: bool = typer.Option(False, help="replace a database an earlier `agentworld db` wrote at --out"),
        as_json: bool = typer.Option(False, "--json", help="print {path, env_id, tables: {name: rows}}"),
    ) -> None:
        """Write an environment's golden database (or the state after a task's solution) as a standalone SQLite file.

        Open it with `sqlite-utils tables FILE --counts`, `sqlite-utils rows FILE TABLE` or `datasette FILE`.
        """
        from .statedb import StateSource, write

        written = write(StateSource(env_id, task, after_solution), out, overwrite=overwrite)
        if as_json:
            print(json.dumps({"path": str(written.path), "env_id": written.env_id, "tables": written.counts}))
            return
        total = sum(written.counts.values())
        print(f"wrote {written.path}: {written.env_id}, {len(written.counts)} tables, {total} rows")

    @app.command("serve-openenv")
    def serve_openenv(
        env_ids: list[str] = typer.Argument(..., help="environment ids or names; reset(env_id=...) picks one "
                                                      "(default: the first)"),
        task: Optional[str] = typer.Option(None, help="default task of reset() for the first env (default: the "
                                                      "seeded pick)"),
        seed: int = typer.Option(0, min=0, help="default reset seed"),
        host: str = typer.Option("127.0.0.1", help="bind address (loopback by default)"),
        port: int = typer.Option(8000, min=1, max=65535),
        max_turns: Optional[int] = typer.Option(None, min=1, help="actions per episode (default: the env's)"),
        max_sessions: int = typer.Option(256, min=1, help="live sessions; one more is refused with OpenEnv's "
                                                          "CAPACITY_REACHED error"),
        idle_timeout: Optional[float] = typer.Option(None, min=1, help="close a session unused for this many "
                                                                       "seconds (default: never)"),
    ) -> None:
        """Serve environments over OpenEnv (HTTP + WebSocket): one episode per session, OpenEnv's EnvClient API."""
        try:
            from .openenv_server import serve
        except ImportError as exc:
            from ...util.errors import UserInputError

            raise UserInputError(f"serve-openenv needs OpenEnv ({exc.name or exc}): "
                                 "pip install 'agentworld[openenv]'") from None
        # Unknown env/task ids raise UnknownEnvError/UnknownTaskError: the CLI prints them as one line.
        serve(env_ids, task_id=task, seed=seed, host=host, port=port, max_turns=max_turns,
              max_sessions=max_sessions, idle_timeout=idle_timeout)


def print_table(env_id: str, table: str, task: Optional[str], after_solution: bool, limit: int,
                as_json: bool) -> None:
    """``agentworld show ID --table T``: a table's rows, read through the same path as ``agentworld db``."""
    from rich.console import Console
    from rich.table import Table

    from .statedb import StateSource, table_rows

    columns, rows, total = table_rows(StateSource(env_id, task, after_solution), table, limit=limit or None)
    if as_json:
        for row in rows:
            print(json.dumps(row, ensure_ascii=False, default=_jsonable))
        return
    shown = Table(title=f"{table}: {total} rows" + (f" (first {limit})" if limit and total > limit else ""))
    for col in columns:
        shown.add_column(col)
    for row in rows:
        shown.add_row(*("" if row[c] is None else str(row[c]) for c in columns))
    Console().print(shown)


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    return str(value)
