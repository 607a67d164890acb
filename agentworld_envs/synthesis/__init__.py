"""Synthesis: registry themes → environment specs (schema, data, tools, tool tests) → tasks.

The catalogue names this package's spec builder by string
(``"agentworld_envs.synthesis.builder:theme_spec"``, the ``synth`` source in
:data:`agentworld_envs.catalogue.catalog.SPEC_BUILDERS`); importing the package registers nothing.
"""

from __future__ import annotations

from .builder import cached_spec, synthesize, theme_spec

__all__ = ["cached_spec", "synthesize", "theme_spec"]
