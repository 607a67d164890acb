"""The catalogue: taxonomy, themes, entity library and the manifest of registered ids.

This package is data plus a small reader. It imports nothing from the engine, so
the flow stays one way: ``env_registry`` (data) → ``agentworld_envs`` (engine that
registers and builds) → wrappers → ``agentworld_rl`` (trainer).

``manifest.json`` lists every registered environment::

    {"name": "retail", "id": "agentworld/retail-v0", "split": "train",
     "l1": "commerce-retail", "l2": "online-stores", "l3": "Online retail back office",
     "source": "handbuilt"}
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any, Iterable

SPLITS = ("train", "arena")


class UnknownEnvError(KeyError):
    """No registered environment has this name or id (a ``KeyError``, for existing callers)."""

    def __str__(self) -> str:  # KeyError would print the repr of its message, quotes and all
        return str(self.args[0]) if self.args else "unknown environment"


def _read(name: str) -> Any:
    return json.loads(resources.files(__name__).joinpath(name).read_text(encoding="utf-8"))


@functools.cache
def manifest() -> tuple[dict[str, Any], ...]:
    """Every registered environment, in catalogue order."""
    return tuple(_read("manifest.json")["envs"])


@functools.cache
def _by_name() -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in manifest()}


def entry(name_or_id: str) -> dict[str, Any]:
    """The manifest entry for ``retail``, ``retail-v0`` or ``agentworld/retail-v0``."""
    name = name_or_id.removeprefix("agentworld/")
    if name.endswith("-v0"):
        name = name[:-3]
    try:
        return _by_name()[name]
    except KeyError:
        raise UnknownEnvError(f"unknown environment {name_or_id!r}; see `agentworld list`") from None


def select(ids: Iterable[str] | None = None, l1: Iterable[str] | str | None = None,
           split: str | None = None) -> list[dict[str, Any]]:
    """Manifest entries filtered by ids, first-level categories and split (all optional)."""
    if ids:
        chosen = [entry(i) for i in ids]
    else:
        chosen = list(manifest())
    if l1:
        cats = {l1} if isinstance(l1, str) else set(l1)
        chosen = [e for e in chosen if e["l1"] in cats]
    if split:
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}")
        chosen = [e for e in chosen if e["split"] == split]
    return chosen


@functools.cache
def taxonomy() -> dict[str, Any]:
    out: dict[str, Any] = _read("taxonomy.json")
    return out


@functools.cache
def themes() -> tuple[dict[str, Any], ...]:
    """Every third-level theme, with its ``l1`` added, in file order (``themes/<l1>.json``)."""
    out = []
    root = resources.files(__name__).joinpath("themes")
    for l1 in taxonomy()["l1"]:
        path = root.joinpath(f"{l1['slug']}.json")
        if not path.is_file():
            continue
        for theme in json.loads(path.read_text(encoding="utf-8"))["themes"]:
            out.append({**theme, "l1": l1["slug"]})
    return tuple(out)


@functools.cache
def theme(slug: str) -> dict[str, Any]:
    for t in themes():
        if t["slug"] == slug:
            return t
    raise KeyError(f"unknown theme {slug!r}")


@functools.cache
def entity_modules() -> dict[str, dict[str, Any]]:
    """Entity modules of the domain library, by key (``library/entities/*.json``)."""
    modules: dict[str, dict[str, Any]] = {}
    root = resources.files(__name__).joinpath("library/entities")
    for path in sorted(root.iterdir(), key=lambda p: p.name):
        if path.name.endswith(".json"):
            modules.update(json.loads(path.read_text(encoding="utf-8")))
    return modules


@functools.cache
def vocabularies() -> dict[str, dict[str, Any]]:
    """Where each ``module.column`` fits, and the values it takes elsewhere (``library/vocabularies/*.json``).

    ``{"device.device_type": {"fits": ["iot-smart-home"], "variants": [{"for": ["sports-fitness"],
    "values": [...]}]}}``: a theme whose L1 or L2 slug is in ``fits`` (or ``fits`` has ``"*"``) uses the
    module's own values; otherwise the first variant naming its L2, then its L1; otherwise the column is
    not generated in that theme. Columns without an entry fit everywhere.
    """
    out: dict[str, dict[str, Any]] = {}
    root = resources.files(__name__).joinpath("library/vocabularies")
    if root.is_dir():
        for path in sorted(root.iterdir(), key=lambda p: p.name):
            if path.name.endswith(".json"):
                out.update(json.loads(path.read_text(encoding="utf-8")))
    return out


@functools.cache
def scales() -> dict[str, list[dict[str, Any]]]:
    """The range a module's money column takes where its default does not fit the business
    (``library/scales.json``): ``{"contract.total_value": [{"for": ["wellness-allied-health"], "min": 800,
    "max": 3500}, ...]}``. A theme takes the first range naming its slug, else its L2; otherwise the module's
    own range."""
    path = resources.files(__name__).joinpath("library/scales.json")
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


@functools.cache
def words(name: str) -> dict[str, Any]:
    """A word list of the domain library (``library/words/<name>.json``): ``job_titles`` (by sub-category,
    and the fallback), ``themes`` (a theme's own words for a renamed record's kinds: ``{slug: {"entity.column":
    [values]}}``)."""
    path = resources.files(__name__).joinpath(f"library/words/{name}.json")
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


@functools.cache
def workflows() -> dict[str, dict[str, Any]]:
    """Workflow modules (state machines) of the domain library."""
    out: dict[str, dict[str, Any]] = _read("library/workflows.json")
    return out
