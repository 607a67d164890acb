"""``agentworld train``: the trainer's CLI, generated from :class:`TrainConfig`.

Every config field is a flag (``group_size`` -> ``--group-size``), so YAML keys,
flags and the dataclass can never drift apart. The main ``agentworld`` app
loads :func:`register` through the ``agentworld.cli`` entry point.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
import typing
from typing import Optional

import typer

from .config import PRESETS, TrainConfig


def _field_docs() -> dict[str, str]:
    """Attribute docstrings (the string literal under each field) become flag help."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(TrainConfig)))
    body = tree.body[0].body
    docs = {}
    for node, nxt in zip(body, body[1:]):
        if isinstance(node, ast.AnnAssign) and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant):
            docs[node.target.id] = str(nxt.value.value)
    return docs


def _cli_type(typ):
    if typing.get_origin(typ) is list:
        return str  # comma-separated
    return typ


def register(app: typer.Typer) -> None:
    """Add the ``train`` command to ``app``."""
    hints = typing.get_type_hints(TrainConfig)
    docs = _field_docs()
    fields = dataclasses.fields(TrainConfig)

    def train_command(**kwargs):
        from agentworld_envs.util.errors import EnvWorkerError
        from agentworld_envs.util.extras import require as require_extra

        from .config import make_config, to_yaml
        from .errors import TrainError

        preset = kwargs.pop("preset")
        config_file = kwargs.pop("config")
        print_config = kwargs.pop("print_config")
        try:
            cfg = make_config(preset, config_file, kwargs)
            if print_config:
                typer.echo(to_yaml(cfg))
                return
            require_extra("train", "agentworld train")
            from .trainer import train
            summary = train(cfg)
        except (TrainError, EnvWorkerError) as e:
            # User errors and lost env workers: one line and a non-zero exit, never a traceback.
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(2) from None
        out = summary["output_dir"]
        typer.echo(f"done: {out}/report.md, {out}/metrics.jsonl, {out}/curves.png")

    params = [
        inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, annotation=Optional[str],
                          default=typer.Option(None, "--config", help="YAML file of config fields.")),
        inspect.Parameter("preset", inspect.Parameter.KEYWORD_ONLY, annotation=Optional[str],
                          default=typer.Option(None, "--preset", help=f"One of: {', '.join(sorted(PRESETS))}.")),
        inspect.Parameter("print_config", inspect.Parameter.KEYWORD_ONLY, annotation=bool,
                          default=typer.Option(False, "--print-config", help="Print the resolved config and exit.")),
    ]
    for f in fields:
        typ = _cli_type(hints[f.name])
        flag = "--" + f.name.replace("_", "-")
        if typ is bool:
            decl = (f"{flag}/--no-{f.name.replace('_', '-')}",)
        else:
            decl = (flag,)
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        help_text = docs.get(f.name, "") + f" [default: {default!r}]"
        params.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, annotation=Optional[typ],
                                        default=typer.Option(None, *decl, help=help_text, show_default=False)))
    train_command.__signature__ = inspect.Signature(params)
    app.command("train", help="Train a policy with multi-turn GRPO on agentworld envs.")(train_command)
    from .evolve import register as register_evolve

    register_evolve(app)


def main() -> None:  # pragma: no cover - convenience for `python -m agentworld_rl.cli`
    app = typer.Typer(add_completion=False)
    register(app)

    @app.callback()
    def _root():
        """agentworld trainer."""

    app()


if __name__ == "__main__":  # pragma: no cover
    main()
