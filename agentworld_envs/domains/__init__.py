"""Hand-built domains: Python modules that build a spec and register their Python tools.

A domain module ``agentworld_envs.domains.<name>`` exposes ``build_spec() -> dict`` and
registers its tools, data generator and verifiers (via the engine's decorators) on import.
"""

from __future__ import annotations

import importlib
from types import ModuleType


def load(name: str) -> ModuleType:
    """Import (and so register) the hand-built domain ``name``."""
    return importlib.import_module(f"{__name__}.{name}")


def load_owner(hook: str) -> None:
    """Import the hand-built domain that owns the Python hook ``domain.thing`` (or the generator ``domain``).

    The loader of the engine's hook registries (Python tools, verifiers, data generators), set by
    the catalogue: the engine modules that hold those registries never name a domain.
    """
    load(hook.split(".")[0])
