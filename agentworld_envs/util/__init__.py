"""Helpers that know nothing of environments (the lowest layer of the suite).

User-facing errors and the one-line CLI exit (:mod:`.errors`), named plug-in registries resolved
from ``"module:attr"`` strings (:mod:`.registry`), integrity-checked cache files
(:mod:`.cachefile`), safe reads of user files (:mod:`.inputs`), output directories a command owns
(:mod:`.outputs`), which extra a feature needs (:mod:`.extras`), worker process pools
(:mod:`.procs`). Imports nothing from the rest of the suite but ``env_registry``.
"""
