"""The catalogue: environments by id, built from their named sources and cached.

:mod:`.catalog` resolves a manifest entry's source (``"module:attr"`` spec builders and task
sources: hand-built domains, synthesis, inline specs), builds and caches the bundle;
:mod:`.overlay` and :mod:`.taskcheck` add and check task overlays; :mod:`.fresh_tasks` makes new
verified tasks for a catalogued env. Above the sources it names, below the env that loads it.
"""
