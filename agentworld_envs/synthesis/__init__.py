"""Synthesis: registry themes → environment specs (schema, data, tools, tool tests) → tasks.

Importing this package registers the ``synth`` source with the catalogue, so manifest
entries with ``"source": "synth"`` build on first ``gym.make``.
"""

from __future__ import annotations

from ..catalog import spec_builder
from .builder import cached_spec, synthesize, theme_spec

spec_builder("synth")(theme_spec)

from .. import tasks as _tasks  # noqa: E402,F401  (registers the "synth" task source and tasks.* verifiers)

__all__ = ["cached_spec", "synthesize", "theme_spec"]
