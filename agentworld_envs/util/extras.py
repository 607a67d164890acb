"""Optional stacks (pip extras) and the one-line error a feature gives when its extra is missing.

``pip install agentworld`` is the environment suite alone: every env, the catalogue, synthesis,
the arena's scripted policies and the env commands. The rest comes in extras, named here by the
modules they provide (``tests/test_packaging.py`` checks this table against ``pyproject.toml``):

* ``train`` — the bundled GRPO trainer (``agentworld train`` / ``evolve``, ``eval --policy model``);
* ``mcp`` — ``agentworld serve-mcp``;
* ``ray`` — ``--env-workers ray``.

A feature checks its extra with :func:`require` before importing anything from it, so a bare
install says which extra to install in one line (a :class:`MissingExtraError`, which the CLI
prints as ``agentworld: error: ...`` with exit status 2) instead of a traceback from deep inside
an import. :func:`missing` only looks for the modules (``importlib.util.find_spec``): it imports
nothing.
"""

from __future__ import annotations

import importlib.util

from .errors import UserInputError

#: Extra -> the top-level modules it installs that agentworld imports.
EXTRAS: dict[str, tuple[str, ...]] = {
    "train": ("torch", "transformers", "trl", "accelerate", "peft", "datasets", "matplotlib", "gguf"),
    "mcp": ("mcp", "mcp_types", "anyio", "uvicorn"),
    "ray": ("ray",),
}


class MissingExtraError(UserInputError):
    """A feature whose optional dependencies are not installed; the message names the extra."""


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here (empty when the extra is installed)."""
    return [m for m in EXTRAS[extra] if not _importable(m)]


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken or half-removed install
        return False


def require(extra: str, feature: str) -> None:
    """Raise :class:`MissingExtraError` naming ``extra`` unless every module of it is importable.

    ``feature`` is what the user asked for, e.g. ``"agentworld train"`` or ``"--policy model"``.
    """
    absent = missing(extra)
    if absent:
        raise MissingExtraError(message(extra, feature, absent))


def message(extra: str, feature: str, absent: list[str] | None = None) -> str:
    """``<feature> needs the '<extra>' extra (<module> is not installed): pip install 'agentworld[<extra>]'``."""
    if absent is None:
        absent = missing(extra) if extra in EXTRAS else []
    why = f" ({absent[0]} is not installed)" if absent else ""
    return f"{feature} needs the '{extra}' extra{why}: pip install 'agentworld[{extra}]'"
