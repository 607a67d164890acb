"""Worlds that make sense: vocabularies, key names, value semantics, enforced policies, task shapes, lint."""

from __future__ import annotations

import copy
import json
import os
import sqlite3
import subprocess
import sys

import pytest

import env_registry
from agentworld_envs.catalogue import catalog
from agentworld_envs.engine import state
from agentworld_envs.audit.lint import check_data, check_instructions, check_tools, check_vocabulary, lint_built, lint_env
from agentworld_envs.engine.language import field_question, set_flag_phrase, singular, verb_phrase
from agentworld_envs.engine.rules import Rule
from agentworld_envs.synthesis import semantics
from agentworld_envs.engine.tools import ToolError

#: One synthesised env from different first-level categories, plus the hand-built retail env.
ENVS = ["wine-club-subscriptions", "smart-thermostat-schedules", "helicopter-transfer-booking", "retail"]


@pytest.fixture(scope="module")
def bundles(private_cache):
    return {name: catalog.load_bundle(name) for name in ENVS}


# ------------------------------------------------------------------------------------ the rules


def test_foreign_keys_are_named_after_their_target():
    assert semantics.fk_name("repository_id", "upgrade_campaign") == "upgrade_campaign_id"
    assert semantics.fk_name("assigned_agent_id", "nurse") == "assigned_nurse_id"
    assert semantics.fk_name("reviewed_by_id", "nurse") == "reviewed_by_nurse_id"
    assert semantics.fk_name("customer_id", "customer") == "customer_id"
    assert semantics.fk_matches_target("assigned_nurse_id", "nurses")
    assert semantics.fk_matches_target("item_id", "order_items")          # the target's head noun
    assert not semantics.fk_matches_target("repository_id", "upgrade_campaigns")
    assert not semantics.fk_matches_target("payment_id", "routes")


def test_every_synthesised_foreign_key_names_its_target():
    from agentworld_envs.synthesis.schema import build_entities

    bad = []
    for theme in env_registry.themes():
        for ent in build_entities(theme):
            bad += [f"{theme['slug']}:{ent.table}.{fk}" for fk, target in ent.refs.items()
                    if not semantics.fk_matches_target(fk, target)]
    assert bad == []


def test_a_column_takes_its_categorys_vocabulary_or_is_dropped():
    vocab = env_registry.vocabularies()
    key, entry = next((k, e) for k, e in vocab.items() if e.get("variants") and "*" not in e.get("fits", []))
    module, column = key.split(".")
    variant = entry["variants"][0]
    slug = variant["for"][0]
    l1 = next(x["slug"] for x in env_registry.taxonomy()["l1"] if x["slug"] == slug or slug in [y["slug"] for y in x["l2"]])
    theme = {"l1": l1, "l2": slug if slug != l1 else "no-such-l2"}
    assert semantics.vocabulary_for(theme, module, column) == (True, variant["values"])
    elsewhere = {"l1": "nowhere", "l2": "nothing"}
    assert semantics.vocabulary_for(elsewhere, module, column) == (False, None)
    assert semantics.vocabulary_for(elsewhere, "no_module", "x") == (True, None)


def test_dates_follow_a_records_life():
    pairs = semantics.ordered_pairs(["created_at", "starts_at", "ends_at", "updated_at"])
    assert ("starts_at", "ends_at", True) in pairs
    assert ("created_at", "starts_at", False) in pairs
    # Last touched follows the making, not the end: an end may still lie ahead, an update may not.
    assert ("created_at", "updated_at", False) in pairs
    wf = {"states": ["pending", "shipped", "delivered", "returned"],
          "transitions": [{"from": ["pending"], "to": "shipped"}, {"from": ["shipped"], "to": "delivered"},
                          {"from": ["delivered"], "to": "returned"}]}
    assert semantics.status_stamps(["delivered_at", "note"], wf) == {"delivered_at": {"delivered", "returned"}}


def test_english_helpers():
    assert verb_phrase("start_maintenance", "the logger") == "start maintenance on the logger"
    assert verb_phrase("mark_paid", "invoice INV-1") == "mark invoice INV-1 as paid"
    assert field_question("placed_at", "order ORD-1") == "When was order ORD-1 placed?"
    assert field_question("listed_on", "the wine") == "When was the wine listed?"
    assert set_flag_phrase("is_vip", True, "customer C-1") == "Mark customer C-1 as vip."
    assert singular("lab_analyses") == "lab analysis"


# ----------------------------------------------------------------------------- built environments


def test_sample_envs_lint_clean(bundles):
    for name, bundle in bundles.items():
        conn = state.episode_connection(bundle.golden)
        violations = lint_built(name, bundle.spec, conn, bundle.tasks)
        conn.close()
        assert violations == [], (name, [v.to_json() for v in violations[:5]])


def test_rules_are_stated_and_enforced(bundles):
    """Every rule is in the policy; the tool refuses a row breaking it and accepts one meeting it."""
    checked = 0
    for name in ENVS[:3]:
        bundle = bundles[name]
        rules = [Rule.from_json(r) for r in bundle.spec.get("rules", [])]
        assert rules, name
        from agentworld_envs.tasks.runner import Runner

        runner = Runner(bundle.spec, bundle.golden, bundle.tools)
        for rule in rules:
            assert rule.text in bundle.spec["policy"]
            if rule.kind in ("quota", "bound", "duty"):
                # test_quota_is_enforced_on_create; test_world_coherence (a theme's stated limit); a duty is no
                # tool's (test_task_headroom)
                continue
            tool = next(t for t in bundle.spec["tools"] if t["name"] == rule.tool)
            impl = tool["impl"]
            marks = ", ".join("?" * len(impl["from"]))
            for meets in (True, False):
                cond = rule.sql(bundle.spec["now"])
                row = runner.conn.execute(
                    f'SELECT id FROM "{rule.table}" WHERE "{impl["column"]}" IN ({marks}) AND '
                    f'{"" if meets else "NOT "}({cond}) LIMIT 1', tuple(impl["from"])).fetchone()
                if row is None:
                    continue
                args = {impl["key"]["param"]: row[0]}
                if "reason" in tool["parameters"].get("properties", {}):
                    args["reason"] = "requested by the customer"
                runner.conn.execute("SAVEPOINT t")
                try:
                    if meets:
                        assert runner.call(rule.tool, args)["updated"][impl["column"]] == impl["to"]
                    else:
                        with pytest.raises(ToolError) as err:
                            runner.call(rule.tool, args)
                        assert err.value.code == "precondition_failed" and "Policy:" in str(err.value)
                    checked += 1
                finally:
                    runner.conn.execute("ROLLBACK TO t")
                    runner.conn.execute("RELEASE t")
        runner.close()
    assert checked >= 4


def test_quota_is_enforced_on_create(bundles):
    """A parent at its quota of open records cannot get another; one below it can."""
    from agentworld_envs.tasks.runner import Runner

    bundle = bundles["wine-club-subscriptions"]
    rule = next(Rule.from_json(r) for r in bundle.spec["rules"] if r["kind"] == "quota")
    assert rule.text in bundle.spec["policy"]
    tool = next(t for t in bundle.spec["tools"] if t["name"] == rule.tool)
    parent = tool["impl"]["table"]
    parent_table = next(c["references"].split(".")[0] for t in bundle.spec["tables"] if t["name"] == parent
                        for c in t["columns"] if c["name"] == rule.column)
    runner = Runner(bundle.spec, bundle.golden, bundle.tools)
    count = rule.active_count(f'"{parent_table}".id')
    full = runner.conn.execute(f'SELECT id FROM "{parent_table}" WHERE {count} >= ? LIMIT 1', (int(rule.value),)).fetchone()[0]
    room = runner.conn.execute(f'SELECT id FROM "{parent_table}" WHERE {count} < ? LIMIT 1', (int(rule.value),)).fetchone()[0]
    template = runner.conn.execute(f'SELECT * FROM "{parent}" LIMIT 1')
    row = dict(zip([d[0] for d in template.description], template.fetchone()))
    args = {k: row[k] for k in tool["parameters"].get("required", []) if k in row}
    unique = {c["name"] for t in bundle.spec["tables"] if t["name"] == parent for c in t["columns"] if c.get("unique")}
    for k in args:
        if k in unique and isinstance(args[k], str):
            args[k] = args[k] + "-NEW"   # unique codes stay unique
    with pytest.raises(ToolError) as err:
        runner.call(rule.tool, {**args, rule.column: full})
    assert err.value.code == "precondition_failed" and rule.text in str(err.value), str(err.value)
    assert runner.call(rule.tool, {**args, rule.column: room})["created"][rule.column] == room
    runner.close()


def test_new_task_shapes_and_their_traps(bundles):
    shapes = {t["knobs"]["shape"] for name in ENVS[:3] for t in bundles[name].tasks}
    assert {"rule_threshold", "time_window", "create_record"} & shapes
    traps = [(name, t) for name in ENVS[:3] for t in bundles[name].tasks
             if t["knobs"]["family"] in ("rule_threshold_trap", "time_window_trap", "quota_trap")]
    assert traps
    import gymnasium as gym

    for name, task in traps:
        env = gym.make(f"agentworld/{name}-v0").unwrapped
        env.reset(options={"task_id": task["id"]})
        # A refusal that does not say why (no limit, no value) earns nothing; the reference does.
        assert env.verify("I'm sorry, I can't do that because of the policy.")[0] == 0.0
        # the reference, played through the env (a refusal needs the lookups that show the blocking value)
        env.reset(options={"task_id": task["id"]})
        for action in env.solution_actions():
            _, reward, terminated, _, _ = env.step(action)
        assert terminated and reward == 1.0
        env.close()


def test_stats_report_shapes(private_cache):
    from agentworld_envs.audit.build_all import build_many, registry_stats

    stats = registry_stats(build_many(ENVS[:2], jobs=1))
    assert sum(stats["tasks_by_shape"].values()) == stats["tasks_total"]
    assert stats["lint_violations"] == 0
    from agentworld_envs.audit.lint import WORLD_RULES

    assert all(stats["lint_by_rule"][r] == 0 for r in WORLD_RULES)


# ---------------------------------------------------------------------------- the linter can fail


def _one(violations, rule):
    return [v for v in violations if v.rule == rule]


def test_lint_catches_broken_specs(bundles):
    spec = copy.deepcopy(bundles["wine-club-subscriptions"].spec)
    table = next(t for t in spec["tables"] if any(c.get("references") for c in t["columns"]))
    fk = next(c for c in table["columns"] if c.get("references"))
    fk["name"] = "repository_id"
    from agentworld_envs.audit.lint import check_fk_naming

    assert _one(check_fk_naming(spec), "fk_naming")
    # A value from another category's vocabulary in an enum column.
    tags = {spec["taxonomy"]["l1"], spec["taxonomy"]["l2"], "*"}
    foreign = next(v for v, owners in semantics.vocabulary_index().items() if owners and not owners & tags)
    col = next(c for t in spec["tables"] for c in t["columns"] if c.get("enum") and c["name"] != "status")
    col["enum"] = list(col["enum"]) + [foreign]
    assert _one(check_vocabulary(spec, "wine-club-subscriptions"), "vocab_leak")
    spec["tools"][0]["name"] += "_2"
    spec["tools"][1]["description"] = "Does a thing."
    found = list(check_tools(spec))
    assert _one(found, "tool_name") and _one(found, "tool_returns")


def test_lint_catches_impossible_data():
    spec = {"now": "2026-06-15T12:00:00Z", "tools": [
        {"name": "deliver_order", "impl": {"kind": "transition", "table": "orders", "column": "status",
                                           "from": ["shipped"], "to": "delivered"}}],
            "tables": [{"name": "orders", "columns": [
                {"name": "id", "type": "INTEGER"}, {"name": "status", "type": "TEXT", "enum": ["shipped", "delivered"]},
                {"name": "starts_at", "type": "TEXT"}, {"name": "ends_at", "type": "TEXT"},
                {"name": "delivered_at", "type": "TEXT"}, {"name": "discount_percent", "type": "REAL"},
                {"name": "file_name", "type": "TEXT"}, {"name": "mime_type", "type": "TEXT"},
                {"name": "notes", "type": "TEXT"}]},
                {"name": "customers", "columns": [{"name": "id", "type": "INTEGER"}, {"name": "date_of_birth", "type": "TEXT"}]}]}
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT, starts_at TEXT, ends_at TEXT, delivered_at TEXT, "
                 "discount_percent REAL, file_name TEXT, mime_type TEXT, notes TEXT)")
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, date_of_birth TEXT)")
    good = ("delivered", "2026-01-01T10:00:00Z", "2026-01-02T10:00:00Z", "2026-01-03T10:00:00Z", 10, "a.pdf",
            "application/pdf", "Follow up next week.")
    conn.execute("INSERT INTO orders VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?)", good)
    conn.execute("INSERT INTO customers VALUES (1, '1980-05-01')")
    assert list(check_data(spec, conn)) == []
    conn.execute("INSERT INTO orders VALUES (2, 'delivered', '2026-01-05T10:00:00Z', '2026-01-02T10:00:00Z', NULL, 150, "
                 "'pressure.flac', 'application/pdf', 'responsibility owner east ball Republican')")
    conn.execute("INSERT INTO customers VALUES (2, '2017-03-01')")
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, subtotal REAL, tax_amount REAL, total_amount REAL)")
    spec["tables"].append({"name": "invoices", "columns": [{"name": n, "type": "REAL"} for n in ("subtotal", "tax_amount", "total_amount")]})
    conn.execute("INSERT INTO invoices VALUES (1, 100, 8, 108), (2, 100, 8, 250)")
    rules = {v.rule for v in check_data(spec, conn)}
    assert {"date_order", "status_stamp", "value_range", "mime_mismatch", "word_salad", "impossible"} <= rules


def test_lint_catches_instruction_smells():
    spec = {"tables": [{"name": "customers", "columns": [{"name": "is_vip"}, {"name": "loyalty_tier"}]}]}
    tasks = [{"id": f"t{i}", "instruction": text} for i, text in enumerate([
        "Please change the is vip of customer C-1 to yes.", "Please cancel the the order ORD-1.",
        "What is the listed on of the wine?", "Log a audit event for ORD-1.", "Hi, Please cancel ORD-1.",
        "Please start maintenance the reefer logger RL-1.", "Set loyalty_tier of C-1 to gold.",
        "Please cancel the order of the.", "Please cancel order ORD-1.",
        "Which repository named option-pm-someone-a?"])]     # a hyphenated name's last part is no dangling word
    flagged = {v.where for v in check_instructions(spec, tasks)}
    assert flagged == {f"t{i}" for i in range(8)}


def test_lint_cli(private_cache):
    out = subprocess.run([sys.executable, "-m", "agentworld_envs.cli", "lint", "retail", "--json", "--jobs", "1"],
                         capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    result = json.loads(out.stdout)
    assert result["envs"] == result["envs_linted"] == 1 and result["violations"] == 0
    bad = subprocess.run([sys.executable, "-m", "agentworld_envs.cli", "lint", "no-such-env"], capture_output=True, text=True)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert lint_env("retail") == []


def test_scales_name_money_columns_and_the_businesses_that_use_them():
    """``library/scales.json``: every key is a money column of an entity module, every range is positive and
    spread, and every slug it is for is a theme using that module or the sub-category of one."""
    modules = env_registry.entity_modules()
    users: dict[str, set[str]] = {}
    for t in env_registry.themes():
        for e in t["entities"]:
            users.setdefault(e["module"], set()).update({t["slug"], t["l2"]})
    scales = env_registry.scales()
    assert len(scales) > 100
    for key, ranges in scales.items():
        module, column = key.split(".")
        col = next(c for c in modules[module]["columns"] if c["name"] == column)
        assert col["gen"]["gen"] == "money", key
        slugs = [s for r in ranges for s in r["for"]]
        assert len(slugs) == len(set(slugs)) and set(slugs) <= users[module], key
        assert all(0 < r["min"] < r["max"] for r in ranges), key


def test_a_money_figure_is_on_its_business_scale():
    """A doula agency's support package (module ``contract``, 5,000 to 2,000,000 by default) costs what a
    birth support package costs; a theme's own range comes before its sub-category's."""
    from agentworld_envs.engine import state
    from agentworld_envs.synthesis.builder import synthesize

    theme = env_registry.theme("doula-birth-support")
    assert semantics.money_scale(theme, "contract", "total_value") == {"min": 800.0, "max": 3500.0}
    assert semantics.money_scale(theme, "contract", "no_such_column") is None
    ranges = env_registry.scales()["contract.total_value"]
    own = next(r for r in ranges if any(s in {t["slug"] for t in env_registry.themes()} for s in r["for"]))
    slug = own["for"][0]
    t = env_registry.theme(slug)
    assert semantics.money_scale(t, "contract", "total_value") == {"min": own["min"], "max": own["max"]}
    spec, _ = synthesize(theme)
    conn = state.episode_connection(state.build_database(spec))
    lo, hi = conn.execute("SELECT MIN(total_value), MAX(total_value) FROM support_packages").fetchone()
    assert 800 <= lo and hi <= 3500


def test_a_record_keeps_only_the_columns_its_business_would_hold():
    """A theme's words may drop a module column its record would not hold (``"<entity>.<column>": []``): a call
    tracker's phone number built from the API-key module has no key prefix, scope or rate limit. Every such
    entry names a column of that entity's module, never its label."""
    from agentworld_envs.engine import state
    from agentworld_envs.synthesis.builder import synthesize

    modules = env_registry.entity_modules()
    dropped = 0
    for slug, entry in env_registry.words("themes").items():
        if slug == "about":
            continue
        theme = env_registry.theme(slug)
        ents = {e.get("as", e["module"]): modules[e["module"]] for e in theme["entities"]}
        for key, value in entry.items():
            if value != [] or key == "rules":
                continue
            ent, _, col = key.partition(".")
            assert ent in ents and col in {c["name"] for c in ents[ent]["columns"]} and col != ents[ent]["label"], key
            dropped += 1
    assert dropped > 5000
    spec, _ = synthesize(env_registry.theme("call-tracking-phone-attribution"))
    conn = state.episode_connection(state.build_database(spec))
    cols = {r[1] for r in conn.execute("PRAGMA table_info(tracking_numbers)")}
    assert cols and not cols & {"key_prefix", "scope", "rate_limit_per_minute", "allowed_ip"}
