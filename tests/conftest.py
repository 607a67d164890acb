"""Shared fixtures: a private artefact cache, one torch thread, the toy environment."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

# Keep a busy 2-core box usable: one torch thread (two ran 15x slower under load).
os.environ.setdefault("OMP_NUM_THREADS", "1")
try:
    import torch

    torch.set_num_threads(1)
except ImportError:  # pragma: no cover - torch comes with the train extra; the suite's tests do not need it
    pass


@pytest.fixture(scope="session")
def toy_env_id() -> str:
    import agentworld_envs
    from toy_spec import toy_spec

    return agentworld_envs.register_spec(toy_spec())


@pytest.fixture(scope="module")
def private_cache(tmp_path_factory):
    """A throwaway artefact cache for one test module (the tiny models and runs it builds)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("AGENTWORLD_CACHE", str(tmp_path_factory.mktemp("aw-cache")))
    yield
    mp.undo()
