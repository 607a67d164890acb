"""One world, one clock, one truth (issue 23): the generators that keep seeded rows coherent, the rules that
drive the data, the words of each trade, and the lint classes that check all of it (each with a planted
violation it must catch)."""

from __future__ import annotations

import copy
import datetime as dt
import importlib.util
import re
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest

import env_registry
from agentworld_envs.engine import datagen, state
from agentworld_envs.audit.lint import (WORLD_RULES, check_arithmetic, check_clock, check_foreign_vocab, check_policy,
                                  check_data, check_rules, check_same_parent, check_world)
from agentworld_envs.engine.rules import Rule
from agentworld_envs.synthesis import semantics
from agentworld_envs.synthesis.builder import synthesize
from agentworld_envs.synthesis.policies import about_text, guarded_states
from agentworld_envs.synthesis.schema import build_entities

NOW = "2026-06-15T12:00:00Z"
SAMPLE = ["tea-ceremony-experiences", "luggage-forwarding-service", "domain-name-aftermarket",
          "workplace-injury-incident-reporting", "renters-insurance-app"]


def _probe():
    path = Path(__file__).resolve().parents[1] / "scripts" / "probe_worlds.py"
    spec = importlib.util.spec_from_file_location("probe_worlds", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def built(private_cache):
    out = {}
    for name in SAMPLE:
        spec, report = synthesize(env_registry.theme(name))
        assert report.rejected is None
        out[name] = spec
    return out


def _conn(spec):
    return state.episode_connection(state.build_database(spec))


# ------------------------------------------------------------------------- the built worlds are coherent


def test_outsider_probe_finds_no_contradiction(private_cache):
    """scripts/probe_worlds.py (independent heuristics) over the issue's worst envs and retail."""
    probe = _probe()
    tally = probe.Tally()
    for name in SAMPLE[:3] + ["retail"]:
        probe.probe_env(name, tally)
    assert sum(tally.checked.values()) > 1000
    assert dict(tally.bad) == {k: 0 for k in tally.bad}, dict(tally.examples)


def test_outsider_probe_finds_nothing_asked_before_delivery_nor_paid_above_gross(private_cache):
    """scripts/probe_worlds.py over the worlds of audit 96: at the stop-48 commit it counted 647 of 1,096 refunds,
    returns and payouts asked or received before their charge was captured or their parcel delivered, and 404 of
    939 payslips paying out more than their gross (or withholding more than it)."""
    probe = _probe()
    tally = probe.Tally()
    for name in ("bicycle-parts-online-shop", "used-phone-trade-in-marketplace", "paye-payroll-bureau",
                 "merchant-payment-gateway"):
        probe.probe_env(name, tally)
    assert tally.checked["before_delivery"] > 500 and tally.checked["net_pay"] > 500
    assert dict(tally.bad) == {k: 0 for k in tally.bad}, dict(tally.examples)


def test_every_world_class_is_clean_on_built_envs(built):
    """The world classes and the data classes (date order, status stamps, ranges) alike: an overdue premium's
    due date has passed, and so has the start of its period, which comes before it."""
    from agentworld_envs.audit.lint import check_data

    for name, spec in built.items():
        conn = _conn(spec)
        assert check_world(name, spec, conn) == [], name
        assert list(check_data(spec, conn)) == [], name


def test_policy_states_the_date_and_only_backed_figures(built):
    for spec in built.values():
        assert "Today is Monday 2026-06-15" in spec["policy"]
    tea = built["tea-ceremony-experiences"]["policy"]
    # The description's unenforced rules ("up to eight guests", "within two days") are not restated.
    assert "eight" not in tea and "two days" not in tea and "Tea masters see session bookings." in tea
    assert about_text("Bags over 30 kg are refused. Staff collect bags.") == "Staff collect bags."


def test_rules_drive_the_seeded_history(built):
    for name, spec in built.items():
        conn = _conn(spec)
        rules = [Rule.from_json(r) for r in spec.get("rules", [])]
        assert rules, name
        for rule in rules:
            assert rule.shapes
            if rule.kind == "quota":
                assert conn.execute(rule.over_quota()).fetchall() == []
                # Some parents sit at the cap, so a quota trap exists.
                count = rule.active_count(f'"{rule.table}"."{rule.column}"')
                assert conn.execute(f'SELECT COUNT(*) FROM "{rule.table}" WHERE {count} = ?', (int(rule.value),)).fetchone()[0]
                continue
            assert rule.guards or rule.kind == "bound"
            n = conn.execute(f'SELECT COUNT(*) FROM "{rule.table}" WHERE {rule.history_breaks(spec["now"])}').fetchone()[0]
            assert n == 0, rule.text


def test_theme_words_and_figures(built):
    tea = built["tea-ceremony-experiences"]
    recipe = tea["data"]["tables"]
    assert set(recipe["experiences"]["columns"]["category"]["values"]) >= {"koicha_ceremony"}
    assert "boat" not in str(recipe["experiences"]["columns"]["category"])
    assert recipe["tea_masters"]["columns"]["job_title"]["values"][:2] == ["Tea Master", "Senior Tea Master"]
    conn = _conn(tea)
    assert conn.execute("SELECT MAX(capacity), MAX(seats_booked > capacity) FROM sessions").fetchone() == (8, 0)
    luggage = _conn(built["luggage-forwarding-service"])
    assert luggage.execute("SELECT MAX(weight_kg) FROM suitcases").fetchone()[0] <= 30
    domain = {c["name"] for t in built["domain-name-aftermarket"]["tables"] if t["name"] == "domain_listings"
              for c in t["columns"]}
    assert not {"condition", "quantity_available"} & domain


def test_renamed_records_keep_no_generic_kinds():
    """Everywhere: a renamed record's kind column is generated only with the theme's words, and no staff
    title comes from Faker's job list."""
    for theme in env_registry.themes()[::25]:
        for ent in build_entities(theme):
            for col, gen in ent.gens.items():
                assert not (gen.get("gen") == "faker" and gen.get("provider") in semantics.FOREIGN_FAKER), (theme["slug"], col)
                if semantics.is_kind_column(ent, col) and gen.get("gen") == "choice":
                    assert gen.get("theme_words"), (theme["slug"], ent.table, col)


# ------------------------------------------------------------------------------- the coherence generators


def _generate(tables, recipe):
    spec = {"now": NOW, "tables": tables, "data": {"seed": 1, "tables": recipe}}
    conn = sqlite3.connect(":memory:")
    for t in tables:
        conn.execute(f'CREATE TABLE "{t["name"]}" ({", ".join(c["name"] for c in t["columns"])})')
    datagen.generate(conn, spec)
    return conn


def test_generators_keep_rows_coherent():
    states = {"gen": "choice", "values": ["scheduled", "done", "cancelled", "partially_paid", "paid"]}
    conn = _generate(
        [{"name": "owners", "columns": [{"name": "id", "primary_key": True}, {"name": "x"}]},
         {"name": "orders", "columns": [{"name": "id", "primary_key": True}, {"name": "owner_id", "references": "owners.id"}]},
         {"name": "rows_", "columns": [{"name": "id", "primary_key": True}] + [{"name": n} for n in (
             "status", "made_at", "starts_at", "changed_at", "due", "paid", "cap", "used", "owner_id", "order_id",
             "other_order_id")]}],
        {"owners": {"rows": 20, "columns": {"x": {"gen": "int", "min": 0, "max": 1}}},
         "orders": {"rows": 60, "columns": {"owner_id": {"gen": "ref", "ref": "owners.id"}}},
         "rows_": {"rows": 400, "columns": {
             "status": states,
             "made_at": {"gen": "datetime", "days": [-200, -7]},
             "starts_at": {"gen": "clock", "inner": {"gen": "after", "of": "made_at", "days": [3, 300]}, "column": "status",
                           "past": ["done"], "future": ["scheduled"], "floor": "made_at", "kind": "datetime"},
             "changed_at": {"gen": "changed", "column": "status", "after": ["made_at", "starts_at"],
                            "windows": {"cancelled": {"before": "starts_at", "hours": 48}}},
             "due": {"gen": "money", "min": 10, "max": 500},
             "paid": {"gen": "paid", "of": "due", "column": "status", "full": ["paid"], "partial": ["partially_paid"],
                      "none": ["scheduled"]},
             "cap": {"gen": "int", "min": 2, "max": 8},
             "used": {"gen": "at_most", "of": "cap", "inner": {"gen": "int", "min": 0, "max": 40}},
             "order_id": {"gen": "ref", "ref": "orders.id", "quota": {"column": "status", "in": ["scheduled"], "cap": 3}},
             "owner_id": {"gen": "lookup", "via": "order_id", "table": "orders", "field": "owner_id",
                          "else": {"gen": "ref", "ref": "owners.id"}},
             "other_order_id": {"gen": "ref", "ref": "orders.id", "same": {"column": "owner_id", "via": "owner_id"}}}}})
    one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
    assert one(f"SELECT COUNT(*) FROM rows_ WHERE status = 'done' AND starts_at >= '{NOW[:10]}'") == 0
    assert one(f"SELECT COUNT(*) FROM rows_ WHERE status = 'scheduled' AND starts_at <= '{NOW[:10]}T23:59:59Z'") == 0
    assert one("SELECT COUNT(*) FROM rows_ WHERE starts_at < made_at") == 0
    assert one(f"SELECT COUNT(*) FROM rows_ WHERE changed_at > '{NOW}' OR changed_at < made_at") == 0
    assert one("SELECT COUNT(*) FROM rows_ WHERE status = 'cancelled' AND "
               "(julianday(starts_at) - julianday(changed_at)) * 24 < 48") == 0
    assert one("SELECT COUNT(*) FROM rows_ WHERE status = 'paid' AND paid != due") == 0
    assert one("SELECT COUNT(*) FROM rows_ WHERE status = 'partially_paid' AND NOT (paid > 0 AND paid < due)") == 0
    assert one("SELECT COUNT(*) FROM rows_ WHERE status = 'scheduled' AND paid != 0") == 0
    assert one("SELECT COUNT(*) FROM rows_ WHERE used > cap") == 0
    assert one("SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM rows_ WHERE status = 'scheduled' GROUP BY order_id)") <= 3
    assert one("SELECT COUNT(*) FROM rows_ r JOIN orders o ON o.id = r.order_id WHERE r.owner_id != o.owner_id") == 0
    assert one("SELECT COUNT(*) FROM rows_ r JOIN orders o ON o.id = r.other_order_id WHERE r.owner_id != o.owner_id") == 0
    assert one("SELECT COUNT(*) FROM rows_ WHERE status = 'done'") > 20   # the constraints did not empty a status


def test_guarded_states_follow_the_workflow():
    booking = env_registry.workflows()["booking"]
    assert guarded_states(booking, "checked_in") == ("checked_in", "completed")
    assert guarded_states(booking, "cancelled") == ("cancelled",)
    invoice = env_registry.workflows()["invoice"]
    assert guarded_states(invoice, "paid") == ("paid",)


# ------------------------------------------------------------------------ lint: a planted violation each


WF = {"states": ["scheduled", "done", "active", "overdue"], "transitions": [],
      "clock": {"scheduled": {"start": "future"}, "done": {"start": "past"}, "active": {"end": "future"},
                "overdue": {"due": "past"}},
      "paid": {"full": ["done"], "partial": ["active"]}}


def _world(rows, extra_cols=()):
    cols = ["id", "status", "starts_at", "ends_on", "due_date", "created_at", "status_changed_at", "capacity",
            "seats_booked", "amount_due", "amount_paid", "fee", *extra_cols]
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE TABLE sessions ({', '.join(cols)})")
    conn.executemany(f"INSERT INTO sessions VALUES ({', '.join('?' * len(cols))})", rows)
    spec = {"now": NOW, "title": "Tea", "policy": "You are the assistant. Today is Monday 2026-06-15.",
            "tables": [{"name": "sessions", "columns": [{"name": c} for c in cols]}], "tools": [], "data": {"tables": {}}}
    return spec, conn, {"sessions": SimpleNamespace(workflow=WF, roles=["event"], key="tour_departure", singular="session")}


GOOD = (1, "scheduled", "2026-07-01T10:00:00Z", "2026-07-02", "2026-07-10", "2026-05-01T10:00:00Z",
        "2026-05-02T10:00:00Z", 8, 6, 100.0, 0.0, 300.0)


def test_lint_clock_status():
    spec, conn, ents = _world([GOOD])
    assert list(check_clock(spec, conn, ents)) == []
    bad = [GOOD, (2, "scheduled", "2026-05-01T10:00:00Z", *GOOD[3:]),            # scheduled in the past
           (3, "done", "2026-08-01T10:00:00Z", *GOOD[3:]),                       # done in the future
           (4, "active", GOOD[2], "2025-08-29", *GOOD[4:]),                      # active but ended
           (5, "overdue", GOOD[2], GOOD[3], "2027-03-29", *GOOD[5:]),            # overdue, not yet due
           (6, "scheduled", *GOOD[2:5], "2026-09-01T00:00:00Z", *GOOD[6:])]      # made after now
    spec, conn, ents = _world(bad)
    found = {v.where for v in check_clock(spec, conn, ents)}
    assert found == {"sessions.starts_at", "sessions.ends_on", "sessions.due_date", "sessions.created_at"}


def test_lint_over_cap_and_amounts():
    spec, conn, ents = _world([GOOD])
    assert list(check_arithmetic(spec, conn, ents)) == []
    spec, conn, ents = _world([GOOD, (2, *GOOD[1:7], 8, 12, 100.0, 0.0, 300.0),        # 12 booked of 8 seats
                               (3, "active", *GOOD[2:9], 22.59, 386.76, 300.0),      # partially paid above due
                               (4, "done", *GOOD[2:9], 100.0, 40.0, 300.0)])         # done (fully paid) with 40 of 100
    found = [v.detail for v in check_arithmetic(spec, conn, ents)]
    assert len(found) == 4 and any("seats_booked above capacity" in d for d in found), found


def test_lint_rule_history_quota_and_setups():
    spec, conn, _ = _world([GOOD, (2, "done", "2026-05-01T10:00:00Z", *GOOD[3:11], 425.33),
                            (3, "done", "2026-05-01T10:00:00Z", *GOOD[3:11], 410.0)])
    spec["rules"] = [Rule("finish_session", "sessions", "threshold", "fee", "max", 420.0,
                          "Only finish a session when its fee is at most 420.", guards=("done",)).to_json()]
    found = list(check_rules(spec, conn))
    assert [v.rule for v in found] == ["rule_history"] and found[0].detail.startswith("1 rows")
    spec["data"]["setups"] = [{"table": "sessions", "id": 2, "set": {"fee": 425.33}, "why": "trap"}]
    assert list(check_rules(spec, conn)) == []
    conn.execute("CREATE TABLE bookings (id INTEGER PRIMARY KEY, buyer_id INTEGER, status TEXT)")
    conn.executemany("INSERT INTO bookings (buyer_id, status) VALUES (?, ?)", [(141, "pending")] * 6 + [(7, "pending")])
    spec["rules"] = [Rule("create_booking", "bookings", "quota", "buyer_id", "max_active", 3.0,
                          "A buyer may have at most 3 pending bookings at a time.", ("pending",)).to_json()]
    found = list(check_rules(spec, conn))
    assert [v.rule for v in found] == ["over_quota"] and "up to 6" in found[0].detail


def test_lint_same_parent():
    conn = sqlite3.connect(":memory:")
    conn.executescript("CREATE TABLE bidders (id); CREATE TABLE orders (id, bidder_id); "
                       "CREATE TABLE card_payments (id, bidder_id, order_id);"
                       "INSERT INTO bidders VALUES (1), (2); INSERT INTO orders VALUES (1, 1), (2, 2);"
                       "INSERT INTO card_payments VALUES (1, 1, 1);")
    spec = {"tables": [{"name": "bidders", "columns": [{"name": "id"}]},
                       {"name": "orders", "columns": [{"name": "bidder_id", "references": "bidders.id"}]},
                       {"name": "card_payments", "columns": [{"name": "bidder_id", "references": "bidders.id"},
                                                             {"name": "order_id", "references": "orders.id"}]}]}
    ents = {"bidders": SimpleNamespace(roles=["person"])}
    assert list(check_same_parent(spec, conn, ents)) == []
    conn.execute("INSERT INTO card_payments VALUES (2, 1, 2)")   # bidder 1 pays bidder 2's order
    assert [v.rule for v in check_same_parent(spec, conn, ents)] == ["same_parent"]


def test_lint_policy_clock_and_prose_numbers():
    spec = {"now": NOW, "title": "Tea", "rules": [{"value": 48.0}],
            "policy": "Today is Monday 2026-06-15.\n- Never cancel a session less than 48 hours before it starts."}
    assert list(check_policy(spec)) == []
    spec["policy"] += "\nAbout: sessions hold up to eight guests and bags over 30 kg are refused."
    found = list(check_policy(spec))
    assert [v.rule for v in found] == ["prose_number"] and "8" in found[0].detail and "30" in found[0].detail
    # A record's name is not a figure ("Form 16 records"), a figure beside it still is.
    named = {**spec, "tables": [{"name": "form_16s"}], "policy": spec["policy"].split("\nAbout")[0]
             + "\n- Form 16 records: drafted, then filed."}
    assert list(check_policy(named)) == []
    named["policy"] += " At most 16 per employee."
    assert [v.rule for v in check_policy(named)] == ["prose_number"]
    spec["policy"] = spec["policy"].replace("2026-06-15", "a sunny day")
    assert "policy_clock" in {v.rule for v in check_policy(spec)}


def test_lint_foreign_vocab():
    ent = SimpleNamespace(key="tour", singular="experience", roles=["item"], table="experiences")
    spec = {"data": {"tables": {"experiences": {"columns": {
        "category": {"gen": "choice", "values": ["boat", "wine", "cycling"]},
        "job_title": {"gen": "faker", "provider": "job"}}}}}}
    found = {v.where for v in check_foreign_vocab(spec, {"experiences": ent})}
    assert found == {"experiences.category", "experiences.job_title"}
    spec["data"]["tables"]["experiences"]["columns"] = {
        "category": {"gen": "choice", "values": ["koicha_ceremony"], "theme_words": True}}
    assert list(check_foreign_vocab(spec, {"experiences": ent})) == []


def test_world_classes_are_counted(built):
    from agentworld_envs.audit.lint import RULES, summarise

    assert set(WORLD_RULES) <= set(RULES)
    spec = copy.deepcopy(built["tea-ceremony-experiences"])
    spec["policy"] = spec["policy"].replace("2026-06-15", "today")
    summary = summarise(check_world("tea-ceremony-experiences", spec, _conn(spec)))
    assert summary["by_rule"].get("policy_clock") == 1


def test_a_theme_limit_is_a_rule_the_tools_enforce(private_cache):
    """'Bags over 30 kg are refused': a policy line, a precondition of the tools that set the weight, and
    the data (test_theme_words_and_figures)."""
    from agentworld_envs.catalogue import catalog
    from agentworld_envs.tasks.runner import Runner
    from agentworld_envs.engine.tools import ToolError

    bundle = catalog.load_bundle("luggage-forwarding-service")
    rules = [Rule.from_json(r) for r in bundle.spec["rules"] if r["kind"] == "bound"]
    assert {r.tool for r in rules} == {"add_suitcase", "update_suitcase"} and all(r.source == "theme" for r in rules)
    assert "- A suitcase may weigh at most 30 kg; heavier bags are refused." in bundle.spec["policy"]
    runner = Runner(bundle.spec, bundle.golden, bundle.tools)
    with pytest.raises(ToolError) as err:
        runner.call("update_suitcase", {"suitcase_id": 1, "weight_kg": 31.5})
    assert err.value.code == "precondition_failed" and "30 kg" in str(err.value)
    assert runner.call("update_suitcase", {"suitcase_id": 1, "weight_kg": 29.5})["updated"]["weight_kg"] == 29.5
    runner.close()


def test_theme_words_name_real_records_and_columns():
    """words/themes.json is data a person writes: every key must name an entity and column the theme has."""
    modules = env_registry.entity_modules()
    for slug, entry in env_registry.words("themes").items():
        if slug == "about":
            continue
        ents = {e.singular: e for e in build_entities(env_registry.theme(slug))}
        keys = [f"{r['entity']}.{r['column']}" for r in entry.get("rules", [])] + [k for k in entry if k != "rules"]
        for key in keys:
            entity, column = key.split(".")
            assert entity in ents, (slug, key)
            assert any(c["name"] == column for c in modules[ents[entity].key]["columns"]), (slug, key)
    titles = env_registry.words("job_titles")
    assert set(titles["l2"]) == {x["slug"] for l1 in env_registry.taxonomy()["l1"] for x in l1["l2"]}


def test_workflow_prose_names_the_states_its_tools_accept():
    """'only A or B <things> can be <verb>ed' in a workflow's description is what the tool enforces."""
    import re

    checked = 0
    for name, flow in env_registry.workflows().items():
        states = {s.replace("_", " "): s for s in flow["states"]}
        for clause in re.findall(r"only ([a-z ,]+?) (?:\w+ can be|ones) (\w+)", flow["description"]):
            named = {states[w] for w in states if re.search(rf"\b{w}\b", clause[0])}
            verbs = [t for t in flow["transitions"]
                     if clause[1].startswith(t["verb"].rstrip("e")) or clause[1] == t["to"]]
            if not named or not verbs:
                continue     # "work that has not started", "uncaptured ones": no state named
            checked += 1
            assert named == set(verbs[0]["from"]), (name, clause, verbs[0]["from"])
    assert checked >= 6


def test_lifecycle_prose_speaks_of_the_record_not_the_library_noun():
    from agentworld_envs.synthesis.builder import cached_spec
    from agentworld_envs.synthesis.schema import lifecycle_text

    flows = env_registry.workflows()
    assert lifecycle_text(flows["campaign"], "protocol").startswith("Protocols are drafted, scheduled")
    assert "only captured registration fees can be refunded" in lifecycle_text(flows["payment"], "registration_fee")
    nouns = {f["noun"] for f in flows.values() if f.get("noun")}
    checked = 0
    for name in ("irb-protocol-review", "vehicle-registration-renewals", "ddos-mitigation-service"):
        spec, _ = cached_spec(name)
        for line in spec["policy"].splitlines():
            got = re.match(r"- (.+?) records \(statuses: ([^)]*)\): (.*)", line)
            if not got:
                continue
            subject, _, prose = got.groups()
            first = prose.split(" are ")[0].split(" move")[0].split(" start")[0].split(" flow")[0].lower()
            assert first not in nouns - {subject.lower() + "s", subject.lower()} or first.startswith(subject.lower()), line
            checked += 1
    assert checked >= 3


def test_every_status_a_record_holds_is_named_in_the_policy():
    """An audit found ticket orders 'pending' and 'failed' in worlds whose policy spoke only of authorizing,
    capturing, refunding and voiding: each lifecycle line now names every status its records can hold."""
    import sqlite3

    from agentworld_envs.catalogue.catalog import load_bundle

    for name in ("canal-boat-tours", "irb-protocol-review"):
        b = load_bundle(name)
        named = {}
        for line in b.spec["policy"].splitlines():
            got = re.match(r"- (.+?) records \(statuses: ([^)]*)\): ", line)
            if got:
                named[got.group(1).lower()] = set(got.group(2).split(", "))
        conn = sqlite3.connect(":memory:")
        conn.deserialize(b.golden)
        seen = 0
        for t in b.spec["tables"]:
            col = next((c for c in t["columns"] if c["name"] == "status" and c.get("enum")), None)
            subject = next((k for k in named if k.replace(" ", "_") in (t["name"], t["name"].rstrip("s"))
                            or t["name"].startswith(k.replace(" ", "_"))), None)
            if col is None or subject is None:
                continue
            held = {r[0] for r in conn.execute(f'SELECT DISTINCT status FROM "{t["name"]}"')}
            assert held <= named[subject], (name, t["name"], held - named[subject])
            seen += 1
        assert seen >= 2, (name, named)


# ------------------------------------------------------- lifecycle, parents and addresses (issue 23, part 2)


def _lifecycle_spec(rows, set_on_ack):
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE jobs (id, status, triggered_at, started_at, exit_code, status_changed_at)")
    conn.executemany("INSERT INTO jobs VALUES (?, ?, ?, ?, ?, ?)", rows)
    spec = {"tables": [{"name": "jobs", "columns": [{"name": "id"}, {"name": "status", "enum": [
        "queued", "triggered", "running", "acknowledged", "passed"]}]}],
            "tools": [{"name": "acknowledge_job", "impl": {"kind": "transition", "table": "jobs", "column": "status",
                                                          "from": ["triggered"], "to": "acknowledged", "set": set_on_ack}},
                      {"name": "trigger_job", "impl": {"kind": "transition", "table": "jobs", "column": "status",
                                                      "from": ["queued"], "to": "triggered", "set": {}}},
                      {"name": "run_job", "impl": {"kind": "transition", "table": "jobs", "column": "status",
                                                  "from": ["acknowledged"], "to": "running", "set": {}}},
                      {"name": "pass_job", "impl": {"kind": "transition", "table": "jobs", "column": "status",
                                                   "from": ["running"], "to": "passed", "set": {}}},
                      {"name": "retry_job", "impl": {"kind": "transition", "table": "jobs", "column": "status",
                                                    "from": ["passed"], "to": "queued", "set": {"triggered_at": None}}}]}
    return spec, conn


def test_lint_prestart_stamp_and_transition_stamp():
    from agentworld_envs.audit.lint import check_lifecycle

    good = [(1, "queued", None, None, None, NOW), (2, "passed", "2026-05-01T10:00:00Z", "2026-05-01T11:00:00Z", 0, NOW)]
    spec, conn = _lifecycle_spec(good, {"status_changed_at": "$now", "acknowledged_at": "$now"})
    assert list(check_lifecycle(spec, conn)) == []      # a retry back to queued may clear what it undoes
    spec, conn = _lifecycle_spec(good + [(3, "queued", None, "2026-05-01T11:00:00Z", 1, NOW)],   # queued, yet started
                                 {"triggered_at": None})                                      # ack erases triggered_at
    found = {(v.rule, v.where) for v in check_lifecycle(spec, conn)}
    assert found == {("prestart_stamp", "jobs.started_at"), ("prestart_stamp", "jobs.exit_code"),
                     ("transition_stamp", "acknowledge_job")}, found


def test_stamps_of_a_status_left_forward_stay():
    incident = env_registry.workflows()["incident"]
    assert semantics.status_stamps(["triggered_at"], incident)["triggered_at"] == set(incident["states"])
    pipeline = env_registry.workflows()["pipeline"]
    assert semantics.unreached_columns(["started_at", "exit_code"], pipeline) == {
        "started_at": {"queued"}, "exit_code": {"queued", "running", "cancelled"}}   # a cancelled run has no exit code
    assert semantics.prestart_states(env_registry.workflows()["ticket_triage"]) == {"new"}


def test_lint_parent_start_and_email_name():
    from agentworld_envs.audit.lint import check_email_names, check_parent_start

    conn = sqlite3.connect(":memory:")
    conn.executescript("CREATE TABLE leases (id, start_date); CREATE TABLE rent_payments (id, lease_id, due_date);"
                       "CREATE TABLE tenants (id, full_name, email);"
                       "INSERT INTO leases VALUES (1, '2026-03-01'); INSERT INTO rent_payments VALUES (1, 1, '2026-04-01');"
                       "INSERT INTO tenants VALUES (1, 'Dr. María López', 'maria.lopez@example.com');")
    spec = {"tables": [{"name": "leases", "columns": [{"name": "id"}, {"name": "start_date"}]},
                       {"name": "rent_payments", "columns": [{"name": "lease_id", "references": "leases.id"}]},
                       {"name": "tenants", "columns": [{"name": "id"}]}]}
    assert list(check_parent_start(spec, conn)) == [] and list(check_email_names(spec, conn)) == []
    conn.execute("INSERT INTO rent_payments VALUES (2, 1, '2026-02-01')")                    # due before the lease
    conn.execute("INSERT INTO tenants VALUES (2, 'Maria Lopez', 'john.smith@example.com')")  # someone else's address
    assert [v.rule for v in check_parent_start(spec, conn)] == ["parent_start"]
    assert [v.detail[:1] for v in check_email_names(spec, conn)] == ["1"]


def test_email_local_part_is_the_name():
    import random

    rng = random.Random(1)
    assert datagen.name_words("Dipl.-Ing. Ljiljana Schaaf B.A.") == ["ljiljana", "schaaf"]
    for _ in range(20):
        local = datagen.email_local_part("Élise Bertrand du Imbert", rng)
        assert "elise" in local or "imbert" in local


def test_lifecycle_classes_are_clean_on_built_envs(built):
    from agentworld_envs.audit.lint import check_email_names, check_lifecycle, check_parent_start

    for name, spec in built.items():
        conn = _conn(spec)
        found = [*check_lifecycle(spec, conn), *check_parent_start(spec, conn), *check_email_names(spec, conn)]
        assert found == [], (name, found[:3])
    probe = _probe()
    tally = probe.Tally()
    for name in SAMPLE + ["noc-network-alarm-console", "server-patch-management", "crop-insurance-claims"]:
        probe.probe_env(name, tally)
    new = ("prestart_outcome", "draft_sent", "event_status", "event_clock", "span_order", "transition_stamp", "email_name")
    assert {k: tally.bad[k] for k in new} == {k: 0 for k in new}, dict(tally.examples)
    assert all(tally.checked[k] for k in ("prestart_outcome", "span_order", "email_name", "event_clock"))


def test_lint_a_status_changed_before_what_happened_to_the_record():
    """date_order: a status moves after the record was made and after what happened to it (an alert is
    acknowledged after it was triggered), once those dates have passed; a due date may come later (a review
    decided early), and a date still ahead says nothing."""
    from agentworld_envs.audit.lint import check_data

    spec = {"now": NOW, "tools": [], "tables": [{"name": "alerts", "columns": [
        {"name": n, "type": "INTEGER" if n == "id" else "TEXT"}
        for n in ("id", "created_at", "triggered_at", "decision_due", "status", "status_changed_at")]}]}
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE alerts (id INTEGER PRIMARY KEY, created_at TEXT, triggered_at TEXT, decision_due TEXT, "
                 "status TEXT, status_changed_at TEXT)")
    rows = [(1, "2026-05-01T10:00:00Z", "2026-05-02T10:00:00Z", "2026-06-30", "open", "2026-05-03T10:00:00Z"),
            (2, "2026-05-01T10:00:00Z", "2026-05-02T10:00:00Z", "2026-05-20", "decided", "2026-05-10T10:00:00Z"),
            (3, "2026-05-01T10:00:00Z", "2026-07-02T10:00:00Z", "2026-07-20", "open", "2026-05-10T10:00:00Z")]
    conn.executemany("INSERT INTO alerts VALUES (?, ?, ?, ?, ?, ?)", rows)

    def found(conn):
        return [v for v in check_data(spec, conn) if v.rule == "date_order"]

    assert found(conn) == []
    conn.execute("INSERT INTO alerts VALUES (4, '2026-05-01T10:00:00Z', '2026-05-20T10:00:00Z', NULL, 'acknowledged', "
                 "'2026-05-04T10:00:00Z')")                       # acknowledged before it was triggered
    conn.execute("INSERT INTO alerts VALUES (5, '2026-05-09T10:00:00Z', NULL, NULL, 'acknowledged', "
                 "'2026-05-04T10:00:00Z')")                       # changed before it was made
    assert {(v.where, v.detail) for v in found(conn)} == {
        ("alerts.status_changed_at", "1 rows whose status changed before triggered_at"),
        ("alerts.status_changed_at", "1 rows whose status changed before created_at")}


def test_a_record_still_in_its_first_status_changed_when_it_was_made():
    """A maintainer still pending (the status it is created in, which no change leads back to) changed status
    when it was made, not years later; the lint catches a planted row that "changed" two years on."""
    from agentworld_envs.audit.lint import check_data

    spec, _ = synthesize(env_registry.theme("private-python-package-index"))
    conn = _conn(spec)
    gens = spec["data"]["tables"]["maintainers"]["columns"]
    first = gens["status_changed_at"]["initial"]
    rows = conn.execute("SELECT id, created_at, status_changed_at FROM maintainers WHERE status = ?", (first,)).fetchall()
    assert rows and all(changed[:10] == made[:10] for _, made, changed in rows), rows[:3]

    def found(conn):
        return [v.detail for v in check_data(spec, conn, ["maintainers"]) if v.rule == "date_order"]

    assert found(conn) == []
    conn.execute("UPDATE maintainers SET created_at = ?, status_changed_at = ? WHERE id = ?",
                 ("2023-01-10", "2025-01-10T09:00:00Z", rows[0][0]))
    assert found(conn) == [f"1 rows still {first} whose status changed more than a day after they were made"]


def test_one_tax_rate_per_world():
    """A world charges one rate on the subtotal (generated so, and linted: a planted 42 % row is caught)."""
    from agentworld_envs.audit.lint import check_arithmetic

    theme = env_registry.theme("custom-cake-studio-orders")
    spec, _ = synthesize(theme)
    conn = _conn(spec)
    table = next(t["name"] for t in spec["tables"] if {"tax_amount", "subtotal"} <= {c["name"] for c in t["columns"]})
    rates = {round(a / b, 3) for a, b in conn.execute(f'SELECT tax_amount, subtotal FROM "{table}" WHERE subtotal >= 10')}
    # one of its home country's rates (world audit 41: a US bridal salon charged 20 % VAT)
    home = semantics.HOME_TAX_RATES[semantics.HOME_COUNTRY[theme.get("locale", "en_US")]]
    rate = semantics.tax_rate(theme)
    assert rate in home and all(abs(x - rate) < 0.001 for x in rates)   # (cents round 8.25 % to 8.2 or 8.3)
    assert semantics.tax_rate({"title": "Bridal salon fitting appointments", "locale": "en_US"}) < 0.1
    assert not [v for v in check_arithmetic(spec, conn, {}) if v.where.endswith("tax_amount")]
    conn.execute(f'UPDATE "{table}" SET tax_amount = round(subtotal * 0.42, 2) WHERE id = 1')
    assert [v.where for v in check_arithmetic(spec, conn, {})] == [f"{table}.tax_amount"]


def test_paying_in_full_settles_and_a_reasoned_status_has_its_reason():
    """The tool that marks a payment paid sets what was paid to what was due (the seeded history already
    does); a record that reached its status through a change that takes a reason carries one; a stamp of
    a status passed on the way (an alert triggered, then acknowledged) lies between its making and its
    last change."""
    from agentworld_envs.engine.tools import ToolError
    from agentworld_envs.tasks.runner import Runner

    spec, _ = synthesize(env_registry.theme("auto-loan-servicing"))
    conn = _conn(spec)
    paid = [t for t in spec["tools"] if t.get("impl", {}).get("set", {}).get("amount_paid") == "$row:amount_due"]
    assert paid
    tool = paid[0]
    table, key = tool["impl"]["table"], tool["impl"]["key"]["param"]
    marks = ", ".join("?" * len(tool["impl"]["from"]))
    rows = conn.execute(f'SELECT id, amount_due, amount_paid FROM "{table}" WHERE status IN ({marks}) '
                        f'AND amount_paid < amount_due', tuple(tool["impl"]["from"])).fetchall()
    runner = Runner(spec, state.build_database(spec))
    try:
        runner.drop_prefix()
        paid_one = None
        for row in rows:   # the first the policy lets be paid (its rules may hold some back)
            try:
                paid_one = (row, runner.call(tool["name"], {key: row[0]})["updated"])
                break
            except ToolError as e:
                assert e.code == "precondition_failed"
    finally:
        runner.close()
    assert paid_one is not None, "no payment the policy lets be paid"
    (_, due, before), after = paid_one
    assert before < due and after["amount_paid"] == due and after["status"] == tool["impl"]["to"]

    checked = 0
    for name in ("fine-dining-reservation-book", "email-deliverability-ip-warmup"):
        spec, _ = synthesize(env_registry.theme(name))
        conn = _conn(spec)
        for t in spec["tables"]:
            cols = {c["name"] for c in t["columns"]}
            reasoned = {x["impl"]["to"] for x in spec["tools"] if x.get("impl", {}).get("table") == t["name"]
                        and "reason" in x["parameters"].get("required", [])}
            if "status_reason" in cols and reasoned:
                marks = ", ".join("?" * len(reasoned))
                assert conn.execute(f'SELECT COUNT(*) FROM "{t["name"]}" WHERE status IN ({marks}) AND status_reason IS NULL',
                                    tuple(reasoned)).fetchone()[0] == 0, t["name"]
            if {"triggered_at", "status_changed_at"} <= cols:
                made = " OR triggered_at < created_at" if "created_at" in cols else ""
                checked += 1
                bad = conn.execute(f'SELECT COUNT(*) FROM "{t["name"]}" WHERE triggered_at IS NOT NULL AND '
                                   f'(triggered_at > status_changed_at{made})').fetchone()[0]
                assert bad == 0, t["name"]
    assert checked


def test_a_required_reference_with_no_record_of_its_parent_names_one_of_no_parent():
    """A fixture's away team must be one of its league's teams; where the league has none and the column
    may not be empty, the team drawn belongs to no league rather than to another one."""
    conn = _generate(
        [{"name": "leagues", "columns": [{"name": "id", "primary_key": True}, {"name": "x"}]},
         {"name": "teams", "columns": [{"name": "id", "primary_key": True}, {"name": "league_id", "references": "leagues.id"}]},
         {"name": "fixtures", "columns": [{"name": "id", "primary_key": True}, {"name": "league_id", "references": "leagues.id"},
                                          {"name": "away_id", "references": "teams.id"}]}],
        {"leagues": {"rows": 10, "columns": {"x": {"gen": "int", "min": 0, "max": 1}}},
         "teams": {"rows": 12, "columns": {"league_id": {"gen": "ref", "ref": "leagues.id", "null_p": 0.3}}},
         "fixtures": {"rows": 200, "columns": {
             "league_id": {"gen": "ref", "ref": "leagues.id"},
             "away_id": {"gen": "ref", "ref": "teams.id", "same": {"column": "league_id", "via": "league_id"},
                         "nullable": False}}}})
    one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
    assert one("SELECT COUNT(*) FROM fixtures f WHERE NOT EXISTS (SELECT 1 FROM teams t WHERE t.league_id = f.league_id)") > 0
    assert one("SELECT COUNT(*) FROM fixtures f JOIN teams t ON t.id = f.away_id WHERE t.league_id != f.league_id") == 0
    assert one("SELECT COUNT(*) FROM fixtures WHERE away_id IS NULL") == 0


def test_what_happened_comes_before_its_report():
    """An incident is reported, and a claim decided, after it happened; an expected delivery follows the order."""
    assert ("incident_date", "reported_at", False) in semantics.ordered_pairs(["incident_date", "reported_at"])
    assert ("order_date", "expected_date", False) in semantics.ordered_pairs(["order_date", "expected_date"])
    spec, _ = synthesize(env_registry.theme("cargo-damage-claims"))
    conn = _conn(spec)
    table = next(t["name"] for t in spec["tables"] if {"incident_date", "reported_at"} <= {c["name"] for c in t["columns"]})
    rows = conn.execute(f'SELECT COUNT(*), SUM(substr(reported_at, 1, 10) < substr(incident_date, 1, 10)) FROM "{table}" '
                        "WHERE reported_at IS NOT NULL AND incident_date IS NOT NULL").fetchone()
    assert rows[0] > 20 and rows[1] == 0, rows


# -------------------------------------------- outcomes, payments of a whole, alerts (issue 23, blind round 22)


def test_an_outcome_is_decided_once_finished_and_absent_before_or_when_called_off():
    """A scheduled or cancelled hearing has no outcome; a decided dispute is not "undecided"."""
    hearing = env_registry.workflows()["scheduling"]
    assert semantics.unreached_columns(["outcome", "score"], hearing) == {
        "outcome": {"scheduled", "rescheduled", "in_progress", "cancelled"},
        "score": {"scheduled", "rescheduled", "in_progress", "cancelled"}}
    undecided, decided = semantics.undecided_split({"gen": "choice", "values": ["undecided", "won", "lost"],
                                                    "weights": [5, 3, 2]})
    assert undecided == "undecided" and decided == {"gen": "choice", "values": ["won", "lost"], "weights": [3, 2]}
    assert semantics.undecided_split({"gen": "choice", "values": ["won", "lost"]}) == (None, None)
    from agentworld_envs.audit.lint import check_lifecycle

    for slug in ("chargeback-dispute-management", "small-claims-court-e-filing"):
        spec, _ = synthesize(env_registry.theme(slug))
        conn = _conn(spec)
        assert [v for v in check_lifecycle(spec, conn) if v.rule in ("undecided_outcome", "prestart_stamp")] == []
        rows = []
        for t in spec["tables"]:
            names = {c["name"] for c in t["columns"]}
            if {"outcome", "status"} <= names:
                rows += conn.execute(f'SELECT status, outcome FROM "{t["name"]}"').fetchall()
        finished = [o for s, o in rows if s in ("decided", "closed", "appealed", "done")]
        assert finished and all(o not in semantics.UNDECIDED_VALUES for o in finished), slug
        assert all(o in (None, "undecided", "pending") for s, o in rows if s in ("scheduled", "cancelled", "opened",
                                                                                 "under_review")), slug


def test_lint_undecided_outcome_part_over_whole_and_a_floor():
    from agentworld_envs.audit.lint import check_arithmetic, check_lifecycle

    conn = sqlite3.connect(":memory:")
    conn.executescript(
        "CREATE TABLE disputes (id, status, outcome); CREATE TABLE invoices (id, total_amount);"
        "CREATE TABLE payments (id, invoice_id, amount); CREATE TABLE alerts (id, threshold, observed_value);"
        "INSERT INTO disputes VALUES (1, 'opened', 'undecided'), (2, 'decided', 'won');"
        "INSERT INTO invoices VALUES (1, 100.0); INSERT INTO payments VALUES (1, 1, 60.0), (2, 1, 40.0);"
        "INSERT INTO alerts VALUES (1, 80.0, 91.5);")
    spec = {"tables": [{"name": "disputes", "columns": [{"name": "id"}, {"name": "status", "enum": [
        "opened", "under_review", "decided", "closed"]}, {"name": "outcome"}]},
                       {"name": "invoices", "columns": [{"name": "id"}, {"name": "total_amount"}]},
                       {"name": "payments", "columns": [{"name": "id"}, {"name": "invoice_id",
                                                                          "references": "invoices.id"}]},
                       {"name": "alerts", "columns": [{"name": "id"}]}],
            "tools": [{"name": "review_dispute", "impl": {"kind": "transition", "table": "disputes", "column": "status",
                                                         "from": ["opened"], "to": "under_review", "set": {}}},
                      {"name": "decide_dispute", "impl": {"kind": "transition", "table": "disputes", "column": "status",
                                                         "from": ["under_review"], "to": "decided", "set": {}}},
                      {"name": "close_dispute", "impl": {"kind": "transition", "table": "disputes", "column": "status",
                                                        "from": ["decided"], "to": "closed", "set": {}}}]}
    assert list(check_lifecycle(spec, conn)) == [] and list(check_arithmetic(spec, conn, {})) == []
    conn.executescript("INSERT INTO disputes VALUES (3, 'decided', 'undecided'), (4, 'under_review', 'lost');"
                       "INSERT INTO payments VALUES (3, 1, 0.01); INSERT INTO alerts VALUES (2, 78.99, 54.06);")
    assert {(v.rule, v.where) for v in check_lifecycle(spec, conn)} == {
        ("undecided_outcome", "disputes.outcome"), ("prestart_stamp", "disputes.outcome")}
    assert {(v.rule, v.where) for v in check_arithmetic(spec, conn, {})} == {
        ("part_over_whole", "payments.amount"), ("over_cap", "alerts.observed_value")}


def test_payments_never_add_up_to_more_than_what_they_pay():
    """The payments of an invoice (the generator's ``part_of``) are scaled down together where they would
    pay more than it; each keeps at least a cent, and parts within their whole are left as drawn."""
    import random as _random

    existing = {"invoices.id": [1, 2, 3], "invoices.total_amount": [100.0, 0.05, 2500.0]}
    gens = {"amount": {"gen": "part_of", "via": "invoice_id", "table": "invoices", "field": "total_amount",
                       "inner": {"gen": "money", "min": 5, "max": 900}}}
    rows = [{"invoice_id": i % 3 + 1, "amount": float(50 + 37 * i % 800)} for i in range(12)] + \
           [{"invoice_id": 9, "amount": 700.0}, {"invoice_id": None, "amount": 5.0}]
    drawn = [dict(r) for r in rows]
    datagen.fit_parts(gens, drawn, existing, _random.Random(4))
    for inv, whole in ((1, 100.0), (2, 0.05), (3, 2500.0)):
        parts = [r["amount"] for r in drawn if r["invoice_id"] == inv]
        assert sum(parts) <= whole + 1e-9 and all(p >= 0.01 for p in parts), (inv, parts)
    assert drawn[-2:] == rows[-2:]                      # no whole to fit: left as drawn
    spec, _ = synthesize(env_registry.theme("small-business-invoicing"))
    assert any(g.get("gen") == "part_of" for t in spec["data"]["tables"].values() for g in t["columns"].values())


def _before_parent(conn: sqlite3.Connection, child: str, fk: str, col: str, parent: str, made: str) -> tuple[int, int]:
    """(rows of ``child`` whose ``col`` falls on a day before their parent's ``made``, rows with a parent)."""
    early = conn.execute(f"SELECT COUNT(*) FROM {child} c JOIN {parent} p ON p.id = c.{fk} "
                         f"WHERE substr(c.{col}, 1, 10) < substr(p.{made}, 1, 10)").fetchone()[0]
    linked = conn.execute(f"SELECT COUNT(*) FROM {child} WHERE {fk} IS NOT NULL").fetchone()[0]
    return early, linked


def test_lint_before_parent_and_what_a_record_does_follows_its_parent():
    """No text to a lead before the lead was created (blind audit 37): the lint plants and finds one; the
    generator draws sent_at after the lead's making and the status change after it too."""
    from agentworld_envs.audit.lint import check_before_parent

    conn = sqlite3.connect(":memory:")
    conn.executescript("CREATE TABLE leads (id, created_at); CREATE TABLE texts (id, lead_id, sent_at, status_changed_at);"
                       "INSERT INTO leads VALUES (1, '2026-06-05T10:00:00Z');"
                       "INSERT INTO texts VALUES (1, 1, '2026-06-05T09:00:00Z', '2026-06-06T10:00:00Z');")
    spec = {"tables": [{"name": "leads", "columns": [{"name": "id"}, {"name": "created_at"}]},
                       {"name": "texts", "columns": [{"name": "id"}, {"name": "lead_id", "references": "leads.id"},
                                                     {"name": "sent_at"}, {"name": "status_changed_at"}]}],
            "tools": []}
    assert list(check_before_parent(spec, conn)) == []          # the same day: the text may be that morning
    conn.execute("INSERT INTO texts VALUES (2, 1, '2026-03-23T09:00:00Z', '2026-04-01T10:00:00Z')")
    assert sorted(v.where for v in check_before_parent(spec, conn)) == ["texts.sent_at", "texts.status_changed_at"]
    spec, _ = synthesize(env_registry.theme("agent-team-lead-follow-up"))
    conn = _conn(spec)
    assert list(check_before_parent(spec, conn)) == []
    late, linked = _before_parent(conn, "text_messages", "buyer_lead_id", "sent_at", "buyer_leads", "created_at")
    assert late == 0 and linked > 100


def test_lint_tax_inside_a_total_and_an_update_before_the_status_change():
    """A till receipt's tax is one rate's share of its total (blind audit 37: tax 49.68 on a 3.83 sale); a
    status change is an update, so updated_at is no earlier (audit 37: manifests updated before they moved)."""
    from agentworld_envs.audit.lint import check_arithmetic, check_data

    conn = sqlite3.connect(":memory:")
    conn.executescript("CREATE TABLE sales (id, total_amount, tax_amount);"
                       "INSERT INTO sales VALUES (1, 108.0, 8.0), (2, 54.0, 4.0);"
                       "CREATE TABLE docs (id, status_changed_at, updated_at);"
                       "INSERT INTO docs VALUES (1, '2026-05-01T10:00:00Z', '2026-05-02T10:00:00Z');")
    spec = {"now": NOW, "tables": [{"name": "sales", "columns": []}, {"name": "docs", "columns": []}], "tools": []}
    assert list(check_arithmetic(spec, conn, {})) == [] and list(check_data(spec, conn)) == []
    conn.executescript("INSERT INTO sales VALUES (3, 3.83, 49.68);"
                       "INSERT INTO docs VALUES (2, '2026-06-14T10:00:00Z', '2025-02-15T10:00:00Z');")
    assert [v.where for v in check_arithmetic(spec, conn, {})] == ["sales.tax_amount"]
    assert [(v.rule, v.where) for v in check_data(spec, conn)] == [("date_order", "docs.updated_at")]


def test_a_records_start_follows_its_parent_and_a_parent_is_made_when_it_was_observed():
    """No shipment leaves before its order was placed, no meal plan starts before its customer signed up, no
    notice before the violation was observed (world audit 26): the lint plants and finds each; the generator
    keeps the starts of a theme that had them (macro-meal-prep-delivery: 263 plans before their customer)."""
    from agentworld_envs.audit.lint import check_before_parent

    conn = sqlite3.connect(":memory:")
    conn.executescript("CREATE TABLE preorders (id, placed_at); CREATE TABLE shipments (id, preorder_id, ship_date);"
                       "CREATE TABLE violations (id, observed_at); CREATE TABLE notices (id, violation_id, sent_at);"
                       "INSERT INTO preorders VALUES (1, '2026-05-05T10:00:00Z');"
                       "INSERT INTO shipments VALUES (1, 1, '2026-05-06');"
                       "INSERT INTO violations VALUES (1, '2026-06-08T09:00:00Z');"
                       "INSERT INTO notices VALUES (1, 1, '2026-06-09T10:00:00Z');")
    spec = {"tables": [{"name": "preorders", "columns": [{"name": "id"}, {"name": "placed_at"}]},
                       {"name": "shipments", "columns": [{"name": "id"}, {"name": "preorder_id", "references": "preorders.id"},
                                                         {"name": "ship_date"}]},
                       {"name": "violations", "columns": [{"name": "id"}, {"name": "observed_at"}]},
                       {"name": "notices", "columns": [{"name": "id"}, {"name": "violation_id", "references": "violations.id"},
                                                       {"name": "sent_at"}]}],
            "tools": []}
    assert list(check_before_parent(spec, conn)) == []
    conn.executescript("INSERT INTO shipments VALUES (2, 1, '2026-03-25');"
                       "INSERT INTO notices VALUES (2, 1, '2026-05-03T10:00:00Z');")
    assert sorted(v.where for v in check_before_parent(spec, conn)) == ["notices.sent_at", "shipments.ship_date"]
    spec, _ = synthesize(env_registry.theme("macro-meal-prep-delivery"))
    conn = _conn(spec)
    assert list(check_before_parent(spec, conn)) == []
    early, linked = _before_parent(conn, "meal_plans", "customer_id", "started_on", "customers", "signup_date")
    assert early == 0 and linked > 50


def test_a_status_reason_is_the_reason_for_that_status():
    """A denied grant is not denied for a "Schedule conflict", an appeal is not "Entered in error" (world audit
    26): each reason comes from the pool of its status."""
    from agentworld_envs.engine.textgen import REASONS, status_reasons

    assert set(status_reasons("denied")).isdisjoint(REASONS) and set(status_reasons("appealed")).isdisjoint(REASONS)
    assert status_reasons("cancelled") == REASONS and status_reasons("on_hold") != REASONS
    # world audit 41: parking payments and airline compensations refunded because the "wrong item" arrived
    assert "Wrong item received" in status_reasons("refunded", "order")
    assert "Wrong item received" not in status_reasons("refunded", "payment")
    assert "Wrong item received" not in status_reasons("refunded", "compensation")
    spec, _ = synthesize(env_registry.theme("grant-application-portal"))
    conn = _conn(spec)
    rows = conn.execute("SELECT status, status_reason FROM grant_applications WHERE status_reason IS NOT NULL").fetchall()
    assert rows and all(reason in status_reasons(status) for status, reason in rows)


def test_a_quota_leaves_room_on_the_parents_still_open():
    """A quota's cap counts only the parents that can take new records (world lint at 972bd38:
    canary-release-analysis had 133 queued or running canaries for 44 open service components at 3 each)."""
    from agentworld_envs.audit.lint import check_world

    spec, _ = synthesize(env_registry.theme("canary-release-analysis"))
    conn = _conn(spec)
    assert [v for v in check_world("canary-release-analysis", spec, conn) if v.rule == "over_quota"] == []
    rule = next(r for r in spec["rules"] if r["kind"] == "quota" and r["table"] == "canaries")
    open_parents = conn.execute("SELECT COUNT(*) FROM service_components WHERE status != 'inactive'").fetchone()[0]
    counted = conn.execute(f"SELECT COUNT(*) FROM canaries WHERE status IN ({', '.join('?' * len(rule['states']))})",
                           rule["states"]).fetchone()[0]
    assert counted <= open_parents * rule["value"]
    # a record drawn among the parents started by its date takes no cap: rent payments crowd onto the liens that
    # started first (self-storage-unit-rentals, lint at 972bd38: over_quota and parent_start)
    spec, _ = synthesize(env_registry.theme("self-storage-unit-rentals"))
    conn = _conn(spec)
    assert [v.rule for v in check_world("self-storage-unit-rentals", spec, conn)
            if v.rule in ("over_quota", "parent_start")] == []
    assert not any(r["kind"] == "quota" and r["column"] == "auction_lien_id" for r in spec["rules"])


def _flagged(name: str, spec: dict, conn: sqlite3.Connection, rule: str) -> list[str]:
    """Where the world lint finds ``rule`` broken in ``name``'s built world (sorted)."""
    return sorted(v.where for v in check_world(name, spec, conn) if v.rule == rule)


def _data_flagged(spec: dict, conn: sqlite3.Connection, rule: str) -> list[str]:
    """Where the data lint (``check_data``) finds ``rule`` broken in a built world (sorted)."""
    return sorted(v.where for v in check_data(spec, conn) if v.rule == rule)


def _passing_table(status: str, col: str, value: str, workflow_states: list[str]) -> tuple[dict, sqlite3.Connection, dict]:
    """A one-table world holding one record in ``status`` with ``col`` = ``value`` (for ``check_clock``)."""
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE TABLE sessions (id INTEGER PRIMARY KEY, status TEXT, {col} TEXT, duration_minutes INTEGER, "
                 "status_changed_at TEXT)")
    conn.execute(f"INSERT INTO sessions (status, {col}, duration_minutes, status_changed_at) VALUES (?, ?, 60, ?)",
                 (status, value, value if len(value) > 10 else value + "T12:00:00Z"))
    spec = {"now": NOW, "tables": [{"name": "sessions", "columns": []}]}
    workflow = {"states": workflow_states, "transitions": [], "clock": {"in_progress": {"start": "past"}}}
    return spec, conn, {"sessions": SimpleNamespace(workflow=workflow)}


def test_lint_stale_status_a_session_in_progress_for_weeks_and_an_order_processing_for_months():
    """World audit 26: meetings in progress 80 days after they started, installs provisioning for three years,
    orders processing for five months. A timed event in progress started in the last minutes; a record in a
    passing status got there within the days it lasts."""
    states = ["scheduled", "in_progress", "done", "processing"]
    spec, conn, ents = _passing_table("in_progress", "starts_at", "2026-05-06T10:00:00Z", states)
    assert [v.rule for v in check_clock(spec, conn, ents)].count("stale_status") == 1
    spec, conn, ents = _passing_table("in_progress", "starts_at", "2026-06-15T11:55:00Z", states)
    assert [v for v in check_clock(spec, conn, ents)] == []     # started five minutes ago: no clock_status either
    spec, conn, ents = _passing_table("processing", "placed_at", "2026-01-10", states)
    assert sorted(v.where for v in check_clock(spec, conn, ents) if v.rule == "stale_status") == [
        "sessions.placed_at", "sessions.status_changed_at"]
    spec, conn, ents = _passing_table("processing", "placed_at", "2026-06-01", states)
    assert [v for v in check_clock(spec, conn, ents) if v.rule == "stale_status"] == []


def test_a_record_in_a_passing_status_got_there_lately():
    """The generators keep to it: day-use bookings checked in and flights in the air started today, orders
    processing were placed in the last weeks, and neither world has a stale_status violation."""
    for name in ("airport-day-use-hotel-rooms", "wooden-toy-webshop"):
        spec, _ = synthesize(env_registry.theme(name))
        conn = _conn(spec)
        assert [v for v in check_world(name, spec, conn) if v.rule in ("stale_status", "clock_status")] == []
        if name.startswith("airport"):
            days = conn.execute("SELECT DISTINCT substr(departs_at, 1, 10) FROM flights WHERE status = 'in_progress'").fetchall()
            assert days == [(NOW[:10],)]
            assert conn.execute("SELECT COUNT(*) FROM flights WHERE status = 'in_progress' AND departs_at > ?",
                                (NOW,)).fetchone()[0] == 0
        else:
            oldest = conn.execute("SELECT MIN(placed_at), MIN(status_changed_at) FROM orders WHERE status = 'processing'").fetchone()
            assert oldest[0] >= "2026-05-18" and oldest[1] >= "2026-05-25"
            # a status the order moves on from (delivered) keeps its older history
            assert conn.execute("SELECT MIN(placed_at) FROM orders WHERE status = 'delivered'").fetchone()[0] < "2026-03-01"


def test_a_local_business_has_one_country_and_one_currency():
    """World audit 26: a cake studio's customers from 140 countries paying deposits in five currencies. A local
    business's records are in its home country and currency (its locale's); one that trades abroad has half
    at home and the rest among real trading partners, never Vatican City."""
    spec, _ = synthesize(env_registry.theme("custom-cake-studio-orders"))
    conn = _conn(spec)
    assert conn.execute("SELECT DISTINCT country_code FROM customers").fetchall() == [("US",)]
    assert conn.execute("SELECT DISTINCT currency FROM deposits").fetchall() == [("USD",)]
    deposits = next(t for t in spec["tables"] if t["name"] == "deposits")
    assert next(c for c in deposits["columns"] if c["name"] == "currency")["enum"] == ["USD"]
    theme = env_registry.theme("anime-figure-import-marketplace")
    assert semantics.works_abroad(theme) and not semantics.works_abroad(env_registry.theme("custom-cake-studio-orders"))
    spec, _ = synthesize(theme)
    rows = _conn(spec).execute("SELECT country_code, COUNT(*) FROM shops GROUP BY 1 ORDER BY 2 DESC").fetchall()
    home = semantics.HOME_COUNTRY[theme.get("locale", "en_US")]
    assert rows[0][0] == home and {c for c, _ in rows} <= set(semantics.COUNTRIES) and len(rows) > 3
    assert semantics.home_values({"locale": "de_DE", "title": "Bakery"}, "currency") == (["EUR"], [1])
    assert semantics.home_values({"locale": "en_GB", "title": "Bakery"}, "billing_country") == (["United Kingdom"], [1])
    assert semantics.home_values({"locale": "en_GB", "title": "Bakery"}, "country_of_origin") is None


def test_costs_below_prices_and_awards_within_requests_once_decided():
    """World audit 26: designs that cost more than they sell for; grants awarded more than was asked, and awards
    on applications still in review or denied."""
    spec, _ = synthesize(env_registry.theme("custom-cake-studio-orders"))
    conn = _conn(spec)
    assert conn.execute("SELECT COUNT(*) FROM cake_designs WHERE unit_cost > price").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM cake_designs").fetchone()[0] > 50
    spec, _ = synthesize(env_registry.theme("grant-application-portal"))
    conn = _conn(spec)
    rows = dict((s, (n, awarded, over)) for s, n, awarded, over in conn.execute(
        "SELECT status, COUNT(*), COUNT(amount_awarded), SUM(amount_awarded > amount_requested) FROM grants GROUP BY 1"))
    assert rows["approved"][0] == rows["approved"][1] > 0 and not rows["approved"][2]
    assert all(rows[s][1] == 0 for s in ("received", "in_review", "denied", "withdrawn"))
    # the lint sees both: an award on a grant in review, a cost above its price
    conn.execute("UPDATE grants SET amount_awarded = 5000 WHERE id = (SELECT MIN(id) FROM grants WHERE status = 'in_review')")
    assert "grants.amount_awarded" in {v.where for v in check_world("grant-application-portal", spec, conn)}
    spec, _ = synthesize(env_registry.theme("custom-cake-studio-orders"))
    conn = _conn(spec)
    conn.execute("UPDATE cake_designs SET unit_cost = price + 1 WHERE id = 1")
    assert _flagged("custom-cake-studio-orders", spec, conn, "over_cap") == [
        "cake_designs.unit_cost"]


def test_spec_validation_reads_the_passing_windows():
    """A ``recent`` window and a ``changed`` dwell are checked like any generator: a bad one is one clear error."""
    from agentworld_envs.engine.spec import SpecError, validate_spec

    spec, _ = synthesize(env_registry.theme("wooden-toy-webshop"))
    gens = spec["data"]["tables"]["orders"]["columns"]
    assert gens["placed_at"]["gen"] == "recent" and gens["status_changed_at"]["dwell"]["processing"] == 21
    validate_spec(spec)
    for bad in ({"processing": {"days": [3, 1]}}, {"processing": {"minutes": 0}}, {"processing": {"hours": 2}}):
        broken = copy.deepcopy(spec)
        broken["data"]["tables"]["orders"]["columns"]["placed_at"]["windows"] = bad
        with pytest.raises(SpecError, match="windows"):
            validate_spec(broken)
    broken = copy.deepcopy(spec)
    broken["data"]["tables"]["orders"]["columns"]["status_changed_at"]["dwell"] = {"processing": "soon"}
    with pytest.raises(SpecError, match="dwell"):
        validate_spec(broken)


def test_a_session_is_cancelled_before_it_begins():
    """World audit 26 and the outsider probe (48 % of cancelled sessions, tickets and shifts at 7f1caec's
    generator): a timed event is called off before it begins; a no-show is known only after."""
    spec, _ = synthesize(env_registry.theme("sms-appointment-reminders"))
    conn = _conn(spec)
    late = "SELECT COUNT(*), SUM(status_changed_at >= starts_at) FROM appointments WHERE status = ?"
    assert conn.execute(late, ("cancelled",)).fetchone()[0] > 10 and conn.execute(late, ("cancelled",)).fetchone()[1] == 0
    assert conn.execute(late, ("no_show",)).fetchone()[1] == conn.execute(late, ("no_show",)).fetchone()[0] > 0
    assert _flagged("sms-appointment-reminders", spec, conn, "stale_status") == []
    conn.execute("UPDATE appointments SET status_changed_at = starts_at WHERE id = (SELECT MIN(id) FROM appointments "
                 "WHERE status = 'cancelled' AND starts_at < ?)", (NOW,))
    assert _flagged("sms-appointment-reminders", spec, conn, "stale_status") == [
        "appointments.starts_at"]


def test_terms_set_the_due_date_and_an_audience_sees_only_what_is_out():
    """World audit 26 and the outsider scan at e160a4c: "net_15" invoices due five months after they were issued;
    lots still in draft with hundreds of views, scheduled newsletters already opened and clicked; an "smb"
    account with 49,942 employees."""
    spec, _ = synthesize(env_registry.theme("rare-coin-and-stamp-auctions"))
    conn = _conn(spec)
    gaps = dict(conn.execute("SELECT payment_terms, GROUP_CONCAT(DISTINCT julianday(due_on) - julianday(issued_on)) "
                             "FROM invoices WHERE issued_on IS NOT NULL GROUP BY 1").fetchall())
    assert {t: float(g) for t, g in gaps.items()} == {t: float(semantics.TERMS_DAYS[t]) for t in gaps}
    # a sent invoice is not yet due, an overdue one is past due, with the terms it has
    assert conn.execute("SELECT COUNT(*) FROM invoices WHERE (status = 'sent' AND due_on <= ?) OR "
                        "(status = 'overdue' AND due_on >= ?)", (NOW[:10], NOW[:10])).fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM lots WHERE status IN ('draft', 'scheduled', 'in_review') AND view_count > 0"
                        ).fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM lots WHERE status = 'published' AND view_count > 0").fetchone()[0] > 20
    assert [v for v in check_world("rare-coin-and-stamp-auctions", spec, conn)] == []
    conn.execute("UPDATE invoices SET due_on = date(due_on, '+3 days') WHERE id = 1")
    conn.execute("UPDATE lots SET view_count = 12 WHERE id = (SELECT MIN(id) FROM lots WHERE status = 'draft')")
    assert sorted((v.rule, v.where) for v in check_world("rare-coin-and-stamp-auctions", spec, conn)) == [
        ("clock_status", "invoices.due_on"), ("prestart_stamp", "lots.view_count")]
    spec, _ = synthesize(env_registry.theme("saas-opportunity-pipeline-forecasting"))
    conn = _conn(spec)
    for tier, (lo, hi) in semantics.TIER_HEADCOUNT.items():
        assert conn.execute("SELECT COUNT(*) FROM accounts WHERE tier = ? AND employee_count NOT BETWEEN ? AND ?",
                            (tier, lo, hi)).fetchone()[0] == 0
    conn.execute("UPDATE accounts SET employee_count = 47000 WHERE id = (SELECT MIN(id) FROM accounts WHERE tier = 'smb')")
    assert [v.where for v in check_world("saas-opportunity-pipeline-forecasting", spec, conn)] == ["accounts.employee_count"]


def test_world_audit_28_ages_tiers_closings_and_one_currency():
    """World audit 28 (three auditors, twelve worlds at 367aaad): an "infant" born in 1956 and a "senior" born in
    2011; a bronze member who has spent 23,902 beside a platinum one at 4,862; a match closed as done two
    months after kick-off; a travel agency's payments in KRW, INR and ZAR against one unit-less limit."""
    # (a holiday's passengers: a Segway tour's riders, where the audit found it, must be 14 or older since audit 89)
    spec, _ = synthesize(env_registry.theme("package-holiday-travel-agency"))
    conn = _conn(spec)
    for group, (lo, hi) in semantics.AGE_GROUPS.items():
        assert conn.execute("SELECT COUNT(*) FROM passengers WHERE age_group = ? AND ((julianday(?) - "
                            "julianday(date_of_birth)) / 365.25 NOT BETWEEN ? AND ?)", (group, NOW[:10], lo, hi + 1)
                            ).fetchone()[0] == 0
    conn.execute("UPDATE passengers SET date_of_birth = '1956-01-01' WHERE id = (SELECT MIN(id) FROM passengers WHERE "
                 "age_group = 'infant')")
    assert _flagged("package-holiday-travel-agency", spec, conn, "value_range") == ["passengers.date_of_birth"]
    spec, _ = synthesize(env_registry.theme("stadium-merchandise-kiosks"))
    conn = _conn(spec)
    late = conn.execute("SELECT COUNT(*), MAX(julianday(status_changed_at) - julianday(starts_at)) FROM match_days "
                        "WHERE status = 'done'").fetchone()
    assert late[0] > 10 and late[1] <= 1
    assert _flagged("stadium-merchandise-kiosks", spec, conn, "stale_status") == []
    conn.execute("UPDATE match_days SET status_changed_at = datetime(starts_at, '+30 days') WHERE id = "
                 "(SELECT MIN(id) FROM match_days WHERE status = 'done')")
    assert _flagged("stadium-merchandise-kiosks", spec, conn, "stale_status") == [
        "match_days.starts_at"]
    spec, _ = synthesize(env_registry.theme("package-holiday-travel-agency"))
    conn = _conn(spec)
    assert conn.execute("SELECT COUNT(DISTINCT currency) FROM payments").fetchone()[0] == 1
    # (a lead passenger's spend is what her bookings and payments say: no drawn figure; a tour's customer has one)
    assert not any("lifetime_spend" in {c["name"] for c in t["columns"]} for t in spec["tables"])
    spec, _ = synthesize(env_registry.theme("wine-tasting-tours"))
    conn = _conn(spec)
    customers = next(t["name"] for t in spec["tables"] if "loyalty_tier" in {c["name"] for c in t["columns"]}
                     and "lifetime_spend" in {c["name"] for c in t["columns"]})
    bands = conn.execute(f"SELECT loyalty_tier, MIN(lifetime_spend), MAX(lifetime_spend) FROM {customers} GROUP BY 1").fetchall()
    ranked = sorted(bands, key=lambda b: semantics.TIER_ORDER.index(b[0]))
    assert len(ranked) == 4 and all(a[2] <= b[1] for a, b in zip(ranked, ranked[1:]))
    conn.execute(f"UPDATE {customers} SET lifetime_spend = 24000 WHERE id = (SELECT MIN(id) FROM {customers} "
                 "WHERE loyalty_tier = 'bronze')")
    assert _flagged("wine-tasting-tours", spec, conn, "value_range") == [f"{customers}.lifetime_spend"]


def test_pay_contract_and_tenure_follow_the_job_title():
    """World audit 28: an Assistant Chauffeur on 246,845 beside a Senior Chauffeur on 40,680, an intern as Head
    Chauffeur, Trainee Chauffeurs hired ten years ago."""
    spec, _ = synthesize(env_registry.theme("limousine-chauffeur-dispatch"))
    conn = _conn(spec)
    rows = conn.execute("SELECT job_title, MIN(annual_salary), MAX(annual_salary) FROM chauffeurs GROUP BY 1").fetchall()
    pay = {semantics.seniority(t): (lo, hi) for t, lo, hi in rows}
    assert sorted(pay) == [0, 1, 2, 3, 4] and pay[0][1] < pay[2][0] < pay[4][0] and pay[1][1] < pay[3][0]
    assert {t for (t,) in conn.execute("SELECT DISTINCT job_title FROM chauffeurs WHERE employment_type = 'intern'")} == {
        "Trainee Chauffeur"}
    assert conn.execute("SELECT MIN(hire_date) FROM chauffeurs WHERE job_title = 'Trainee Chauffeur'").fetchone()[0] >= "2024-06-15"
    assert _flagged("limousine-chauffeur-dispatch", spec, conn, "value_range") == []
    conn.execute("UPDATE chauffeurs SET annual_salary = 246845, employment_type = 'intern' WHERE id = "
                 "(SELECT MIN(id) FROM chauffeurs WHERE job_title = 'Head Chauffeur')")
    conn.execute("UPDATE chauffeurs SET annual_salary = 246845 WHERE id = "
                 "(SELECT MIN(id) FROM chauffeurs WHERE job_title = 'Assistant Chauffeur')")
    assert _flagged("limousine-chauffeur-dispatch", spec, conn, "value_range") == [
        "chauffeurs.annual_salary", "chauffeurs.employment_type"]


def test_reference_values_and_infants_pass_the_lint_of_words_and_ranges():
    """Lint at adb8cf5: an ISO code ("IT" for Italy) is no trade's word, and an age group with infants starts at
    birth, so neither is a violation; a doubled name ("Scott Scott") is no slip of grammar."""
    from agentworld_envs.audit.lint import check_data, check_instructions, check_vocabulary

    spec, _ = synthesize(env_registry.theme("anime-figure-import-marketplace"))
    shops = _conn(spec).execute("SELECT DISTINCT country_code FROM shops").fetchall()
    assert ("IT",) in shops or len(shops) > 5
    assert [v for v in check_vocabulary(spec, "anime-figure-import-marketplace") if "country" in v.where] == []
    spec, _ = synthesize(env_registry.theme("package-holiday-travel-agency"))
    conn = _conn(spec)
    assert conn.execute("SELECT COUNT(*) FROM passengers WHERE age_group = 'infant'").fetchone()[0] > 0
    assert [v for v in check_data(spec, conn) if "birth" in v.where] == []
    tasks = [{"id": "t1", "instruction": "Look up the country of the artist named Scott Scott."},
             {"id": "t2", "instruction": "Cancel the the booking."}]
    assert [v.where for v in check_instructions(spec, tasks) if "doubled" in v.detail] == ["t2"]


def test_a_session_in_progress_by_its_scheduled_time_got_there_when_it_began():
    """Outsider probe at fcba649: therapy sessions in progress whose ``scheduled_at`` (the stamp of "scheduled",
    and when the session happens) lay weeks back, and whose status had changed in March."""
    spec, _ = synthesize(env_registry.theme("occupational-therapy-practice"))
    conn = _conn(spec)
    rows = conn.execute("SELECT MIN(scheduled_at), MIN(status_changed_at), COUNT(*) FROM therapy_sessions "
                        "WHERE status = 'in_progress'").fetchone()
    assert rows[2] > 5 and rows[0] >= "2026-06-15T11:50" and rows[1] >= rows[0]
    assert _flagged("occupational-therapy-practice", spec, conn, "stale_status") == []
    conn.execute("UPDATE therapy_sessions SET status_changed_at = '2026-03-17T15:01:44Z' WHERE id = "
                 "(SELECT MIN(id) FROM therapy_sessions WHERE status = 'in_progress')")
    assert _flagged("occupational-therapy-practice", spec, conn, "stale_status") == [
        "therapy_sessions.scheduled_at"]


def _joined(conn: sqlite3.Connection, child: str, parent: str) -> str:
    """The key column of ``child`` that points at ``parent``."""
    return next(r[3] for r in conn.execute(f'PRAGMA foreign_key_list("{child}")') if r[2] == parent)


def test_an_orders_subtotal_is_what_its_lines_come_to_at_their_products_prices():
    """Stop 40 scan of the catalogue: order lines priced with nothing to do with their products (0.00 to 43 times
    the price) and orders whose subtotal was not what their lines came to (21 envs). Each order now has a line,
    its subtotal is the sum of quantity x unit price, its tax and total follow, and a line costs its product."""
    name = "handmade-ceramics-webshop"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    rows = conn.execute("SELECT o.subtotal, o.tax_amount, o.total_amount, (SELECT SUM(round(quantity * unit_price, 2)) "
                        "FROM order_items WHERE order_id = o.id) FROM orders AS o").fetchall()
    assert rows and all(lines is not None and abs(sub - lines) < 0.015 for sub, _, _, lines in rows)
    assert all(abs(total - sub - tax) < 0.015 for sub, tax, total, _ in rows)
    fk = _joined(conn, "order_items", "pieces")
    assert conn.execute(f"SELECT COUNT(*) FROM order_items AS i JOIN pieces AS p ON p.id = i.{fk} "
                        "WHERE i.unit_price != p.price").fetchone()[0] == 0
    assert _flagged(name, spec, conn, "copied_figure") == []
    conn.execute("UPDATE order_items SET quantity = quantity + 1, unit_price = unit_price + 1 WHERE id = 1")
    assert _flagged(name, spec, conn, "copied_figure") == ["order_items.unit_price", "orders.subtotal"]


@pytest.mark.parametrize("name, child, parent, col, plant", [
    ("acupuncture-clinic", "appointments", "acupuncturists", "fee", "fee + 5"),               # a copy
    ("airport-car-rental-counter", "rental_agreements", "rental_vehicles", "daily_rate", "daily_rate * 0.5"),
    ("air-cargo-waybill-management", "cargo_pieces", "air_waybills", "weight_kg", "weight_kg + 100000"),   # pieces
    ("ach-origination-desk", "ach_returns", "ach_entries", "amount", "amount + 100000"),       # a claim on a payment
    ("billboard-ooh-inventory", "bookings", "billboard_faces", "total_price", "0.01"),         # a total of one or more
])
def test_a_figure_follows_the_figure_of_the_record_it_points_at(name, child, parent, col, plant):
    """Stop 40 scan: appointments not costing their practitioner's fee, rentals at another daily rate than their
    vehicle's, cargo pieces heavier than their waybill, returns above the entry returned, bookings below one
    night of their face (118 envs). Synthesis links each figure; the lint finds one planted off."""
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    fk = _joined(conn, child, parent)
    assert conn.execute(f"SELECT COUNT(*) FROM {child} WHERE {fk} IS NOT NULL AND {col} IS NOT NULL").fetchone()[0] > 5
    assert _flagged(name, spec, conn, "copied_figure") == []
    conn.execute(f"UPDATE {child} SET {col} = {plant} WHERE id = (SELECT MIN(id) FROM {child} WHERE {fk} IS NOT NULL "
                 f"AND {col} IS NOT NULL)")
    # (a hire's charge is its daily rate times its days: a rate planted off leaves the charge off too)
    also = [f"{child}.total_charge"] if semantics.charged_by_day(spec["data"]["tables"][child]["columns"]) \
        and col == "daily_rate" else []
    assert _flagged(name, spec, conn, "copied_figure") == sorted([f"{child}.{col}", *also])


def test_spec_validation_of_figure_links():
    """The generators behind the links say what they need: a side, a known field, the lines' figures."""
    from agentworld_envs.engine.spec import SpecError, validate_spec

    spec, _ = synthesize(env_registry.theme("handmade-ceramics-webshop"))
    validate_spec(spec)
    for table, col, change in [("order_items", "unit_price", {"gen": "within", "via": "piece_id", "table": "pieces",
                                                              "field": "price", "side": "up",
                                                              "inner": {"gen": "money", "min": 1, "max": 2}}),
                               ("orders", "subtotal", {"gen": "rollup", "table": "order_items", "key": "order_id",
                                                       "figures": ["weight"], "inner": {"gen": "money", "min": 1, "max": 2}}),
                               ("order_items", "order_id", {"gen": "ref", "ref": "orders.id", "cover": "yes"})]:
        bad = copy.deepcopy(spec)
        bad["data"]["tables"][table]["columns"][col] = change
        with pytest.raises(SpecError):
            validate_spec(bad)


@pytest.mark.parametrize("name, table, lo, hi", [
    ("mail-order-pharmacy", "shipments", 0.2, 30), ("equine-veterinary-practice", "horses", 320, 780),
    ("ocean-container-booking-desk", "containers", 0, 30000), ("airline-baggage-claims", "bags", 2, 32),
    ("print-and-mail-letters-api", "mailpieces", 0.02, 1.5), ("mouse-colony-breeding-management", "mouses", 0.015, 0.06),
])
def test_what_a_thing_weighs_fits_what_it_is(name, table, lo, hi):
    """Stop 40 scan: every weighed thing drew 0.1 to 500 kg (letters of 257 kg on average, parcels of a ceramics
    webshop up to 500 kg, horses and mice of 0.2 to 60 kg, shipping containers of 90 kg). A weight now follows
    what is weighed, and the lint finds one planted off."""
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    low, high, n = conn.execute(f"SELECT MIN(weight_kg), MAX(weight_kg), COUNT(weight_kg) FROM {table}").fetchone()
    assert n > 10 and lo <= low and high <= hi
    assert _flagged(name, spec, conn, "value_range") == []
    conn.execute(f"UPDATE {table} SET weight_kg = {hi * 10} WHERE id = (SELECT MIN(id) FROM {table})")
    assert _flagged(name, spec, conn, "value_range") == [f"{table}.weight_kg"]


def test_nothing_open_under_a_shut_record_nor_made_after_it_was_shut():
    """World audit 40: crossings still scheduled or in progress on ferries' vehicles taken out of service, orders
    placed with suppliers weeks after they went inactive, requests filed on units discontinued years before.
    A record still open points at a parent not shut, and nothing is made under a parent after the day it was
    shut; the lint finds one of each planted."""
    name = "ferry-vehicle-deck-booking"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    shut = conn.execute("SELECT COUNT(*) FROM vehicles WHERE status IN ('inactive', 'discontinued')").fetchone()[0]
    open_under_shut = conn.execute(
        "SELECT COUNT(*) FROM crossings AS c JOIN vehicles AS v ON v.id = c.vehicle_id WHERE v.status IN "
        "('inactive', 'discontinued') AND c.status IN ('scheduled', 'rescheduled', 'in_progress')").fetchone()[0]
    assert shut > 3 and open_under_shut == 0
    assert _flagged(name, spec, conn, "shut_parent") == []
    conn.execute("UPDATE crossings SET status = 'scheduled', vehicle_id = (SELECT MIN(id) FROM vehicles WHERE status = "
                 "'inactive') WHERE id = (SELECT MIN(id) FROM crossings)")
    assert _flagged(name, spec, conn, "shut_parent") == ["crossings.vehicle_id"]

    name = "antibody-reagent-stock"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    late = ("SELECT COUNT(*) FROM purchase_orders AS o JOIN suppliers AS s ON s.id = o.supplier_id WHERE s.status IN "
            "('inactive', 'discontinued') AND substr(o.order_date, 1, 10) > substr(s.status_changed_at, 1, 10)")
    assert conn.execute(late).fetchone()[0] == 0
    assert _flagged(name, spec, conn, "shut_parent") == []
    conn.execute("UPDATE purchase_orders SET status = 'delivered', order_date = '2026-06-14', supplier_id = (SELECT MIN(id) "
                 "FROM suppliers WHERE status = 'inactive' AND status_changed_at < '2026-06-01') WHERE id = 1")
    assert conn.execute(late).fetchone()[0] == 1
    assert _flagged(name, spec, conn, "shut_parent") == ["purchase_orders.order_date"]


def test_no_work_takes_place_on_a_record_after_it_was_shut():
    """World audit 41: canal-boat routes done on 2026-06-06 with a boat discontinued on 05-13, car-park runs on
    vehicles inactive since April (48 of 400 built worlds had such rows). A record's work (its start, where its
    status says the work took place) comes no later than the day its parent was shut; the lint finds one
    planted."""
    name = "canal-boat-tours"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    late = ("SELECT COUNT(*) FROM routes AS r JOIN canal_boats AS b ON b.id = r.canal_boat_id WHERE b.status IN "
            "('inactive', 'discontinued') AND r.status IN ('done', 'in_progress') "
            "AND substr(r.route_date, 1, 10) > substr(b.status_changed_at, 1, 10)")
    worked = conn.execute("SELECT COUNT(*) FROM routes AS r JOIN canal_boats AS b ON b.id = r.canal_boat_id WHERE "
                          "b.status IN ('inactive', 'discontinued') AND r.status = 'done'").fetchone()[0]
    assert worked > 3 and conn.execute(late).fetchone()[0] == 0
    assert _flagged(name, spec, conn, "shut_parent") == []
    conn.execute("UPDATE routes SET route_date = '2026-06-14' WHERE id = (SELECT r.id FROM routes AS r JOIN canal_boats "
                 "AS b ON b.id = r.canal_boat_id WHERE r.status = 'done' AND b.status IN ('inactive', 'discontinued') "
                 "AND b.status_changed_at < '2026-06-01' ORDER BY r.id LIMIT 1)")
    assert conn.execute(late).fetchone()[0] == 1
    assert _flagged(name, spec, conn, "shut_parent") == ["routes.route_date"]


def test_what_came_about_under_a_record_did_so_while_it_stood():
    """World audit 72: alarms triggered on a panel a year after it was retired, or two weeks before it was
    installed (98 of 468 events); hauls shipped with a carrier discontinued weeks before and since delivered. A
    stamp every record holds (an alert's ``triggered_at``, whatever status it has reached since) comes after its
    parent was made and no later than the day it was shut, and a consignment on the road or delivered was shipped
    while its carrier still ran; the lint finds each planted."""
    name = "home-alarm-monitoring-center"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    join = "FROM alarm_events AS e JOIN alarm_panels AS p ON p.id = e.alarm_panel_id "
    early = f"SELECT COUNT(*) {join}WHERE substr(e.triggered_at, 1, 10) < p.installed_on"
    late = f"SELECT COUNT(*) {join}WHERE p.status = 'retired' AND substr(e.triggered_at, 1, 10) > substr(p.status_changed_at, 1, 10)"
    under_retired = conn.execute(f"SELECT COUNT(*) {join}WHERE p.status = 'retired'").fetchone()[0]
    assert under_retired > 3 and conn.execute(early).fetchone()[0] == 0 and conn.execute(late).fetchone()[0] == 0
    assert _flagged(name, spec, conn, "before_parent") == [] and _flagged(name, spec, conn, "shut_parent") == []
    event, installed = conn.execute(f"SELECT e.id, p.installed_on {join}WHERE e.status = 'resolved' ORDER BY e.id").fetchone()
    conn.execute("UPDATE alarm_events SET triggered_at = date(?, '-3 days') || 'T10:00:00Z' WHERE id = ?", (installed, event))
    assert _flagged(name, spec, conn, "before_parent") == ["alarm_events.triggered_at"]
    conn.execute("UPDATE alarm_events SET triggered_at = date(?, '+3 days') || 'T10:00:00Z' WHERE id = ?", (installed, event))
    event, gone = conn.execute(f"SELECT e.id, p.status_changed_at {join}WHERE p.status = 'retired' AND "
                               "p.status_changed_at < '2026-05-01' AND e.status = 'resolved' ORDER BY e.id").fetchone()
    conn.execute("UPDATE alarm_events SET triggered_at = date(?, '+9 days') || 'T10:00:00Z' WHERE id = ?", (gone, event))
    assert conn.execute(late).fetchone()[0] == 1
    assert _flagged(name, spec, conn, "shut_parent") == ["alarm_events.triggered_at"]

    name = "vehicle-transport-car-carrier-dispatch"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    join = "FROM vehicle_hauls AS h JOIN auto_transporters AS a ON a.id = h.auto_transporter_id "
    shut = "a.status IN ('inactive', 'discontinued')"
    late = f"SELECT COUNT(*) {join}WHERE {shut} AND h.status = 'delivered' AND h.ship_date > substr(a.status_changed_at, 1, 10)"
    delivered = conn.execute(f"SELECT COUNT(*) {join}WHERE {shut} AND h.status = 'delivered'").fetchone()[0]
    assert delivered > 3 and conn.execute(late).fetchone()[0] == 0
    assert _flagged(name, spec, conn, "shut_parent") == []
    haul, gone = conn.execute(f"SELECT h.id, a.status_changed_at {join}WHERE {shut} AND h.status = 'delivered' "
                              "AND a.status_changed_at < '2026-05-01' ORDER BY h.id").fetchone()
    conn.execute("UPDATE vehicle_hauls SET ship_date = date(?, '+5 days') WHERE id = ?", (gone, haul))
    assert conn.execute(late).fetchone()[0] == 1
    assert _flagged(name, spec, conn, "shut_parent") == ["vehicle_hauls.ship_date"]


def test_an_inspection_passed_on_its_score():
    """World audit 72: condition reports passed on a score of 14 with 8 issues and failed on 99, done ones with no
    score (3,453 of 7,581 verdicts in 77 worlds). A pass scored at least the pass mark and found few issues, a
    fail scored less, and a decided inspection has its score; the lint finds one planted."""
    name = "vehicle-transport-car-carrier-dispatch"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    mark = semantics.PASS_MARK
    rows = conn.execute("SELECT passed, score, issues_found FROM condition_reports WHERE passed IS NOT NULL").fetchall()
    assert {p for p, _, _ in rows} == {0, 1} and all(s is not None and (s >= mark) == bool(p) for p, s, _ in rows)
    assert all(i <= 2 for p, _, i in rows if p) and all(i >= 1 for p, _, i in rows if not p)
    assert _flagged(name, spec, conn, "impossible") == []
    conn.execute("UPDATE condition_reports SET score = ? WHERE id = (SELECT MIN(id) FROM condition_reports WHERE passed = 1)",
                 (mark - 50,))
    assert _flagged(name, spec, conn, "impossible") == ["condition_reports.passed"]


def test_a_customer_signed_up_long_enough_ago_to_have_spent_what_they_did():
    """World audit 72: a gift-card buyer signed up on 2026-05-28 with 20,669.71 spent, a vehicle owner yesterday
    with 8,948.27 (5,911 customers in 303 worlds past 150 a day). The spend follows the loyalty tier, so the
    sign-up date follows the spend; the lint finds one planted."""
    name = "wine-tasting-tours"   # (a gift-card buyer's spend is now what her purchases say: no drawn figure)
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    spend, since, per_day = semantics.spent_since(["lifetime_spend", "signup_date"]) or ("", "", 0)
    over = (f"SELECT COUNT(*) FROM customers WHERE {spend} > {per_day} * max(0, julianday('{NOW.rstrip('Z')}') - "
            f"julianday({since}))")
    # spenders a few days could not account for exist (the spend is on a gift-card buyer's scale)
    assert conn.execute(f"SELECT COUNT(*) FROM customers WHERE {spend} > 4 * {per_day}").fetchone()[0] > 10
    assert conn.execute(over).fetchone()[0] == 0 and _flagged(name, spec, conn, "value_range") == []
    conn.execute(f"UPDATE customers SET {since} = '2026-06-13' WHERE id = (SELECT MIN(id) FROM customers WHERE "
                 f"{spend} > 4 * {per_day})")
    assert conn.execute(over).fetchone()[0] == 1
    assert _flagged(name, spec, conn, "value_range") == [f"customers.{spend}"]


def test_a_photo_is_an_image_and_a_report_a_document():
    """World audit 72: code-violation photos saved as .xlsx and .docx, inspection reports as .jpg (14,000 files in
    58 worlds). A file column takes the types its name says; the lint finds one planted."""
    name = "code-enforcement-violations"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    photos = {p.rsplit(".", 1)[1] for p, in conn.execute("SELECT photo_file FROM code_violations WHERE photo_file IS NOT NULL")}
    reports = {p.rsplit(".", 1)[1] for p, in conn.execute("SELECT report_file FROM inspections WHERE report_file IS NOT NULL")}
    assert photos and photos <= {"jpg", "png", "heic"} and reports and reports <= {"pdf", "docx", "xlsx", "csv"}
    assert _flagged(name, spec, conn, "impossible") == []
    conn.execute("UPDATE code_violations SET photo_file = 'code_violation_0001.xlsx' WHERE id = (SELECT MIN(id) FROM "
                 "code_violations WHERE photo_file IS NOT NULL)")
    conn.execute("UPDATE inspections SET report_file = 'inspection_0001.png' WHERE id = 1")
    assert _flagged(name, spec, conn, "impossible") == ["code_violations.photo_file", "inspections.report_file"]


def test_a_vehicle_runs_up_no_more_than_a_years_most_each_year():
    """World audit 72: a 2025 Toyota with 389,049 km, a 2024 car with 373,279 (2,022 vehicles in 73 worlds past
    45,000 km a year). A vehicle's odometer is at most a year's most for each year since its model year; the lint
    finds one planted."""
    name = "vehicle-transport-car-carrier-dispatch"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    _, _, per_year = next(y for y in semantics.YEARLY if y[0] == "odometer_km")
    rows = conn.execute("SELECT model_year, odometer_km FROM transported_vehicles WHERE odometer_km IS NOT NULL").fetchall()
    assert len(rows) > 20 and max(km for _, km in rows) > 100_000
    assert all(km <= per_year * (2026.45 - year + 0.5) for year, km in rows)
    assert _flagged(name, spec, conn, "value_range") == []
    conn.execute("UPDATE transported_vehicles SET model_year = 2025, odometer_km = 389049 WHERE id = 1")
    assert _flagged(name, spec, conn, "value_range") == ["transported_vehicles.odometer_km"]


def test_an_incident_lasts_from_its_declaration_to_its_resolution():
    """World audit 72: a dispatch declared at 10:52 and resolved at 11:31 "lasting" 1,108 minutes, triggered ones
    with lengths, resolutions months after the alarm (54 of 55 resolved incidents in one world). A resolved
    incident's length is the time from its declaration to its resolution, within days; an open one has none. The
    lint finds one planted."""
    name = "home-alarm-monitoring-center"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    rows = conn.execute("SELECT status, duration_minutes, (julianday(status_changed_at) - julianday(declared_at)) * 1440 "
                        "FROM dispatches").fetchall()
    assert {st for st, _, _ in rows} == {"triggered", "acknowledged", "mitigated", "resolved"}
    assert all((m is None) == (st != "resolved") for st, m, _ in rows)
    assert all(abs(m - span) <= 1 and m <= semantics.INCIDENT_DAYS * 1440 for st, m, span in rows if st == "resolved")
    assert _flagged(name, spec, conn, "copied_figure") == []
    conn.execute("UPDATE dispatches SET duration_minutes = duration_minutes + 600 WHERE id = (SELECT MIN(id) FROM dispatches "
                 "WHERE status = 'resolved')")
    assert _flagged(name, spec, conn, "copied_figure") == ["dispatches.duration_minutes"]


def test_an_exception_code_marks_an_exception():
    """World audit 72: parcel events of type "exception" with code "none", a label created with code "damaged"
    (20 of 28 coded events in one world). A tracking event has a code exactly where it is an exception; the lint
    finds one planted."""
    name = "parcel-locker-network"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    pairs = conn.execute("SELECT event_type, exception_code FROM tracking_events").fetchall()
    assert any(t == "exception" for t, _ in pairs) and all((t == "exception") == (c != "none") for t, c in pairs)
    assert _flagged(name, spec, conn, "impossible") == []
    conn.execute("UPDATE tracking_events SET exception_code = 'damaged' WHERE id = (SELECT MIN(id) FROM tracking_events "
                 "WHERE event_type = 'label_created')")
    assert _flagged(name, spec, conn, "impossible") == ["tracking_events.exception_code"]

    # where the events that go wrong are called otherwise (a letter returned to its sender), those carry the codes
    name = "print-and-mail-letters-api"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    pairs = conn.execute("SELECT event_type, exception_code FROM tracking_events").fetchall()
    assert all((t == "returned_to_sender") == (c != "none") for t, c in pairs)
    conn.execute("UPDATE tracking_events SET exception_code = 'customs_hold' WHERE id = (SELECT MIN(id) FROM "
                 "tracking_events WHERE event_type = 'delivered')")
    assert _flagged(name, spec, conn, "impossible") == ["tracking_events.exception_code"]


def test_a_vehicle_runs_on_a_fuel_of_its_kind():
    """World audit 72: cars on jet_a, a light jet on diesel, a coach on propane (37 of 88 vehicles in one world).
    A vehicle's fuel fits its type; the lint finds one planted."""
    name = "airport-parking-reservations"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    pairs = conn.execute("SELECT DISTINCT vehicle_type, fuel_type FROM vehicles WHERE fuel_type IS NOT NULL").fetchall()
    assert {("light_jet", "jet_a"), ("car", "gasoline")} <= set(pairs)
    assert all((f == "jet_a") == ("jet" in t) for t, f in pairs)
    assert _flagged(name, spec, conn, "impossible") == []
    conn.execute("UPDATE vehicles SET fuel_type = 'jet_a' WHERE id = (SELECT MIN(id) FROM vehicles WHERE vehicle_type = 'car')")
    assert _flagged(name, spec, conn, "impossible") == ["vehicles.fuel_type"]


def test_a_cancelled_subscription_renews_nothing():
    """World audit 72: 16 of 17 cancelled status-page subscriptions still set to auto-renew (12,183 of 15,391 shut
    records in 237 worlds), preferred manufacturers gone inactive, approved draft pull requests. A shut record
    holds none of those flags, nor a record past its draft the draft flag; the lint finds one planted. (A status
    page's free subscribers now hold no renewal at all: a mail host's plans stand in.)"""
    name = "business-email-hosting"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    by = dict(conn.execute("SELECT status, SUM(auto_renew) FROM mail_plans GROUP BY status").fetchall())
    assert by["cancelled"] == 0 and by["active"] > 10
    assert _flagged(name, spec, conn, "impossible") == []
    conn.execute("UPDATE mail_plans SET auto_renew = 1 WHERE id = (SELECT MIN(id) FROM mail_plans WHERE status = 'cancelled')")
    assert _flagged(name, spec, conn, "impossible") == ["mail_plans.auto_renew"]


def test_a_payment_settles_within_days_and_a_report_follows_the_work():
    """World audit 72: card payments captured 147 days after they were received (71,878 of 102,990 in 243 worlds);
    condition reports on file for inspections still scheduled or cancelled (6,453 in 38 worlds). A payment is
    captured, fails or is voided within days of being received; a report exists once the work is done. The lint
    finds one of each planted."""
    name = "529-college-savings-plans"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    days = dict(conn.execute("SELECT status, MAX(julianday(status_changed_at) - julianday(received_at)) FROM "
                             "qualified_withdrawals GROUP BY status").fetchall())
    assert days["captured"] <= semantics.SETTLE_DAYS["captured"] and days["refunded"] > 30   # a refund may come later
    assert _flagged(name, spec, conn, "stale_status") == []
    conn.execute("UPDATE qualified_withdrawals SET status_changed_at = datetime(received_at, '+40 days') WHERE id = "
                 "(SELECT MIN(id) FROM qualified_withdrawals WHERE status = 'captured' AND received_at < '2026-04-01')")
    assert _flagged(name, spec, conn, "stale_status") == ["qualified_withdrawals.status_changed_at"]

    name = "vehicle-transport-car-carrier-dispatch"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    filed = dict(conn.execute("SELECT status, COUNT(report_file) FROM condition_reports GROUP BY status").fetchall())
    assert filed["scheduled"] == filed["cancelled"] == 0 and filed["done"] > 10
    assert _flagged(name, spec, conn, "prestart_stamp") == []
    conn.execute("UPDATE condition_reports SET report_file = 'condition_report_0001.pdf' WHERE id = (SELECT MIN(id) FROM "
                 "condition_reports WHERE status = 'scheduled')")
    assert _flagged(name, spec, conn, "prestart_stamp") == ["condition_reports.report_file"]


def test_a_live_subscriptions_period_ends_at_its_next_renewal():
    """World audit 72: active monthly subscriptions whose current period ran to August, annual periods of weeks
    (12,173 of 31,771 live subscriptions in 94 worlds). A live subscription's period ends at its first renewal
    after today - its start plus whole billing periods; the lint finds one planted."""
    from agentworld_envs.engine.datagen import period_after

    name = "business-email-hosting"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    live = conn.execute("SELECT billing_period, started_on, current_period_end FROM mail_plans WHERE status IN "
                        "('active', 'trialing', 'paused')").fetchall()
    assert {p for p, _, _ in live} == {"monthly", "quarterly", "annual"}
    assert all("2026-06-15" < end <= period_after("2026-06-15", p) for p, _, end in live)
    assert all(end[8:] == start[8:] for p, start, end in live if p == "monthly" and start[8:] <= "28")   # renewal day
    assert _flagged(name, spec, conn, "clock_status") == []
    conn.execute("UPDATE mail_plans SET current_period_end = '2026-08-30' WHERE id = (SELECT MIN(id) FROM mail_plans "
                 "WHERE status = 'active' AND billing_period = 'monthly')")
    assert _flagged(name, spec, conn, "clock_status") == ["mail_plans.current_period_end"]


def test_what_a_status_or_an_outcome_fixes():
    """World audit 73: processor fees on failed and voided payments (24,993 of 25,787 in 243 worlds), missed calls
    lasting 45 minutes, satisfaction ratings on open tickets and first responses on new ones, checks that passed
    with exit code 137. A failed payment paid no fee, an unanswered call lasted no time, an open ticket has no
    rating, a check's exit code says whether it passed; the lint finds each planted."""
    name = "debt-collection-agency"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    fees = dict(conn.execute("SELECT status, MAX(processor_fee) FROM payments GROUP BY status").fetchall())
    calls = dict(conn.execute("SELECT outcome, MAX(duration_seconds) FROM call_records GROUP BY outcome").fetchall())
    assert fees["failed"] == fees["voided"] == 0 and fees["captured"] > 0
    assert calls["missed"] == calls["busy"] == 0 and calls["answered"] > 60
    assert _flagged(name, spec, conn, "impossible") == []
    conn.execute("UPDATE payments SET processor_fee = 4.2 WHERE id = (SELECT MIN(id) FROM payments WHERE status = 'failed')")
    conn.execute("UPDATE call_records SET duration_seconds = 1969 WHERE id = (SELECT MIN(id) FROM call_records WHERE "
                 "outcome = 'missed')")
    assert _flagged(name, spec, conn, "impossible") == ["call_records.duration_seconds", "payments.processor_fee"]

    name = "dependency-update-bot"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    codes = conn.execute("SELECT status, MIN(exit_code), MAX(exit_code), COUNT(exit_code) FROM ci_checks GROUP BY status"
                         ).fetchall()
    by = {st: (lo, hi, n) for st, lo, hi, n in codes}
    assert by["passed"][:2] == (0, 0) and by["failed"][0] > 0 and by["queued"][2] == 0
    assert _flagged(name, spec, conn, "impossible") == []
    conn.execute("UPDATE ci_checks SET exit_code = 137 WHERE id = (SELECT MIN(id) FROM ci_checks WHERE status = 'passed')")
    assert _flagged(name, spec, conn, "impossible") == ["ci_checks.exit_code"]


def test_a_visits_reason_is_why_it_was_booked():
    """World audit 73: "Budget change" and "Duplicate entry" as the reason for 526 of 526 podiatry visits (cancellation
    reasons in the reason column of 119 worlds' appointments and referrals). A visit's reason says why it was booked;
    the lint finds a cancellation's planted."""
    from agentworld_envs.engine.textgen import PURPOSES, REASONS

    name = "podiatry-clinic"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    reasons = {r for r, in conn.execute("SELECT DISTINCT reason FROM appointments WHERE reason IS NOT NULL")}
    assert reasons and reasons <= set(PURPOSES["visit"])
    flagged = lambda: _data_flagged(spec, conn, "foreign_vocab")  # noqa: E731
    assert flagged() == []
    conn.execute("UPDATE appointments SET reason = ? WHERE id = 1", (REASONS[3],))
    assert flagged() == ["appointments.reason"]


def test_nobody_registers_before_being_born_and_a_pet_owner_is_no_pet():
    """World audit 73: patients registered years before they were born (1,286 people in 163 worlds), pet owners born
    two days ago with 20,000 spent. What a person did comes after their birth, and the keeper of an animal is an
    adult; the lint finds one planted."""
    name = "veterinary-clinic-appointments"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    youngest = conn.execute("SELECT MAX(date_of_birth) FROM pet_owners").fetchone()[0]
    assert youngest <= "2008-06-15"
    assert conn.execute("SELECT COUNT(*) FROM pet_owners WHERE signup_date < date_of_birth").fetchone()[0] == 0
    flagged = lambda: _data_flagged(spec, conn, "date_order")  # noqa: E731
    assert flagged() == []
    conn.execute("UPDATE pet_owners SET signup_date = date(date_of_birth, '-3 days') WHERE id = (SELECT MIN(id) FROM "
                 "pet_owners WHERE date_of_birth IS NOT NULL)")
    assert flagged() == ["pet_owners.signup_date"]


@pytest.mark.parametrize("name, table, day", [("canal-boat-tours", "routes", "route_date"),
                                             ("dialysis-center-sessions", "chair_shifts", "shift_date")])
def test_a_dated_run_follows_its_time_of_day(name, table, day):
    """World audit 41: routes and shifts dated "2026-05-05" at "08:00" marked done at 04:10 that morning, runs in
    progress at noon that start at 13:00 (20 of 400 built worlds). A run is done or under way after its date
    and time, called off before them, and under way now only once they have come; the lint finds each planted."""
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    moment = f"({day} || 'T' || start_time)"
    counts = conn.execute(f"SELECT SUM(status IN ('done', 'in_progress')), SUM(status = 'cancelled'), "
                          f"SUM(status IN ('done', 'in_progress') AND status_changed_at < {moment}), "
                          f"SUM(status = 'cancelled' AND status_changed_at >= {moment}), "
                          f"SUM(status = 'in_progress' AND {moment} > '2026-06-15T12:00') FROM {table}").fetchone()
    assert counts[0] > 20 and counts[1] > 5 and counts[2:] == (0, 0, 0), counts
    assert _flagged(name, spec, conn, "stale_status") == []
    conn.execute(f"UPDATE {table} SET status_changed_at = {day} || 'T00:30:00Z' WHERE id = "
                 f"(SELECT MIN(id) FROM {table} WHERE status = 'done' AND start_time > '01:00')")
    # (a run with a duration, done before it began, is also done before that duration was over)
    lasted = [f"{table}.{c}" for c in spec["data"]["tables"][table]["columns"] if c == "duration_hours"]
    assert _flagged(name, spec, conn, "stale_status") == sorted([f"{table}.start_time", *lasted])


def test_a_key_drawn_for_two_makings_keeps_both():
    """Stop 41 world sample: a membership started 2024-10-10 by a member who joined on 2026-06-12. Its member
    was drawn among those whose club had opened in time (the club is copied through the member), and that
    constraint had replaced the member's own making; the key now keeps both."""
    name = "gym-franchise-multi-club-reporting"
    spec, _ = synthesize(env_registry.theme(name))
    made_by = spec["data"]["tables"]["memberships"]["columns"]["member_id"]["made_by"]
    assert made_by.get("through") and "joined_on" in made_by.get("own", ())
    conn = _conn(spec)
    early = conn.execute("SELECT COUNT(*) FROM memberships AS m JOIN members AS p ON p.id = m.member_id "
                         "WHERE substr(m.start_date, 1, 10) < substr(p.joined_on, 1, 10)").fetchone()[0]
    assert early == 0 and _flagged(name, spec, conn, "before_parent") == []


@pytest.mark.parametrize("name", ["boutique-hotel-front-desk", "campervan-hire"])
def test_a_stay_is_completed_once_its_nights_are_over(name):
    """World audit 42: every completed reservation of a boutique hotel and a campervan hire was closed on its
    check-in day, whatever its nights (a 7-night stay from 06-10 "completed" on 06-10, another whose nights run
    to 06-16). A completed stay began its nights ago and closed once they were over; the lint finds one
    planted."""
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    table = next(t["name"] for t in spec["tables"] if {"nights", "check_in_date", "status"} <= {c["name"] for c in t["columns"]})
    done, early, running, long_ = conn.execute(
        f"SELECT COUNT(*), SUM(date(check_in_date, '+' || nights || ' days') > substr(status_changed_at, 1, 10)), "
        f"SUM(date(check_in_date, '+' || nights || ' days') > '2026-06-15'), SUM(nights >= 7) FROM {table} "
        f"WHERE status = 'completed'").fetchone()
    assert done > 50 and long_ > 5 and early == 0 and running == 0
    assert _flagged(name, spec, conn, "stale_status") == []
    conn.execute(f"UPDATE {table} SET status_changed_at = check_in_date || 'T18:00:00Z' WHERE id = "
                 f"(SELECT MIN(id) FROM {table} WHERE status = 'completed' AND nights >= 3)")
    assert _flagged(name, spec, conn, "stale_status") == [f"{table}.nights"]


def test_an_inspection_is_of_its_runs_product_and_a_dropped_run_cost_nothing():
    """World audit 40: no quality inspection was of its production run's SKU (0 of 33), every run dropped as
    "won't do" from the backlog carried an actual cost, inspections found more defects than they sampled. A
    record's key named as its other record names it points at the same one; a dropped run has no actual cost;
    defects stay within the sample."""
    name = "beverage-co-packer-runs"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    n, same = conn.execute("SELECT COUNT(*), SUM(q.sku_id = r.sku_id) FROM quality_inspections AS q JOIN production_runs "
                           "AS r ON r.id = q.production_run_id WHERE r.sku_id IS NOT NULL").fetchone()
    assert n > 20 and same == n
    assert conn.execute("SELECT COUNT(*), COUNT(actual_cost) FROM production_runs WHERE status = 'wont_do'").fetchone()[1] == 0
    assert conn.execute("SELECT COUNT(*) FROM quality_inspections WHERE defects_found > sample_size").fetchone()[0] == 0
    assert _flagged(name, spec, conn, "same_parent") == _flagged(name, spec, conn, "prestart_stamp") == []
    assert _flagged(name, spec, conn, "over_cap") == []
    conn.execute("UPDATE quality_inspections SET sku_id = sku_id + 1, defects_found = sample_size + 1 WHERE id = "
                 "(SELECT MIN(q.id) FROM quality_inspections AS q JOIN production_runs AS r ON r.id = q.production_run_id "
                 "WHERE r.sku_id IS NOT NULL)")
    conn.execute("UPDATE production_runs SET actual_cost = 100 WHERE id = (SELECT MIN(id) FROM production_runs "
                 "WHERE status = 'wont_do')")
    assert _flagged(name, spec, conn, "same_parent") == ["quality_inspections.production_run_id"]
    assert _flagged(name, spec, conn, "over_cap") == ["quality_inspections.defects_found"]
    assert "production_runs.actual_cost" in _flagged(name, spec, conn, "prestart_stamp")


def test_a_parcel_on_its_way_is_expected_soon():
    """Blind round 29: shipments out for delivery with an estimated delivery two months ahead (581 of 784 rows
    in such statuses were expected more than a fortnight out). Out for delivery is expected by tomorrow, in
    transit within the week (it may run late); the lint finds one planted off."""
    name = "handmade-ceramics-webshop"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    latest = dict(conn.execute("SELECT status, MAX(estimated_delivery) FROM shipments GROUP BY 1").fetchall())
    assert latest["out_for_delivery"] <= "2026-06-16" and latest["in_transit"] <= "2026-06-22"
    assert _flagged(name, spec, conn, "stale_status") == []
    conn.execute("UPDATE shipments SET estimated_delivery = '2026-08-12' WHERE id = (SELECT MIN(id) FROM shipments "
                 "WHERE status = 'out_for_delivery')")
    assert _flagged(name, spec, conn, "stale_status") == ["shipments.estimated_delivery"]


def test_one_holders_numbers_are_never_shared():
    """An audit found three unrelated payees on one IBAN and two vehicles on one plate: a holder's own number
    (IBAN, plate, phone, EAN) is dealt out of a pool without repeats."""
    from agentworld_envs.catalogue.catalog import load_bundle

    checked = 0
    for name in ("b2b-cross-border-payments", "airport-parking-reservations", "canal-boat-tours", "airport-car-rental-counter"):
        b = load_bundle(name)
        conn = sqlite3.connect(":memory:")
        conn.deserialize(b.golden)
        for table, spec in b.spec["data"]["tables"].items():
            for col, g in spec["columns"].items():
                while g.get("gen") not in ("faker", None) and isinstance(g.get("inner"), dict):
                    g = g["inner"]
                if g.get("gen") == "faker" and g.get("provider") in datagen.OWN_PROVIDERS:
                    values = [r[0] for r in conn.execute(f'SELECT "{col}" FROM "{table}" WHERE "{col}" IS NOT NULL')]
                    assert len(values) == len(set(values)), (name, table, col)
                    checked += 1
    assert checked >= 4


@pytest.mark.parametrize("name, table", [("campervan-hire", "hires"), ("airport-car-rental-counter", "rental_agreements")])
def test_a_hire_costs_its_daily_rate_for_each_day_it_runs(name, table):
    """World audit 41: hire charges that were not rate x days (66 days at 85.48 came to 1,096.30) and
    campervans out for three months. A hire runs 1 to 14 whole days (returned at the time of day it was
    picked up), one still out was picked up within them, and its charge is the daily rate times the days;
    the lint finds a charge or a return planted off."""
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    rows = conn.execute(f"SELECT status, pickup_at, return_due_at, daily_rate, total_charge FROM {table} "
                        "WHERE pickup_at IS NOT NULL AND return_due_at IS NOT NULL").fetchall()
    assert len(rows) > 100
    for status, pickup, back, rate, charge in rows:
        days = (datagen.parse_when(back) - datagen.parse_when(pickup)) / dt.timedelta(days=1)
        assert days == int(days) and 1 <= days <= 14, (status, pickup, back)
        assert charge == round(rate * days, 2)
    assert {r[0] for r in rows} >= {"completed", "confirmed"}
    assert _flagged(name, spec, conn, "copied_figure") == []
    conn.execute(f"UPDATE {table} SET total_charge = total_charge + 10 WHERE id = (SELECT MIN(id) FROM {table})")
    assert _flagged(name, spec, conn, "copied_figure") == [f"{table}.total_charge"]
    conn.execute(f"UPDATE {table} SET total_charge = total_charge - 10, return_due_at = "
                 f"strftime('%Y-%m-%dT%H:%M:%SZ', julianday(return_due_at) - 0.25) WHERE id = (SELECT MIN(id) FROM {table})")
    assert _flagged(name, spec, conn, "copied_figure") == [f"{table}.return_due_at"]
    from agentworld_envs.engine.spec import SpecError, validate_spec

    validate_spec(spec)
    cols = spec["data"]["tables"][table]["columns"]
    assert cols["total_charge"]["gen"] == "per_day"
    for col, change in [("total_charge", {"gen": "per_day", "of": ["daily_rate", "pickup_at"]}),
                        ("return_due_at", {"gen": "after", "of": "pickup_at", "days": [0.5, 14], "whole_days": True})]:
        bad = copy.deepcopy(spec)
        bad["data"]["tables"][table]["columns"][col] = change
        with pytest.raises(SpecError):
            validate_spec(bad)


def test_a_vehicle_identification_number_is_one():
    """World audit 41: VINs holding I, O or Q. Vehicles draw real-shaped VINs (check digit included); the lint
    reads the check digit."""
    name = "campervan-hire"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    vins = [v for (v,) in conn.execute("SELECT vin FROM campervans WHERE vin IS NOT NULL")]
    assert len(vins) > 20 and not any(set(v) & set("IOQ") for v in vins)
    flagged = lambda: _data_flagged(spec, conn, "impossible")  # noqa: E731
    assert flagged() == []
    conn.execute("UPDATE campervans SET vin = 'OQI' || substr(vin, 4) WHERE id = (SELECT MIN(id) FROM "
                 "campervans WHERE vin IS NOT NULL)")
    assert flagged() == ["campervans.vin"]


def test_a_quote_is_approved_while_valid_and_a_licence_cut_short_before_it_ends():
    """World audit 66: quotes approved after their validity ran out (38 of 53), quotes still submitted weeks
    after it ran out, licences "terminated" after they had ended. A record is approved, put in force or cut
    short before its end date, and one still waiting is still valid; the lint finds each planted off."""
    name = "sync-licensing-music-for-media"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    after_end = conn.execute("SELECT status, COUNT(*) FROM sync_quotes WHERE status IN ('approved', 'submitted', "
                             "'withdrawn') AND substr(status_changed_at, 1, 10) > valid_until GROUP BY 1").fetchall()
    assert after_end == []
    assert conn.execute("SELECT COUNT(*) FROM sync_quotes WHERE status = 'submitted' AND valid_until <= ?",
                        (NOW[:10],)).fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM sync_licences WHERE status = 'terminated' AND "
                        "substr(status_changed_at, 1, 10) > end_date").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM sync_quotes WHERE status = 'approved' AND valid_until < ?",
                        (NOW[:10],)).fetchone()[0] > 5   # approved in time, since run out: no contradiction
    assert _flagged(name, spec, conn, "stale_status") == [] and _flagged(name, spec, conn, "clock_status") == []
    conn.execute("UPDATE sync_licences SET status_changed_at = end_date || 'T09:00:00Z', end_date = date(end_date, "
                 "'-3 days') WHERE id = (SELECT MIN(id) FROM sync_licences WHERE status = 'terminated')")
    assert _flagged(name, spec, conn, "stale_status") == ["sync_licences.status_changed_at"]
    conn.execute("UPDATE sync_quotes SET valid_until = '2026-06-01' WHERE id = (SELECT MIN(id) FROM sync_quotes "
                 "WHERE status = 'submitted')")
    assert "sync_quotes.valid_until" in _flagged(name, spec, conn, "clock_status")


def test_a_payment_follows_its_method():
    """World audits 41 and 66: cash "authorized" or pending, processor fees on cash and cheques, a $79.65 fee on
    $199.90. Only a card (or PayPal) is authorized or voided, cash is never pending or failed, and the
    processor keeps a share of the amount by method (none of cash or a cheque) - also where the payments
    of an invoice are scaled to fit it. The lint finds each planted off."""
    for name, table in (("campervan-hire", "bonds"), ("contractor-1099-payments", "contractor_payments")):
        spec, _ = synthesize(env_registry.theme(name))
        conn = _conn(spec)
        rows = conn.execute(f"SELECT method, status, amount, processor_fee FROM {table}").fetchall()
        assert len(rows) > 100 and {r[0] for r in rows} >= {"card", "cash"}
        for method, status, amount, fee in rows:
            assert status not in semantics.CARD_STATES or method in ("card", "paypal"), (method, status)
            assert not (status in semantics.UNCLEARED_STATES and method == "cash")
            # (a failed or voided payment paid the processor nothing: test_what_a_status_or_an_outcome_fixes)
            share = 0 if status in ("failed", "voided", "declined") else semantics.PROCESSOR_FEES.get(method, 0)
            assert fee == round(amount * share, 2), (method, status, amount, fee)
        assert _flagged(name, spec, conn, "impossible") == []
        assert _flagged(name, spec, conn, "part_over_whole") == []
    conn.execute(f"UPDATE {table} SET processor_fee = 3.5 WHERE id = (SELECT MIN(id) FROM {table} WHERE method = 'cash')")
    conn.execute(f"UPDATE {table} SET method = 'cash' WHERE id = (SELECT MIN(id) FROM {table} WHERE status = 'pending')")
    assert _flagged(name, spec, conn, "impossible") == [f"{table}.method", f"{table}.processor_fee"]


def test_a_shift_or_a_flight_is_done_once_it_is_over():
    """World audit 66: shifts marked done 8 minutes into a 4-hour shift, flights done 7 minutes after a
    313-minute departure; the CI sample then found 168-hour on-call shifts done 4 days in. A timed event with a
    duration is done after its start plus that duration; the lint finds one planted off."""
    # (a week-long on-call shift that began four days ago is not done yet: one done by now was shorter)
    for name, table, dur in (("kitchen-brigade-station-assignments", "shifts", "duration_hours"),
                             ("doula-birth-support", "on_call_shifts", "length_hours"),
                             ("frequent-flyer-miles-programme", "flights", "duration_minutes")):
        spec, _ = synthesize(env_registry.theme(name))
        assert spec["data"]["tables"][table]["columns"]["status_changed_at"]["windows"]["done"]["for"] == dur
        conn = _conn(spec)
        assert conn.execute(f"SELECT COUNT(*) FROM {table} WHERE status = 'done'").fetchone()[0] > 20
        assert _flagged(name, spec, conn, "stale_status") == []
    conn.execute("UPDATE flights SET status_changed_at = strftime('%Y-%m-%dT%H:%M:%SZ', julianday(departs_at) + 0.005) "
                 "WHERE id = (SELECT MIN(id) FROM flights WHERE status = 'done' AND duration_minutes > 60)")
    assert _flagged(name, spec, conn, "stale_status") == ["flights.duration_minutes"]


def test_what_accrues_day_by_day_fits_the_days_since():
    """World audit 66: players with 4,725 hours three days after joining, drafts with thousands of citations.
    Hours played, citations and stories filed accrue no faster than a day allows since the row's date, and an
    unpublished paper has no citations; the lint finds a planted excess."""
    name = "game-server-hosting-fleet"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    worst = conn.execute("SELECT MAX(total_playtime_hours / max(0.01, julianday('2026-06-15T12:00:00') - "
                         "julianday(joined_on))), COUNT(*) FROM players WHERE total_playtime_hours > 0").fetchone()
    assert worst[1] > 50 and worst[0] <= 12
    assert _flagged(name, spec, conn, "value_range") == []
    conn.execute("UPDATE players SET total_playtime_hours = 4725, joined_on = '2026-06-12' WHERE id = 1")
    assert _flagged(name, spec, conn, "value_range") == ["players.total_playtime_hours"]
    name = "faculty-tenure-review"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    drafts = conn.execute("SELECT COUNT(*), SUM(citation_count > 0) FROM publications WHERE status = 'draft'").fetchone()
    assert drafts[0] > 10 and drafts[1] == 0
    assert _flagged(name, spec, conn, "value_range") == [] and _flagged(name, spec, conn, "prestart_stamp") == []


def test_a_boat_is_no_car():
    """World audit 66: charter "boats" made by PistenBully, Ski-Doo and Winnebago with VINs, number plates and
    400,000 km on the odometer; balloons with VINs. A vehicle module's record that is a craft of another kind
    (crafts.json: boats, balloons, aircraft, bicycles ...) takes that kind's makers and classes and drops what
    it does not have; a theme's own words come first; the lint finds a car's column planted back."""
    for name, table, singular in (("fishing-charter-boat-bookings", "charter_boats", "charter_boat"),
                                  ("hot-air-balloon-flights", "balloons", "balloon"),
                                  ("rowing-club-boat-bookings", "boats", "boat")):
        spec, _ = synthesize(env_registry.theme(name))
        cols = spec["data"]["tables"][table]["columns"]
        assert "vin" not in cols and "odometer_km" not in cols
        kind = semantics.craft_kind("rental_vehicle", singular) or semantics.craft_kind("vehicle", singular)
        own = semantics.theme_words(env_registry.theme(name), singular, "make")
        assert set(cols["make"]["values"]) == set(own or kind["words"]["make"])
        assert _flagged(name, spec, _conn(spec), "foreign_vocab") == []
    assert "Empacher" in cols["make"]["values"]   # the rowing club's own builders, not motor-boat yards
    bad = copy.deepcopy(spec)
    bad["data"]["tables"][table]["columns"]["vin"] = {"gen": "faker", "provider": "vin"}
    bad["data"]["tables"][table]["columns"]["make"] = {"gen": "choice", "values": ["Toyota", "Ford"]}
    assert sorted(v.where for v in check_foreign_vocab(bad, {e.table: e for e in build_entities(
        env_registry.theme(name))})) == [f"{table}.make", f"{table}.vin"]


def test_an_account_is_last_active_no_earlier_than_its_latest_posting_and_a_frozen_one_takes_none():
    """World audit 66: transactions posted in April 2026 on an account last active in 2022 (50 of 55), and
    postings on frozen accounts after the freeze. A record's last activity follows the records made under it,
    and a frozen account is shut; the lint finds a planted last activity."""
    name = "frequent-flyer-miles-programme"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    counts = conn.execute("SELECT COUNT(*), SUM(t.posted_at > a.last_activity_at), SUM(a.status = 'frozen' AND "
                          "t.posted_at > a.status_changed_at), SUM(a.status = 'frozen') FROM miles_transactions AS t "
                          "JOIN miles_accounts AS a ON a.id = t.miles_account_id").fetchone()
    assert counts[0] > 300 and counts[1] == 0 and counts[2] == 0 and counts[3] > 10
    assert _flagged(name, spec, conn, "before_parent") == [] and _flagged(name, spec, conn, "shut_parent") == []
    conn.execute("UPDATE miles_accounts SET last_activity_at = '2022-11-21T10:00:00Z' WHERE id = "
                 "(SELECT miles_account_id FROM miles_transactions ORDER BY posted_at DESC LIMIT 1)")
    assert set(_flagged(name, spec, conn, "before_parent")) == {"miles_accounts.last_activity_at"}


def test_a_draft_lies_ahead_and_a_paused_term_has_not_run_out():
    """World audit 66: draft campaigns whose start and end had both passed, campaigns paused after their end
    date, draft studies past their start. A term not begun or on hold ends ahead, one not begun starts ahead;
    the lint finds a paused campaign planted past its end."""
    name = "trial-recruitment-prescreening"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    rows = dict((r[0], r[1:]) for r in conn.execute(
        "SELECT status, COUNT(*), SUM(start_date <= ?), SUM(end_date <= ?) FROM recruitment_campaigns GROUP BY 1",
        (NOW[:10], NOW[:10])))
    assert rows["draft"][0] > 0 and rows["draft"][1:] == (0, 0) and rows["paused"][0] > 0 and rows["paused"][2] == 0
    assert _flagged(name, spec, conn, "clock_status") == []
    conn.execute("UPDATE recruitment_campaigns SET end_date = '2026-05-01' WHERE id = (SELECT MIN(id) FROM "
                 "recruitment_campaigns WHERE status = 'paused' AND start_date < '2026-04-01')")
    assert _flagged(name, spec, conn, "clock_status") == ["recruitment_campaigns.end_date"]


def test_a_flight_lands_somewhere_else():
    """World audit 66: flights from ATL to ATL (250 rows in 19 envs). A route's two ends differ; the lint finds
    one planted."""
    name = "frequent-flyer-miles-programme"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    assert conn.execute("SELECT COUNT(*), SUM(origin_airport = destination_airport) FROM flights").fetchone()[1] == 0
    assert _flagged(name, spec, conn, "impossible") == []
    conn.execute("UPDATE flights SET destination_airport = origin_airport WHERE id = 1")
    assert _flagged(name, spec, conn, "impossible") == ["flights.destination_airport"]


def test_a_hire_is_cancelled_before_it_is_picked_up():
    """World audit 42: rentals cancelled after pickup (a hire is no timed event, so its cancellation was not
    bounded by its start). A status reached only from statuses whose start lies ahead (cancelled, from requested
    or confirmed) is reached before the start; the lint finds one planted after."""
    name = "campervan-hire"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    n, late = conn.execute("SELECT COUNT(*), SUM(status_changed_at >= pickup_at) FROM hires WHERE status = 'cancelled'"
                           ).fetchone()
    assert n > 10 and late == 0
    assert _flagged(name, spec, conn, "stale_status") == []
    conn.execute("UPDATE hires SET status_changed_at = strftime('%Y-%m-%dT%H:%M:%SZ', julianday(pickup_at) + 0.5) "
                 "WHERE id = (SELECT MIN(id) FROM hires WHERE status = 'cancelled' AND pickup_at < '2026-06-01')")
    assert _flagged(name, spec, conn, "stale_status") == ["hires.pickup_at"]


def test_a_quota_says_what_its_create_tool_checks():
    """Blind round 75: "A customer may have at most 2 pending, active or frozen loyalty accounts at a time" read
    as barring a renewal (expired to active) that no tool checks, so a careful player refused what the task
    wanted done. A quota's text says what its create tool enforces: no new record for a parent at the cap."""
    spec, _ = synthesize(env_registry.theme("grocery-digital-coupons"))
    tools = {t["name"]: t for t in spec["tools"]}
    quotas = [r for r in spec["rules"] if r["kind"] == "quota"]
    assert quotas
    for rule in quotas:
        assert tools[rule["tool"]]["impl"]["kind"] == "create"
        assert rule["text"].startswith("No new ") and "at a time" not in rule["text"], rule["text"]
        assert f"already has {int(rule['value'])} " in rule["text"] and rule["text"] in spec["policy"]
    loyalty = next(r for r in quotas if r["table"] == "loyalty_accounts")
    assert loyalty["text"] == ("No new loyalty account may be opened for a customer that already has 2 pending, "
                               "active or frozen loyalty accounts.")
    # the renewal it does not guard moves a record into a counted status: the text must not forbid it
    renew = tools["renew_loyalty_account"]["impl"]
    assert renew["to"] in loyalty["states"] and not any(loyalty["text"] in p.get("message", "")
                                                         for p in renew.get("preconditions", []))


def test_nothing_is_sent_in_after_its_record_closed():
    """A survey response is submitted by the day its survey closes (catalogue scan of stop 43's worlds: 593 of
    6,096 responses in 7 worlds came in after their survey's ``closes_on``); the lint counts one planted
    after it under ``shut_parent``."""
    from agentworld_envs.audit.lint import check_world
    from agentworld_envs.engine import state

    spec, _ = synthesize(env_registry.theme("brand-tracking-survey"))
    conn = state.episode_connection(state.build_database(spec))
    late = ("SELECT COUNT(*) FROM survey_responses c JOIN brand_trackers p ON p.id = c.brand_tracker_id "
            "WHERE substr(c.submitted_at, 1, 10) > p.closes_on")
    assert conn.execute("SELECT COUNT(*) FROM survey_responses").fetchone()[0] > 100
    assert conn.execute(late).fetchone()[0] == 0
    assert [v for v in check_world("brand-tracking-survey", spec, conn) if v.rule == "shut_parent"] == []
    conn.execute("UPDATE survey_responses SET submitted_at = '2026-06-14T10:00:00Z' WHERE id IN (SELECT c.id FROM "
                 "survey_responses c JOIN brand_trackers p ON p.id = c.brand_tracker_id WHERE p.closes_on < '2026-06-01' "
                 "LIMIT 3)")
    found = [v for v in check_world("brand-tracking-survey", spec, conn) if v.rule == "shut_parent"]
    assert len(found) == 1 and found[0].where == "survey_responses.submitted_at" and found[0].detail.startswith("3 rows")
    assert semantics.is_sent_in("survey_responses") and not semantics.is_sent_in("survey_questions")
    assert semantics.closing_column(["opens_on", "expected_close_date", "closes_on"]) == "closes_on"
    assert semantics.closing_column(["opens_on", "expected_close_date"]) is None


def test_work_under_a_record_took_place_once_it_had_started():
    """World audit 80 (and a catalogue scan of stop 43's worlds: 8,897 rows in 88 worlds): cards done under a
    board still in its backlog, bookings attended for a class still scheduled, hours logged on engagements not
    started. A row whose work took place points at a parent that has started; the lint finds one planted."""
    from agentworld_envs.audit.lint import check_world
    from agentworld_envs.engine import state

    name = "kanban-sprint-board"
    spec, _ = synthesize(env_registry.theme(name))
    conn = state.episode_connection(state.build_database(spec))
    worked = sorted(semantics.WORKED_STATES - {"paid"})
    waiting = sorted(semantics.UNSTARTED_STATES)
    under = (f"SELECT COUNT(*) FROM cards c JOIN boards p ON p.id = c.board_id WHERE c.status IN "
             f"({', '.join('?' * len(worked))}) AND p.status IN ({', '.join('?' * len(waiting))})")
    assert conn.execute("SELECT COUNT(*) FROM cards WHERE status IN ('done', 'in_progress')").fetchone()[0] > 50
    assert conn.execute("SELECT COUNT(*) FROM boards WHERE status IN ('backlog', 'todo')").fetchone()[0] > 5
    assert conn.execute(under, (*worked, *waiting)).fetchone()[0] == 0
    assert [v for v in check_world(name, spec, conn) if v.rule == "prestart_stamp"] == []
    conn.execute("UPDATE cards SET board_id = (SELECT MIN(id) FROM boards WHERE status = 'backlog') WHERE id = "
                 "(SELECT MIN(id) FROM cards WHERE status = 'done')")
    found = [v for v in check_world(name, spec, conn) if v.rule == "prestart_stamp"]
    assert [v.where for v in found] == ["cards.board_id"] and found[0].detail.startswith("1 rows")


def test_a_timesheet_is_submitted_once_its_week_has_begun():
    """World audit 80 (4,273 of 8,626 timesheet rows in 14 worlds at stop 43): timesheets submitted, even
    approved, before the week they report began. The week a timesheet reports happened before it was made;
    the lint finds one planted under ``date_order``."""
    from agentworld_envs.audit.lint import check_data
    from agentworld_envs.engine import state

    assert semantics.ordered_pairs(["week_starting", "submitted_at"]) == [("week_starting", "submitted_at", False)]
    spec, _ = synthesize(env_registry.theme("consulting-engagement-timesheets"))
    conn = state.episode_connection(state.build_database(spec))
    early = "SELECT COUNT(*) FROM timesheets WHERE substr(submitted_at, 1, 10) < week_starting"
    assert conn.execute("SELECT COUNT(*) FROM timesheets WHERE submitted_at IS NOT NULL").fetchone()[0] > 100
    assert conn.execute(early).fetchone()[0] == 0
    assert [v for v in check_data(spec, conn) if v.rule == "date_order"] == []
    conn.execute("UPDATE timesheets SET submitted_at = '2026-01-02T09:00:00Z' WHERE id = (SELECT MIN(id) FROM timesheets "
                 "WHERE week_starting > '2026-02-01' AND submitted_at IS NOT NULL)")
    assert _data_flagged(spec, conn, "date_order") == ["timesheets.submitted_at"]


def test_a_home_buyer_spends_more_a_day_than_a_shopper_and_signed_up_after_birth():
    """Lint at 6799c67: 20 off-plan purchasers signed up before they were born: their spend, on a home buyer's
    scale (100,000 to 2 million), at a shopper's 150 a day needed decades. The most a day scales with the
    business's largest spend; the lint reads it off the recipe and still finds one planted."""
    # (off-plan purchasers' spend is now what their purchases say; an irrigator's runs to 200,000)
    name = "irrigation-district-water-allocation"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    gen = spec["data"]["tables"]["irrigators"]["columns"]["signup_date"]
    while gen.get("gen") != "spent_since":
        gen = gen["inner"]
    assert gen["per_day"] > 150 * 5
    assert conn.execute("SELECT COUNT(*) FROM irrigators WHERE signup_date < date_of_birth").fetchone()[0] == 0
    assert conn.execute("SELECT MIN(lifetime_spend) FROM irrigators").fetchone()[0] >= 2000
    assert _flagged(name, spec, conn, "value_range") == [] and _flagged(name, spec, conn, "date_order") == []
    conn.execute("UPDATE irrigators SET signup_date = '2026-06-13' WHERE id = (SELECT MIN(id) FROM irrigators "
                 f"WHERE lifetime_spend > 3 * {gen['per_day']})")
    assert _flagged(name, spec, conn, "value_range") == ["irrigators.lifetime_spend"]


def test_a_record_made_under_two_shut_parents_lets_go_of_the_one_shut_first():
    """Lint at 6799c67: two tracking events of redelivery requests cancelled days before them. Their scanning
    driver had left in 2023, so the earliest cap left no room; the event kept its date and dropped the driver,
    and nothing held it to its request's cancellation. Where the earliest cap leaves no room, the next is kept."""
    from agentworld_envs.audit.lint import check_world

    name = "home-delivery-redelivery-requests"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    late = ("SELECT COUNT(*) FROM tracking_events c JOIN saihaitatsu_requests p ON p.id = c.saihaitatsu_request_id "
            "WHERE p.status = 'cancelled' AND substr(c.occurred_at, 1, 10) > substr(p.status_changed_at, 1, 10)")
    assert conn.execute("SELECT COUNT(*) FROM tracking_events c JOIN saihaitatsu_requests p ON "
                        "p.id = c.saihaitatsu_request_id WHERE p.status = 'cancelled'").fetchone()[0] > 20
    assert conn.execute(late).fetchone()[0] == 0
    assert [v for v in check_world(name, spec, conn) if v.rule == "shut_parent"] == []


def test_nothing_about_a_record_comes_to_more_than_its_whole():
    """Total scan at a2429a3: 3,857 records of 20 worlds above the whole of the record they point at (a cake
    order's deposit above the order, a refund asked of a payment above the payment, a folio's charges not adding
    up to its subtotal). A deposit is part of its order; the lint finds one planted above it."""
    name = "custom-cake-studio-orders"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    over = ("SELECT COUNT(*) FROM (SELECT c.cake_order_id, SUM(c.amount) AS s FROM deposits c GROUP BY c.cake_order_id) d "
            "JOIN cake_orders p ON p.id = d.cake_order_id WHERE d.s > p.total_amount + 0.005")
    assert conn.execute("SELECT COUNT(DISTINCT cake_order_id) FROM deposits").fetchone()[0] > 100
    assert conn.execute(over).fetchone()[0] == 0
    assert _flagged(name, spec, conn, "copied_figure") == [] and _flagged(name, spec, conn, "part_over_whole") == []
    conn.execute("UPDATE deposits SET amount = (SELECT total_amount + 50 FROM cake_orders WHERE id = deposits.cake_order_id) "
                 "WHERE id = (SELECT MIN(id) FROM deposits WHERE cake_order_id IS NOT NULL)")
    assert "deposits.amount" in _flagged(name, spec, conn, "copied_figure") + _flagged(name, spec, conn, "part_over_whole")


def test_a_folios_charges_add_up_to_its_subtotal():
    """A hotel folio's charges are its lines: its subtotal is what they come to (272 of 464 folios held a charge
    above their total)."""
    name = "hotel-guest-folio-billing"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    off = ("SELECT COUNT(*) FROM folios p JOIN (SELECT folio_id, SUM(line_total) AS s FROM folio_charges GROUP BY folio_id) "
           "c ON c.folio_id = p.id WHERE abs(p.subtotal - c.s) > 0.015")
    assert conn.execute(off).fetchone()[0] == 0
    conn.execute("UPDATE folios SET subtotal = subtotal + 10 WHERE id = (SELECT MIN(folio_id) FROM folio_charges)")
    assert "folios.subtotal" in _flagged(name, spec, conn, "copied_figure")


def test_a_loans_monthly_payment_repays_it():
    """World audit 80: a loan's monthly payment drawn beside its principal, rate and term (a 30-year auto loan of
    9,848.62 at 2.2 % paying 1,082.97 a month). The payment is the annuity that repays the principal; terms fit the
    theme's loans; the lint finds one payment planted off."""
    assert datagen.monthly_payment(10000, 0.06, 12) == 860.66      # the textbook figure
    assert datagen.monthly_payment(1200, 0, 12) == 100 and datagen.monthly_payment(10000, 6, 12) == 860.66
    name = "auto-loan-servicing"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    rows = conn.execute("SELECT principal, interest_rate, term_months, monthly_payment FROM auto_loans").fetchall()
    assert len(rows) > 50 and {n for _, _, n, _ in rows} <= {24, 36, 48, 60, 72, 84}
    assert all(m == datagen.monthly_payment(p, r, n) and m * n >= p for p, r, n, m in rows)
    assert _flagged(name, spec, conn, "copied_figure") == []
    conn.execute("UPDATE auto_loans SET monthly_payment = monthly_payment * 2 WHERE id = 1")
    # (its instalments no longer split the payment it now names either)
    assert set(_flagged(name, spec, conn, "copied_figure")) - {"loan_payments.interest_portion"} == {"auto_loans.monthly_payment"}


def test_nothing_is_filed_before_its_case_was_opened():
    """Probe at a2429a3: 122 of 530 probate filings filed before their estate was opened. An estate's
    ``opened_on`` is a stamp every estate holds whatever its status, so it is when the estate came about: what
    belongs to it comes after. The lint finds one planted."""
    name = "probate-estate-administration"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    early = ("SELECT COUNT(*) FROM filings f JOIN probate_estates e ON e.id = f.probate_estate_id "
             "WHERE substr(f.filed_at, 1, 10) < e.opened_on")
    assert conn.execute("SELECT COUNT(*) FROM filings WHERE probate_estate_id IS NOT NULL").fetchone()[0] > 100
    assert conn.execute(early).fetchone()[0] == 0
    assert _flagged(name, spec, conn, "before_parent") == []
    conn.execute("UPDATE filings SET filed_at = '2020-01-01T09:00:00Z' WHERE id = (SELECT MIN(id) FROM filings "
                 "WHERE probate_estate_id IS NOT NULL)")
    assert _flagged(name, spec, conn, "before_parent") == ["filings.filed_at"]


def test_a_week_starts_on_a_monday():
    """World audit 80: timesheets for weeks starting on every day of the week (14 worlds). A week's start falls on
    a Monday, and may come before what the timesheet belongs to came about that week; the lint finds a Thursday."""
    name = "consulting-engagement-timesheets"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    days = {d for d, in conn.execute("SELECT DISTINCT strftime('%w', week_starting) FROM timesheets")}
    assert days == {"1"} and conn.execute("SELECT COUNT(*) FROM timesheets").fetchone()[0] > 100
    assert _flagged(name, spec, conn, "impossible") == [] and _flagged(name, spec, conn, "before_parent") == []
    conn.execute("UPDATE timesheets SET week_starting = date(week_starting, '+3 days') WHERE id = 1")
    assert _flagged(name, spec, conn, "impossible") == ["timesheets.week_starting"]


def test_a_count_counts_the_records_it_names():
    """Count scan at a2429a3: 2,557 of 2,588 records in 21 worlds whose count of another table's records (a chat's
    message_count, a league's team_count) was drawn beside them. A count is how many there are; the lint finds one
    planted off, in a world whose records all have one (leagues) and one whose may have none (chats)."""
    for name, parent, count, child, fk in (("bowling-league-scoring", "leagues", "team_count", "teams", "league_id"),
                                           ("encrypted-messenger-service", "encrypted_chats", "message_count", "messages",
                                            "encrypted_chat_id")):
        spec, _ = synthesize(env_registry.theme(name))
        conn = _conn(spec)
        off = (f"SELECT COUNT(*) FROM {parent} p WHERE p.{count} != (SELECT COUNT(*) FROM {child} c WHERE c.{fk} = p.id)")
        assert conn.execute(off).fetchone()[0] == 0
        assert conn.execute(f"SELECT COUNT(DISTINCT {count}) FROM {parent}").fetchone()[0] > 1
        assert _flagged(name, spec, conn, "copied_figure") == []
        conn.execute(f"UPDATE {parent} SET {count} = {count} + 1 WHERE id = 1")
        assert _flagged(name, spec, conn, "copied_figure") == [f"{parent}.{count}"]


def test_a_line_comes_to_its_price_less_its_discount_at_the_worlds_tax_rate():
    """World audit 84: schedule-of-values lines whose total ignored their 10 % discount (427 of 852), each line
    with its own tax rate of 0 to 20 % under a pay application taxed at one. A line's total is its quantity at
    its price less its discount, at the world's one rate; the lint finds a line planted at its undiscounted total."""
    name = "construction-progress-billing"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    rows = conn.execute("SELECT quantity, unit_price, discount_percent, line_total FROM schedule_of_values_lines").fetchall()
    assert sum(1 for *_, d, _ in rows if d) > 50
    assert all(abs(q * p * (1 - (d or 0) / 100) - t) <= 0.011 for q, p, d, t in rows)
    assert conn.execute("SELECT COUNT(DISTINCT tax_rate) FROM schedule_of_values_lines").fetchone()[0] == 1
    flagged = lambda: _data_flagged(spec, conn, "impossible")  # noqa: E731
    assert flagged() == []
    conn.execute("UPDATE schedule_of_values_lines SET line_total = quantity * unit_price WHERE id = (SELECT MIN(id) FROM "
                 "schedule_of_values_lines WHERE discount_percent >= 5)")
    assert flagged() == ["schedule_of_values_lines.line_total"]


def test_a_claim_asks_no_more_than_its_cover_and_a_show_seats_no_more_than_its_theatre():
    """World audit 84: claims 15 times their policy's cover (279 of 358), annual premiums above the cover, a
    performance with more seats than its theatre (43 of 187). Each is bounded by the record it is about; the lint
    finds each planted."""
    name = "event-cancellation-insurance"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    over = ("SELECT COUNT(*) FROM claims c JOIN insurance_policies p ON p.id = c.policy_insurance_policy_id "
            "WHERE c.amount_claimed > p.coverage_amount")
    assert conn.execute("SELECT COUNT(*) FROM claims").fetchone()[0] > 100 and conn.execute(over).fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM insurance_policies WHERE annual_premium > coverage_amount").fetchone()[0] == 0
    assert _flagged(name, spec, conn, "copied_figure") == [] and _flagged(name, spec, conn, "over_cap") == []
    conn.execute("UPDATE claims SET amount_claimed = (SELECT coverage_amount * 3 FROM insurance_policies p "
                 "WHERE p.id = claims.policy_insurance_policy_id) WHERE id = 1")
    conn.execute("UPDATE insurance_policies SET annual_premium = coverage_amount + 1 WHERE id = 2")
    assert _flagged(name, spec, conn, "copied_figure") == ["claims.amount_claimed"]
    assert _flagged(name, spec, conn, "over_cap") == ["insurance_policies.annual_premium"]
    name = "theatre-box-office"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    assert conn.execute("SELECT COUNT(*) FROM performances p JOIN theatres t ON t.id = p.theatre_id "
                        "WHERE p.capacity > t.capacity").fetchone()[0] == 0
    assert _flagged(name, spec, conn, "copied_figure") == []
    conn.execute("UPDATE performances SET capacity = (SELECT capacity + 10 FROM theatres t WHERE t.id = performances.theatre_id) "
                 "WHERE id = (SELECT MIN(id) FROM performances WHERE theatre_id IS NOT NULL)")
    assert _flagged(name, spec, conn, "copied_figure") == ["performances.capacity"]


def test_a_trial_an_acknowledged_incident_and_a_queued_job_do_not_last_for_years():
    """World audit 84: plans trialing for 751 days, incidents acknowledged since February. A record sits in such a
    passing status for days (``DWELL_DAYS``), not years; the lint finds one planted a year back."""
    name = "tiffin-meal-subscription"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    assert conn.execute("SELECT COUNT(*) FROM tiffin_plans WHERE status = 'trialing'").fetchone()[0] > 10
    assert conn.execute("SELECT COUNT(*) FROM tiffin_plans WHERE status = 'trialing' AND (started_on < '2026-05-15' OR "
                        "status_changed_at < '2026-05-15')").fetchone()[0] == 0
    assert _flagged(name, spec, conn, "stale_status") == []
    conn.execute("UPDATE tiffin_plans SET started_on = '2025-06-01', status_changed_at = '2025-06-01T10:00:00Z' "
                 "WHERE id = (SELECT MIN(id) FROM tiffin_plans WHERE status = 'trialing')")
    assert "tiffin_plans.status_changed_at" in _flagged(name, spec, conn, "stale_status")


@pytest.mark.parametrize("name, child, fk, col, parent, start, end", [
    ("pet-insurance-claims", "claims", "policy_pet_policy_id", "incident_date", "pet_policies", "effective_date",
     "expiration_date"),
    ("newsletter-email-sends", "clicks", "campaign_id", "occurred_at", "campaigns", "start_date", "end_date"),
])
def test_what_happened_under_a_record_lies_within_its_term(name, child, fk, col, parent, start, end):
    """A scan of every golden database (column names and SQL only) found 3,564 of 7,189 events in 13 worlds
    outside the term of the record they happened under (a pet's claim for an incident after its policy
    expired; a click after its campaign ended). Now each lies within it, and the lint finds one planted."""
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    outside = (f'SELECT COUNT(*) FROM "{child}" c JOIN "{parent}" p ON p.id = c."{fk}" WHERE '
               f'substr(c."{col}", 1, 10) < p."{start}" OR substr(c."{col}", 1, 10) > p."{end}"')
    joined = f'SELECT COUNT(*) FROM "{child}" c JOIN "{parent}" p ON p.id = c."{fk}"'
    assert conn.execute(joined).fetchone()[0] > 100 and conn.execute(outside).fetchone()[0] == 0
    assert _flagged(name, spec, conn, "outside_term") == []
    conn.execute(f'UPDATE "{child}" SET "{col}" = (SELECT date(p."{end}", \'+3 days\') FROM "{parent}" p '
                 f'WHERE p.id = "{child}"."{fk}") WHERE id = (SELECT MIN(id) FROM "{child}" WHERE "{fk}" IS NOT NULL)')
    assert _flagged(name, spec, conn, "outside_term") == [f"{child}.{col}"]


@pytest.mark.parametrize("name, child, fk, parent", [
    ("rare-coin-and-stamp-auctions", "bids", "lot_id", "lots"),
    ("small-business-invoicing", "payments", "invoice_id", "invoices"),
    ("private-tour-guide-marketplace", "reviews", "tour_offer_id", "tour_offers"),
])
def test_nothing_is_taken_up_from_a_record_never_put_out(name, child, fk, parent):
    """World audit 88 and a scan of 399 golden databases (column names and SQL only): bids on draft lots (263 of
    900), payments of draft invoices, reviews of offers never published, in 51 worlds. Now what takes a record up
    points at one put out, the drafts stand alone, and the lint finds one planted."""
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    joined = f'SELECT COUNT(*) FROM "{child}" c JOIN "{parent}" p ON p.id = c."{fk}"'
    assert conn.execute(joined).fetchone()[0] > 100
    assert conn.execute(f"{joined} WHERE p.status = 'draft'").fetchone()[0] == 0
    assert conn.execute(f'SELECT COUNT(*) FROM "{parent}" WHERE status = \'draft\'').fetchone()[0] > 0
    assert _flagged(name, spec, conn, "unreleased_parent") == []
    conn.execute(f'UPDATE "{child}" SET "{fk}" = (SELECT MIN(id) FROM "{parent}" WHERE status = \'draft\') '
                 f'WHERE id = (SELECT MIN(id) FROM "{child}")')
    assert _flagged(name, spec, conn, "unreleased_parent") == [f"{child}.{fk}"]


@pytest.mark.parametrize("name, child, fk, parent, never, done", [
    ("merchant-payment-gateway", "refunds", "charge_id", "charges", ("pending", "authorized", "failed", "voided"),
     "captured"),
    ("merchant-payment-gateway", "disputes", "charge_id", "charges", ("pending", "authorized", "failed", "voided"),
     "captured"),
    ("bicycle-parts-online-shop", "return_requests", "order_id", "orders", ("pending", "processing", "shipped",
                                                                            "cancelled"), "delivered"),
    ("agricultural-operating-loans", "loan_payments", "operating_loan_id", "operating_loans",
     ("received", "denied", "withdrawn"), "approved"),
    ("merchant-cash-advance", "holdbacks", "cash_advance_id", "cash_advances",
     ("received", "in_review", "denied", "withdrawn"), "approved"),
    ("used-phone-trade-in-marketplace", "payouts", "shipment_id", "shipments",
     ("label_created", "picked_up", "in_transit", "out_for_delivery"), "delivered"),
])
def test_nothing_follows_what_never_completed(name, child, fk, parent, never, done):
    """World audit 89 and a scan of every golden database (column names and SQL only): refunds and disputes of
    charges never captured (27 of 89), returns of orders still processing, payouts for phones still in transit,
    repayments of loans received, denied or withdrawn in 13 lending worlds. Now each points at a record that
    completed, the others stand alone, and the lint finds one planted."""
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    marks = ", ".join("?" * len(never))
    joined = f'SELECT COUNT(*) FROM "{child}" c JOIN "{parent}" p ON p.id = c."{fk}"'
    assert conn.execute(joined).fetchone()[0] > 50
    assert conn.execute(f"{joined} WHERE p.status IN ({marks})", never).fetchone()[0] == 0
    assert conn.execute(f"{joined} WHERE p.status = ?", (done,)).fetchone()[0] > 0
    assert conn.execute(f'SELECT COUNT(*) FROM "{parent}" WHERE status IN ({marks})', never).fetchone()[0] > 0
    assert _flagged(name, spec, conn, "uncompleted_parent") == []
    conn.execute(f'UPDATE "{child}" SET "{fk}" = (SELECT MIN(id) FROM "{parent}" WHERE status = ?) '
                 f'WHERE id = (SELECT MIN(id) FROM "{child}")', (never[-1],))
    assert _flagged(name, spec, conn, "uncompleted_parent") == [f"{child}.{fk}"]


@pytest.mark.parametrize("name, child, fk, parent", [
    ("loan-hardship-plans", "loan_payments", "loan_id", "loans"),
    ("salary-advance-and-employee-loan-program", "payroll_deductions", "salary_advance_id", "salary_advances"),
    ("merchant-cash-advance", "holdbacks", "cash_advance_id", "cash_advances"),
])
def test_an_instalments_number_is_a_place_in_its_loans_schedule(name, child, fk, parent):
    """World audit 94: 778 of 900 instalments numbered past their loan's term (instalment 255 of a 24-month loan),
    in 14 lending worlds. Now each number lies within its parent's term, no two of one parent share one, and the
    lint finds a number planted past the term and one planted twice."""
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    joined = f'SELECT COUNT(*) FROM "{child}" c JOIN "{parent}" p ON p.id = c."{fk}"'
    assert conn.execute(f"{joined} WHERE c.installment_number IS NOT NULL").fetchone()[0] > 100
    assert conn.execute(f"{joined} WHERE c.installment_number > p.term_months").fetchone()[0] == 0
    assert _flagged(name, spec, conn, "past_schedule") == []
    first = conn.execute(f'SELECT MIN(id) FROM "{child}" WHERE installment_number IS NOT NULL').fetchone()[0]
    conn.execute(f'UPDATE "{child}" SET installment_number = (SELECT p.term_months + 1 FROM "{parent}" p '
                 f'WHERE p.id = "{child}"."{fk}") WHERE id = ?', (first,))
    assert _flagged(name, spec, conn, "past_schedule") == [f"{child}.installment_number"]
    conn.execute(f'UPDATE "{child}" SET installment_number = 1 WHERE id = ?', (first,))
    conn.execute(f'UPDATE "{child}" SET "{fk}" = (SELECT "{fk}" FROM "{child}" WHERE id = ?), installment_number = 1 '
                 f'WHERE id = (SELECT MAX(id) FROM "{child}" WHERE id != ?)', (first, first))
    assert _flagged(name, spec, conn, "past_schedule") == [f"{child}.installment_number"]


@pytest.mark.parametrize("name, child, fk, parent", [
    ("synchrotron-beamtime-proposals", "shift_allocations", "beamline_id", "beamlines"),
    ("core-facility-instrument-booking", "instrument_bookings", "instrument_id", "instruments"),
])
def test_no_work_takes_place_on_a_resource_that_is_down(name, child, fk, parent):
    """World audit 94: shifts run on beamlines offline since 2025 (80 of 319); my scan of every golden database
    found the same in a core facility's instrument bookings. Work that is over lies before the day its resource
    went offline or into maintenance; bookings still ahead may wait on it, and the lint finds one planted."""
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    down = "p.status IN ('offline', 'maintenance')"
    worked = "c.status IN ('completed', 'no_show')"
    after = 'substr(c.starts_at, 1, 10) > substr(p.status_changed_at, 1, 10)'
    joined = f'SELECT COUNT(*) FROM "{child}" c JOIN "{parent}" p ON p.id = c."{fk}"'
    assert conn.execute(f"{joined} WHERE {down} AND {worked}").fetchone()[0] > 0
    assert conn.execute(f"{joined} WHERE {down} AND {worked} AND {after}").fetchone()[0] == 0
    assert _flagged(name, spec, conn, "shut_parent") == []
    conn.execute(f'UPDATE "{child}" SET status = \'completed\', starts_at = (SELECT strftime(\'%Y-%m-%dT%H:%M:%SZ\', '
                 f'p.status_changed_at, \'+1 day\') FROM "{parent}" p WHERE p.id = "{child}"."{fk}") WHERE id = (SELECT MIN(c.id) FROM '
                 f'"{child}" c JOIN "{parent}" p ON p.id = c."{fk}" WHERE {down})')
    assert _flagged(name, spec, conn, "shut_parent") == [f"{child}.starts_at"]


@pytest.mark.parametrize("name, child, fk, parent, col, done, ended, opened", [
    ("bicycle-parts-online-shop", "return_requests", "order_id", "orders", "requested_at", "delivered", "returned",
     "under_review"),
    ("merchant-payment-gateway", "refunds", "charge_id", "charges", "requested_at", "captured", "refunded", "submitted"),
    ("agricultural-operating-loans", "loan_payments", "operating_loan_id", "operating_loans", "status_changed_at",
     "approved", None, None),
    ("salary-advance-and-employee-loan-program", "payroll_deductions", "salary_advance_id", "salary_advances",
     "status_changed_at", "approved", None, None),
])
def test_what_follows_completion_comes_after_it(name, child, fk, parent, col, done, ended, opened):
    """World audit 96: return requests filed before their order was delivered (119 of 273), payouts captured
    before the phone shipped; my scan of 300 golden databases found the same in 6 worlds (repayments and payroll
    deductions before their loan or advance was approved, refunds before their charge was captured). Now what
    follows a completion comes after the parent's last change where that change completed it, is made no later
    than the change that ended it (no return requested after its order was returned, none still open under it),
    and the lint finds each planted."""
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    joined = f'SELECT COUNT(*) FROM "{child}" c JOIN "{parent}" p ON p.id = c."{fk}" WHERE p.status = ?'
    before = f"substr(c.{col}, 1, 10) < substr(p.status_changed_at, 1, 10)"
    assert conn.execute(joined, (done,)).fetchone()[0] > 100
    assert conn.execute(f"{joined} AND {before}", (done,)).fetchone()[0] == 0
    assert _flagged(name, spec, conn, "completion_order") == []
    first = f'(SELECT MIN(c.id) FROM "{child}" c JOIN "{parent}" p ON p.id = c."{fk}" WHERE p.status = ?)'
    conn.execute(f'UPDATE "{child}" SET "{col}" = (SELECT strftime(\'%Y-%m-%dT%H:%M:%SZ\', p.status_changed_at, '
                 f'\'-3 days\') FROM "{parent}" p WHERE p.id = "{child}"."{fk}") WHERE id = {first}', (done,))
    assert _flagged(name, spec, conn, "completion_order") == [f"{child}.{col}"]
    if ended is None:
        return
    conn.rollback()
    assert conn.execute(f"{joined} AND substr(c.{col}, 1, 10) > substr(p.status_changed_at, 1, 10)",
                        (ended,)).fetchone()[0] == 0
    conn.execute(f'UPDATE "{parent}" SET status = ?, status_changed_at = \'2025-01-02T10:00:00Z\' '
                 f'WHERE id = (SELECT "{fk}" FROM "{child}" WHERE id = {first})', (ended, done))
    conn.execute(f'UPDATE "{child}" SET status = ? WHERE id = (SELECT MIN(id) FROM "{child}" WHERE "{col}" > '
                 f'\'2025-01-03\' AND "{fk}" = (SELECT "{fk}" FROM "{child}" WHERE id = {first}))', (opened, done))
    assert _flagged(name, spec, conn, "completion_order") == [f"{child}.{col}", f"{child}.status"]


def test_what_follows_completion_reads_its_parents_lifecycle():
    """A refund of a cancelled booking is how it is undone, and a fee paid with an application is paid before
    the decision: neither is held to a completed parent; a loan's repayment, an advance's settlement are."""
    charges = {"states": ["pending", "authorized", "captured", "failed", "refunded", "voided"]}
    assert semantics.uncompleted_states("charges", charges, "refunds") == ["authorized", "failed", "pending", "voided"]
    assert semantics.uncompleted_states("bookings", {"states": ["requested", "confirmed", "cancelled", "completed"]},
                                        "refunds") == []
    applications = {"states": ["submitted", "under_review", "approved", "rejected"]}
    assert semantics.uncompleted_states("permit_applications", applications, "payments") == []
    assert semantics.uncompleted_states("loans", applications, "payments") == ["rejected", "submitted", "under_review"]
    assert semantics.uncompleted_states("cash_advances", applications, "card_settlements") == \
        ["rejected", "submitted", "under_review"]
    assert semantics.uncompleted_states("charges", {"states": ["pending", "failed"]}, "refunds") == []


@pytest.mark.parametrize("name, child, fk, parent", [
    ("small-business-invoicing", "payments", "invoice_id", "invoices"),
    ("private-equity-capital-calls", "wire_receipts", "capital_call_id", "capital_calls"),
])
def test_what_a_whole_says_is_paid_is_what_its_payments_paid(name, child, fk, parent):
    """Audit 88's scan: of 1,157 paid invoices, bills and capital calls in 6 of 500 worlds none had payments through
    that came to its total (462 had none at all), and 554 sent or overdue ones had payments through. Now a paid
    whole's payments have all gone through and come to its total, a partly paid one's through ones to less than it,
    an unpaid one has none through, and a whole said paid that nothing paid is not; the lint finds one planted."""
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    through = (f'(SELECT COALESCE(SUM(c.amount), 0) FROM "{child}" c WHERE c."{fk}" = p.id AND c.status = \'captured\')')
    count = f'SELECT COUNT(*) FROM "{parent}" p WHERE p.status = ?'
    assert conn.execute(count, ("paid",)).fetchone()[0] > 20
    assert conn.execute(f"{count} AND abs({through} - p.total_amount) > 0.005", ("paid",)).fetchone()[0] == 0
    assert conn.execute(f"{count} AND NOT ({through} > 0 AND {through} < p.total_amount)", ("partially_paid",)
                        ).fetchone()[0] == 0
    for unpaid in ("sent", "overdue"):
        assert conn.execute(f"{count} AND {through} > 0", (unpaid,)).fetchone()[0] == 0
    assert _flagged(name, spec, conn, "unsettled") == []
    conn.execute(f'UPDATE "{child}" SET status = \'failed\' WHERE id = (SELECT MIN(c.id) FROM "{child}" c JOIN '
                 f'"{parent}" p ON p.id = c."{fk}" WHERE p.status = \'paid\')')
    assert _flagged(name, spec, conn, "unsettled") == [f"{parent}.status"]


@pytest.mark.parametrize("name, table, fk, start, minutes", [
    ("meeting-room-booking-displays", "calendar_events", "meeting_room_id", "starts_at", "duration_minutes"),
    ("lymphedema-therapy-clinic", "decongestive_sessions", "lymphedema_therapist_id", "scheduled_at", "duration_minutes"),
])
def test_a_room_or_a_therapist_holds_one_event_at_a_time(name, table, fk, start, minutes):
    """A scan of 931 golden databases: 1,647 pairs of timed events at once on one person, room or beamline in 108
    worlds (a meeting room booked twice over 59 times; 66 sessions under way at noon for 30 therapists). Now each
    holds one at a time (events called off apart), and the lint finds two planted at once."""
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    live = "status NOT IN ('cancelled', 'rescheduled')"
    pairs = (f'SELECT COUNT(*) FROM "{table}" x JOIN "{table}" y ON x."{fk}" = y."{fk}" AND x.id < y.id WHERE '
             f'x.{live} AND y.{live} AND julianday(x."{start}") < julianday(y."{start}") + y."{minutes}" / 1440.0 '
             f'AND julianday(y."{start}") < julianday(x."{start}") + x."{minutes}" / 1440.0')
    assert conn.execute(f'SELECT COUNT(*) FROM "{table}" WHERE "{fk}" IS NOT NULL AND {live}').fetchone()[0] > 200
    assert conn.execute(pairs).fetchone()[0] == 0
    assert _flagged(name, spec, conn, "double_booked") == []
    a, b = conn.execute(f'SELECT x.id, y.id FROM "{table}" x JOIN "{table}" y ON x."{fk}" = y."{fk}" AND x.id < y.id '
                        f'WHERE x.{live} AND y.{live} LIMIT 1').fetchone()
    conn.execute(f'UPDATE "{table}" SET "{start}" = (SELECT "{start}" FROM "{table}" WHERE id = ?) WHERE id = ?', (a, b))
    assert _flagged(name, spec, conn, "double_booked") == [f"{table}.{fk}"]


def test_the_age_a_business_states_holds_for_its_people():
    """World audit 89: a wine club whose members "must be 21 or older" had six members under 21 and 24 orders placed
    by members then under 21; a Segway tour whose riders "must be 14 or older" had infants among them. The age a
    description states is a floor for its people's birth dates (with a margin, so their past was not under age) and
    drops the age groups below it; the lint finds a member planted under age."""
    name = "wine-club-subscriptions"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    today = spec["now"][:10]
    under = f"(julianday('{today}') - julianday(date_of_birth)) / 365.25 < 21"
    assert conn.execute("SELECT COUNT(*) FROM club_members WHERE date_of_birth IS NOT NULL").fetchone()[0] > 50
    assert conn.execute(f"SELECT COUNT(*) FROM club_members WHERE {under}").fetchone()[0] == 0
    assert "club_members.date_of_birth" not in _data_flagged(spec, conn, "value_range")
    conn.execute("UPDATE club_members SET date_of_birth = '2006-11-19' WHERE id = (SELECT MIN(id) FROM club_members)")
    assert "club_members.date_of_birth" in _data_flagged(spec, conn, "value_range")
    spec, _ = synthesize(env_registry.theme("segway-city-tours"))
    riders = next(t for t in spec["tables"] if t["name"] == "riders")
    assert set(next(c["enum"] for c in riders["columns"] if c["name"] == "age_group")) == {"adult", "senior"}
    conn = _conn(spec)
    assert conn.execute(f"SELECT COUNT(*) FROM riders WHERE (julianday('{today}') - julianday(date_of_birth)) / 365.25 "
                        "< 14").fetchone()[0] == 0


def test_a_spend_drawn_beside_the_records_that_say_it_is_not_kept():
    """A scan of every golden database: a customer's lifetime spend, drawn apart, lay below what her orders,
    bookings or payments come to in 215 (customer, record) pairs of about 170 worlds. Where records of the world
    point at a customer and carry money, the world keeps no drawn spend of hers; where none do, it stays."""
    spec, _ = synthesize(env_registry.theme("personalised-jewellery-engraving"))
    assert not any(c["name"] in semantics.SPENT_SINCE[0] for t in spec["tables"] for c in t["columns"])
    assert any(c.get("references") == "customers.id" for t in spec["tables"] for c in t["columns"])
    spec, _ = synthesize(env_registry.theme("wine-tasting-tours"))
    assert any(c["name"] == "lifetime_spend" for t in spec["tables"] for c in t["columns"])



def test_a_lab_result_is_flagged_by_its_reference_range():
    """World audit 84: a warfarin clinic's INR results were LDL and TSH, and flags were drawn beside the values (149
    platelets flagged high, a sodium of 139 high). A result is flagged low, normal or high by where its value lies
    against its analyte's reference range; an anticoagulation clinic measures INR; the lint finds a planted flag."""
    name = "anticoagulation-clinic"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    assert {a for (a,) in conn.execute("SELECT DISTINCT analyte FROM inr_results")} == {"inr"}
    lo, hi = semantics.REFERENCE_RANGES["inr"]
    rows = conn.execute("SELECT value, abnormal_flag FROM inr_results").fetchall()
    assert len(rows) > 100 and {f for _, f in rows} == {"low", "normal", "high"}
    assert all(f == ("low" if v < lo else "high" if v > hi else "normal") for v, f in rows)
    assert _data_flagged(spec, conn, "impossible") == []
    conn.execute("UPDATE inr_results SET abnormal_flag = 'high' WHERE id = (SELECT MIN(id) FROM inr_results "
                 "WHERE abnormal_flag = 'normal')")
    assert _data_flagged(spec, conn, "impossible") == ["inr_results.abnormal_flag"]
    name = "clinical-lab-sample-tracking"   # a lab reporting a dozen analytes, each against its own range
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    table = next(t["name"] for t in spec["tables"] if {"analyte", "value", "abnormal_flag"} <= {c["name"] for c in t["columns"]})
    assert conn.execute(f"SELECT COUNT(DISTINCT analyte) FROM {table}").fetchone()[0] > 5
    assert _data_flagged(spec, conn, "impossible") == []
    conn.execute(f"UPDATE {table} SET abnormal_flag = 'normal', value = 139.37 WHERE id = (SELECT MIN(id) FROM {table} "
                 "WHERE analyte = 'platelets')")
    assert _data_flagged(spec, conn, "impossible") == [f"{table}.abnormal_flag"]


def test_a_reviews_hours_to_review_is_the_time_from_its_pull_request_to_it():
    """World audit 84: a code review's hours to review was drawn beside its pull request's opening and its own
    submission (782 of 786 reviews disagreed). It is the time between them; the lint finds one planted."""
    name = "code-review-sla-tracker"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    off = ("SELECT COUNT(*) FROM code_reviews r JOIN pull_requests p ON p.id = r.pull_request_id WHERE "
           "abs(r.hours_to_review - (julianday(r.submitted_at) - julianday(p.created_at)) * 24) > 0.06")
    assert conn.execute("SELECT COUNT(*) FROM code_reviews WHERE hours_to_review IS NOT NULL").fetchone()[0] > 100
    assert conn.execute(off).fetchone()[0] == 0 and _flagged(name, spec, conn, "copied_figure") == []
    conn.execute("UPDATE code_reviews SET hours_to_review = hours_to_review + 5 WHERE id = 1")
    assert _flagged(name, spec, conn, "copied_figure") == ["code_reviews.hours_to_review"]


def test_nothing_is_sent_in_before_what_it_answers_opened():
    """World audit 88: 440 of 797 reference responses were submitted before their questionnaire opened, 175 to
    drafts (a scan of every golden database: 12,107 such rows in 13 survey, poll and ballot worlds). A response is
    made no earlier than its questionnaire's opening day, to one open by then; the lint finds one planted."""
    name = "reference-check-collection"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    early = ("SELECT COUNT(*) FROM reference_responses c JOIN reference_questionnaires p ON p.id = c.reference_questionnaire_id "
             "WHERE substr(c.submitted_at, 1, 10) < p.opens_on")
    assert conn.execute("SELECT COUNT(*) FROM reference_responses").fetchone()[0] > 100 and conn.execute(early).fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM reference_responses c JOIN reference_questionnaires p ON "
                        "p.id = c.reference_questionnaire_id WHERE p.status = 'draft'").fetchone()[0] == 0
    assert _flagged(name, spec, conn, "before_parent") == []
    conn.execute("UPDATE reference_responses SET submitted_at = (SELECT date(p.opens_on, '-2 days') || 'T09:00:00Z' FROM "
                 "reference_questionnaires p WHERE p.id = reference_responses.reference_questionnaire_id) WHERE id = "
                 "(SELECT MIN(id) FROM reference_responses WHERE reference_questionnaire_id IS NOT NULL)")
    assert _flagged(name, spec, conn, "before_parent") == ["reference_responses.submitted_at"]


def test_a_deals_stage_settles_its_odds_and_its_close():
    """World audit 88: won deals at 7 %, lost ones at 98 % (33 of 33 and 34 of 34), closed deals expected to close in
    September (61 of 238). A won deal is certain, a lost one is none, the open stages rise, and a closed deal's
    expected close has passed; the lint finds each planted."""
    name = "deal-desk-discount-approvals"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    by_stage = dict(conn.execute("SELECT stage, group_concat(DISTINCT probability) FROM deals "
                                 "WHERE stage IN ('closed_won', 'closed_lost') GROUP BY 1").fetchall())
    assert by_stage == {"closed_won": "100", "closed_lost": "0"}
    odds = dict(conn.execute("SELECT stage, AVG(probability) FROM deals GROUP BY 1").fetchall())
    assert odds["prospecting"] < odds["proposal"] < odds["negotiation"]
    assert conn.execute("SELECT COUNT(*) FROM deals WHERE stage LIKE 'closed_%' AND expected_close_date > ?",
                        (NOW[:10],)).fetchone()[0] == 0
    assert _data_flagged(spec, conn, "impossible") == [] and _data_flagged(spec, conn, "clock_status") == []
    conn.execute("UPDATE deals SET probability = 7 WHERE id = (SELECT MIN(id) FROM deals WHERE stage = 'closed_won')")
    conn.execute("UPDATE deals SET expected_close_date = '2026-09-29' WHERE id = "
                 "(SELECT MIN(id) FROM deals WHERE stage = 'closed_lost')")
    assert _data_flagged(spec, conn, "impossible") == ["deals.probability"]
    assert _data_flagged(spec, conn, "clock_status") == ["deals.expected_close_date"]


@pytest.mark.parametrize("name, slips, run, fk", [
    ("paye-payroll-bureau", "payslips", "pay_runs", "pay_run_id"),
    ("multi-state-payroll-tax-withholding", "payslips", "payroll_runs", "payroll_run_id"),
])
def test_a_payslip_pays_its_gross_less_what_it_withholds(name, slips, run, fk):
    """World audit 96: payslips paying out more than their gross (313 of 900), tax withheld above the gross; my scan
    of every golden database found the same in 21 tables of 14 payroll worlds, and pay runs whose gross and net
    totals were not their payslips'. Now a payslip's net is its gross less its tax withheld and deductions (each
    a share of the gross), a run's totals are the sums over its payslips, and the lint finds each planted."""
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{slips}")')]
    cuts = "".join(f" - coalesce({c}, 0)" for c in ("tax_withheld", "deductions") if c in cols)
    assert conn.execute(f'SELECT COUNT(*) FROM "{slips}"').fetchone()[0] > 100
    assert conn.execute(f'SELECT COUNT(*) FROM "{slips}" WHERE abs(net_pay - (gross_pay{cuts})) > 0.011 '
                        f'OR tax_withheld > gross_pay * 0.3 + 0.01 OR net_pay <= 0').fetchone()[0] == 0
    for whole, part in (("gross_total", "gross_pay"), ("net_total", "net_pay")):
        assert conn.execute(f'SELECT COUNT(*) FROM "{run}" r WHERE abs(r.{whole} - (SELECT SUM({part}) FROM "{slips}" s '
                            f'WHERE s."{fk}" = r.id)) > 0.011').fetchone()[0] == 0
    assert _data_flagged(spec, conn, "impossible") == []
    assert _flagged(name, spec, conn, "copied_figure") == []
    conn.execute(f'UPDATE "{slips}" SET net_pay = gross_pay + 10 WHERE id = 1')
    assert _data_flagged(spec, conn, "impossible") == [f"{slips}.net_pay"]
    conn.execute(f'UPDATE "{run}" SET net_total = net_total + 10 WHERE id = (SELECT "{fk}" FROM "{slips}" WHERE id = 2)')
    assert f"{run}.net_total" in _flagged(name, spec, conn, "copied_figure")


def test_a_total_with_nothing_beside_its_subtotal_is_its_subtotal():
    """My scan of every golden database: 6 tables (transfusion requests, card statements, capital calls, overdue
    fines …) whose total had nothing but a subtotal to add up, and matched it in no row."""
    name = "private-equity-capital-calls"
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    assert conn.execute("SELECT COUNT(*) FROM capital_calls WHERE total_amount IS NOT NULL").fetchone()[0] > 100
    assert conn.execute("SELECT COUNT(*) FROM capital_calls WHERE abs(total_amount - subtotal) > 0.011").fetchone()[0] == 0
    assert _data_flagged(spec, conn, "impossible") == []
    conn.execute("UPDATE capital_calls SET total_amount = subtotal * 2 WHERE id = 1")
    assert _data_flagged(spec, conn, "impossible") == ["capital_calls.total_amount"]


@pytest.mark.parametrize("name, child, fk", [
    ("used-phone-trade-in-marketplace", "payouts", "shipment_id"),
    ("paid-obituary-notices", "payments", "obituary_id"),
])
def test_what_is_paid_for_once_has_one_payment_through(name, child, fk):
    """World audit 96: trade-ins paid out up to five times (123 shipments); the lint over the stop-48 golden
    databases found the same in 16 worlds (obituaries, transcripts, marriage licences paid for twice or more). Now
    one payment goes through per record, and the lint finds a second one planted."""
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    through = f'SELECT "{fk}" FROM "{child}" WHERE status = \'captured\' AND "{fk}" IS NOT NULL'
    assert conn.execute(f"SELECT COUNT(*) FROM ({through})").fetchone()[0] > 100
    assert conn.execute(f"SELECT COUNT(*) FROM ({through} GROUP BY 1 HAVING COUNT(*) > 1)").fetchone()[0] == 0
    assert _flagged(name, spec, conn, "paid_twice") == []
    conn.execute(f'UPDATE "{child}" SET status = \'captured\', "{fk}" = ({through} LIMIT 1) '
                 f'WHERE id = (SELECT MIN(id) FROM "{child}" WHERE status != \'captured\')')
    assert _flagged(name, spec, conn, "paid_twice") == [f"{child}.{fk}"]


def test_what_is_paid_again_and_again_is_left_alone():
    """Rent on a lease, instalments of a package, a freight bill's parts: paid for many times over; a trade-in,
    an obituary notice: once."""
    wf = {"states": ["pending", "captured", "failed", "refunded"]}
    assert semantics.paid_once("payouts", wf, "shipments", ["tracking_number", "weight_kg"], False) == ["captured"]
    assert semantics.paid_once("payments", wf, "obituaries", ["title", "published_on"], False) == ["captured"]
    assert semantics.paid_once("payments", wf, "leases", ["start_date"], False) == []
    assert semantics.paid_once("rent_payments", wf, "auction_liens", ["start_date"], False) == []
    assert semantics.paid_once("payments", wf, "invoices", ["total_amount"], False) == []
    assert semantics.paid_once("payments", wf, "customers", ["email"], True) == []


@pytest.mark.parametrize("name, child, fk, parent", [
    ("agricultural-operating-loans", "loan_payments", "operating_loan_id", "operating_loans"),
    ("salary-advance-and-employee-loan-program", "payroll_deductions", "salary_advance_id", "salary_advances"),
])
def test_an_instalment_splits_its_loans_payment_by_what_is_left(name, child, fk, parent):
    """World audit 96: instalments due 278,427.09 on a loan of 93,083.19 repaid at 10,933.91 a month (335 of 337
    amounts unrelated to the monthly payment); the lint over the stop-48 golden databases found the same in 13 of
    the 14 worlds whose instalments split principal and interest. Now instalment n pays the loan's monthly payment,
    its interest the rate's month on what n - 1 payments left, and the lint finds a split planted."""
    spec, _ = synthesize(env_registry.theme(name))
    conn = _conn(spec)
    rows = conn.execute(f'SELECT c.installment_number, p.principal, p.interest_rate, p.term_months, p.monthly_payment, '
                        f'c.interest_portion, c.principal_portion, c.amount_due FROM "{child}" c JOIN "{parent}" p '
                        f'ON p.id = c."{fk}" WHERE c.installment_number IS NOT NULL').fetchall()
    assert len(rows) > 100
    for n, principal, rate, term, payment, interest, paid_down, due in rows:
        r = rate / 12
        left = principal * (1 + r) ** (n - 1) - payment * ((1 + r) ** (n - 1) - 1) / r
        assert interest == pytest.approx(round(left * r, 2), abs=0.011)
        assert due == pytest.approx(interest + paid_down, abs=0.011)
        assert due == pytest.approx(payment if n < term else interest + min(payment - interest, left), abs=0.011)
    assert _flagged(name, spec, conn, "copied_figure") == []
    conn.execute(f'UPDATE "{child}" SET interest_portion = interest_portion + 5, principal_portion = principal_portion - 5 '
                 f'WHERE id = (SELECT MIN(id) FROM "{child}" WHERE installment_number IS NOT NULL)')
    assert _flagged(name, spec, conn, "copied_figure") == [f"{child}.interest_portion"]
