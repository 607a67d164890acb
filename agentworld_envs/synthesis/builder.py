"""Theme → validated spec: schema, seeded data, tools, tool unit tests; cached by content hash.

Everything is a pure function of the registry (theme, entity modules, workflows), this
package's ``SYNTH_VERSION`` and the Faker release, so any machine builds byte-identical
specs and golden databases.
"""

from __future__ import annotations

import functools
import inspect
import zlib
from dataclasses import dataclass, field
from typing import Any

import env_registry

from ..util import cachefile
from ..engine import datagen, state
from ..engine.spec import content_hash, validate_spec
from .naming import title
from ..engine.rules import VERIFY_RULE
from .policies import Rule, about_text, child_listings, plan_rules
from .schema import build_entities, lifecycle_text, data_recipe, schema_signature, tables_of
from .toolcheck import NOW, check_tool
from .toolgen import generate_tools

#: Bump when synthesis output changes for the same registry, so cached specs are rebuilt.
SYNTH_VERSION = "3"
#: An environment whose surviving tools are fewer than this is rejected.
MIN_TOOLS = 15


@dataclass
class BuildReport:
    name: str
    tools_generated: int = 0
    tools_kept: int = 0
    dropped: dict[str, list[str]] = field(default_factory=dict)
    rejected: str | None = None
    schema_signature: str = ""
    rows: int = 0

    def to_json(self) -> dict[str, Any]:
        return self.__dict__.copy()


class EnvRejected(RuntimeError):
    pass


def _policy(theme: dict[str, Any], entities, enforced: list[Rule] = (), now: str = NOW) -> str:
    rules = []
    for ent in entities:
        if ent.workflow:
            # every status the records can hold is named, so none in the data is news to the agent
            states = ", ".join(ent.workflow.get("states", ()))
            rules.append(f"- {title(ent.singular).capitalize()} records" + (f" (statuses: {states})" if states else "")
                         + f": {lifecycle_text(ent.workflow, ent.singular)}")
    rules += [f"- {text}" for text in dict.fromkeys(rule.text for rule in enforced if rule.enforced)]
    duties = [f"- {text}" for text in dict.fromkeys(rule.text for rule in enforced if not rule.enforced)]
    rules += [
        "- Identify records by the codes, names or e-mails the user gives; look up internal ids with the tools, never guess them.",
        f"- {VERIFY_RULE}",
        "- Make only the changes the request asks for" + (" and the follow-up duties below require" if duties else "")
        + "; leave every other record untouched.",
        "- When a request conflicts with these rules (for example, a status change that is not allowed), change nothing "
        "for that part and say why in your final answer.",
        "- Finish by calling submit; put any requested value in `answer`.",
    ]
    # The world has one clock: every date in the data, every rule's "before" and "within" is read against it.
    when = datagen.parse_now(now)
    clock = (f"Today is {when:%A} {now[:10]}; the current time is {now} (UTC). Dates in the records and in these "
             "rules are read against it.")
    about = about_text(theme["description"], enforced)
    return (f"You are the operations assistant for {theme['title']}.\n\n{clock}\n\n"
            + (f"About the service: {about}\n\n" if about else "")
            + "Rules (the tools enforce the status and business rules):\n" + "\n".join(rules)
            + ("\n\nFollow-up duties (no tool carries these out: do them yourself, as part of the same request):\n"
               + "\n".join(duties) if duties else ""))


def _seed(slug: str) -> int:
    return zlib.crc32(slug.encode())


def _compose(theme: dict[str, Any]) -> tuple[dict[str, Any], list[Any], list[dict[str, Any]], list[Rule]]:
    """The spec before tools are kept, its entities, the candidate tools and the planned rules.

    Rules are planned before any data exists: each rule rewrites the generators of its table so the
    seeded history obeys it, so the data recipe is written after them."""
    entities = build_entities(theme)
    candidates = generate_tools(entities, theme["title"])
    rules = plan_rules(theme, entities, candidates)
    spec: dict[str, Any] = {
        "spec_version": 1, "id": theme["slug"], "title": theme["title"], "description": theme["description"],
        "taxonomy": {"l1": theme["l1"], "l2": theme["l2"], "l3": theme["title"]},
        "now": NOW, "policy": _policy(theme, entities), "max_turns": 30,
        "tables": tables_of(entities), "data": data_recipe(theme, entities, _seed(theme["slug"])),
        "tools": [],
    }
    return spec, entities, candidates, rules


def compose_spec(theme: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    """The spec of one theme before tools are added (``"tools": []``), and its entities; needs no database."""
    spec, entities, _, _ = _compose(theme)
    return spec, entities


def synthesize(theme: dict[str, Any]) -> tuple[dict[str, Any], BuildReport]:
    """Build the spec of one theme (tools validated against its golden state)."""
    report = BuildReport(theme["slug"])
    spec, entities, candidates, rules = _compose(theme)
    report.schema_signature = content_hash(schema_signature(spec["tables"]))[:16]
    golden = state.golden_bytes(spec)
    report.rows = sum(e.rows for e in entities)
    conn = state.episode_connection(golden)
    # Business rules become preconditions of their tools before the tools are tested, so the tool
    # tests exercise them (an allowed row passes, a row breaking the rule is refused).
    by_name = {t["name"]: t for t in candidates}
    for rule in rules:
        if not rule.enforced:
            continue
        tool = by_name[rule.tool]
        tool["impl"].setdefault("preconditions", []).append(rule.precondition())
        tool["description"] += f" Policy: {rule.text}"
    report.tools_generated = len(candidates)
    for tool in candidates:
        result = check_tool(tool, conn)
        if result.kept:
            spec["tools"].append(tool)
        else:
            report.dropped[tool["name"]] = result.failed[:3]
    conn.close()
    report.tools_kept = len(spec["tools"])
    kept = {t["name"] for t in spec["tools"]}
    listable = child_listings(spec["tools"])
    # a duty needs its follow-up tool, and a listing of the parent's children to find whom it is owed
    rules = [r for r in rules if r.tool in kept and (r.enforced or (r.follow in kept and (r.table, r.column) in listable))]
    spec["policy"] = _policy(theme, entities, rules)
    if rules:
        spec["rules"] = [r.to_json() for r in rules]
    if report.tools_kept < MIN_TOOLS:
        report.rejected = f"only {report.tools_kept} tools passed their tests"
    return spec, report


@functools.cache
def _registry_hash() -> str:
    """Library data + the synthesis code + the data-generation code: any change rebuilds cached specs."""
    from ..engine import language, rules
    from . import naming, policies, schema, semantics, toolcheck, toolgen

    code = "".join(inspect.getsource(m) for m in (naming, schema, toolgen, toolcheck, semantics, policies, language, rules)) \
        + inspect.getsource(synthesize) + inspect.getsource(_compose) + inspect.getsource(_policy)
    return content_hash({"modules": env_registry.entity_modules(), "workflows": env_registry.workflows(),
                         "vocabularies": env_registry.vocabularies(),
                         "words": {n: env_registry.words(n) for n in ("themes", "job_titles", "crafts")},
                         "version": SYNTH_VERSION, "code": code, "datagen": state.builder_source_hash()})[:16]


SPEC_KIND = "synthesised spec"


def _cache_path(theme: dict[str, Any]):
    key = f"{theme['slug']}-{content_hash({'theme': theme, 'registry': _registry_hash()})[:20]}"
    return state.cache_dir() / "specs" / f"{key}.json", key


def _parse_cached(payload: Any) -> tuple[dict[str, Any], BuildReport]:
    """Shape check of a cached spec file (the hash already vouches for its content)."""
    if not isinstance(payload, dict) or not isinstance(payload.get("spec"), dict) \
            or not isinstance(payload.get("report"), dict):
        raise cachefile.CorruptCacheFile("expected {'spec': {...}, 'report': {...}}")
    spec = payload["spec"]
    for field_name in ("id", "tables", "tools", "data", "now"):
        if field_name not in spec:
            raise cachefile.CorruptCacheFile(f"spec has no {field_name!r}")
    return spec, BuildReport(**payload["report"])


def cached_spec(name: str) -> tuple[dict[str, Any], BuildReport]:
    """The spec of theme ``name`` from the cache, or synthesised and cached now.

    A cached spec was validated before it was stored and its bytes are checked against their
    SHA-256 on load, so loading does not pay for jsonschema validation again.
    """
    theme = env_registry.theme(name)
    path, key = _cache_path(theme)
    cached = cachefile.load_json(path, key, SPEC_KIND, _parse_cached)
    if cached is not None:
        return cached
    spec, report = synthesize(theme)
    if not report.rejected:
        validate_spec(spec)
    cachefile.store_json(path, key, SPEC_KIND, {"spec": spec, "report": report.to_json()})
    return spec, report


def theme_spec(entry: dict[str, Any]) -> dict[str, Any]:
    spec, report = cached_spec(entry["name"])
    if report.rejected:
        raise EnvRejected(f"{entry['id']} was rejected by synthesis: {report.rejected}")
    return spec
