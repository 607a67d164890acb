"""Task headroom (issue 23): the hard tier, chains that never come back, hidden traps, varied wording,
measured difficulty, scripted baselines, and the task-level lint classes that police them."""

from __future__ import annotations

import copy

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401
from agentworld_envs.catalogue.catalog import load_bundle
from agentworld_envs.audit.lint import RULES, lint_built
from agentworld_envs.tasks.lint import TASK_RULES, check_tasks
from agentworld_envs.tasks import factors
from agentworld_envs.tasks.baselines import play
from agentworld_envs.tasks.gate import gate
from agentworld_envs.tasks.hard import MIN_CALLS
from agentworld_envs.tasks.runner import Runner

SYNTH = ["wine-club-subscriptions", "fine-dining-reservation-book", "lecture-room-booking"]


@pytest.fixture(scope="module")
def bundles():
    # motorcycle-rental: rentals of one customer many enough for a price rise over 9 records or more
    return {name: load_bundle(name) for name in SYNTH + ["retail", "motorcycle-rental"]}


def _calls(task):
    return sum(1 for s in task["solution"] if s["name"] != "submit")


def _rules(violations):
    return {v.rule for v in violations}


def _answer_off(runner, t, by):
    """The reference with its numeric answer moved by ``by`` (and no message), replayed."""
    sol = t["solution"]
    off = {**sol[-1]["arguments"], "answer": f"{float(sol[-1]['arguments']['answer']) + by:.2f}"}
    off.pop("message", None)
    return runner.run(t, sol[:-1] + [{"name": "submit", "arguments": off}])


def _told_not_answered(runner, t, value, message):
    """A companion of the answer: said in the message beside the reference's answer it passes; given as the answer
    it fails."""
    sol = t["solution"]
    told = {**sol[-1]["arguments"], "message": message}
    assert runner.run(t, sol[:-1] + [{"name": "submit", "arguments": told}]).score == 1.0, value
    wrong = {k: v for k, v in sol[-1]["arguments"].items() if k != "message"} | {"answer": value}
    assert runner.run(t, sol[:-1] + [{"name": "submit", "arguments": wrong}]).score == 0.0, value


def _shape_tasks(b, family, shape, attempts):
    """Two fresh tasks of one hard family on bundle ``b``, all of that shape."""
    from agentworld_envs.tasks.build import generate_tasks

    tasks, _ = generate_tasks(b.spec, b.golden, seed=shape, prefix="t", target=2, families=[family],
                              max_attempts=attempts)
    assert tasks and all(t["knobs"]["shape"] == shape for t in tasks)
    return tasks


# ---------------------------------------------------------------------------- the hard tier


@pytest.mark.parametrize("name", SYNTH + ["retail"])
def test_hard_tier_references_are_long_dependent_and_verified(bundles, name):
    b = bundles[name]
    hard = [t for t in b.tasks if "hard" in t["tags"]]
    assert hard, f"{name} has no hard-tier task"
    runner = Runner(b.spec, b.golden, b.tools)
    try:
        for t in hard:
            assert _calls(t) >= MIN_CALLS, t["id"]
            f = factors.measure(runner, t)
            assert f["reads"] >= 2 and f["writes"] >= 1 and not f["loop_back"], (t["id"], f)
            assert runner.run(t, t["solution"]).score == 1.0, t["id"]
            # every write is needed: dropping any one of them fails the task
            for i, s in enumerate(t["solution"]):
                if s["name"] != "submit" and b.tools[s["name"]].writes:
                    assert runner.run(t, t["solution"][:i] + t["solution"][i + 1:]).score < 1.0, (t["id"], i)
            # a policy without judgement (first plausible record, never refuses) fails it
            assert play(runner, t)["greedy"], t["id"]
    finally:
        runner.close()


def test_hard_shapes_mix_conditions_writes_and_answers(bundles):
    shapes = {t["knobs"]["shape"] for name in SYNTH for t in bundles[name].tasks if "hard" in t["tags"]}
    assert len(shapes) >= 2, shapes
    answered = [t for name in SYNTH for t in bundles[name].tasks if "hard" in t["tags"]
                and any(c["type"] == "answer" for c in t["checks"])]
    assert answered   # look up -> decide -> act on several -> confirm with a read the answer depends on


def test_retail_hard_tier_counts_only_what_the_window_allows(bundles):
    b = bundles["retail"]
    hard = [t for t in b.tasks if "hard" in t["tags"]]
    assert len(hard) == 3 and len({t["instruction"].split(".")[1] for t in hard}) == 3
    env = gym.make("agentworld/retail-v0").unwrapped
    try:
        for t in hard:
            env.reset(options={"task_id": t["id"]})
            for a in env.solution_actions()[:-1]:
                env.step(a)
            answer = t["solution"][-1]["arguments"]["answer"]
            assert env.verify(answer)[0] == 1.0
            assert env.verify(f"{float(answer) + 10:.2f}")[0] == 0.0   # a wrong total fails
    finally:
        env.close()


# ---------------------------------------------------------------------------- chains, traps, wording


def test_generated_task_sets_pass_the_task_lint(bundles):
    for name, b in bundles.items():
        conn = b.connect()
        try:
            found = check_tasks(b.spec, conn, b.tasks)
        finally:
            conn.close()
        assert not found, (name, [v.to_json() for v in found[:3]])


def test_chain_tasks_reach_new_records_and_describe_them_by_fields(bundles):
    multi, described = 0, 0
    # (academic-integrity-cases: an env whose task set holds several walks; since stop 37's world changes the
    # sample's own three hold two between them)
    for name in SYNTH + ["academic-integrity-cases"]:
        b = bundles[name] if name in bundles else load_bundle(name)
        runner = Runner(b.spec, b.golden, b.tools)
        for t in b.tasks:
            f = t["knobs"]["factors"]
            assert f == factors.measure(runner, t)          # the stored factors are measured, not claimed
            assert t["difficulty"] == factors.difficulty(f)
            multi += f["hops"] >= 1
            assert not f["loop_back"], t["id"]
            described += any(w in t["instruction"] for w in (" placed on ", " reserved for ", " titled ", " named \"",
                                                             " with its ", " on 20"))
        runner.close()
    assert multi >= 3 and described >= 1


def test_traps_do_not_name_their_blocking_value(bundles):
    from agentworld_envs.tasks.lint import blocking_values, says

    traps = 0
    for name, b in bundles.items():
        conn = b.connect()
        for t in b.tasks:
            groups = blocking_values(b.spec, conn, t)
            traps += bool(groups)
            assert not any(all(says(t["instruction"], w) for w in g) for g in groups), (name, t["instruction"])
        conn.close()
    assert traps >= 5


def test_no_filler_and_no_task_level_obscure_tools(bundles):
    for b in bundles.values():
        for t in b.tasks:
            assert "Quick request" not in t["instruction"] and "Several requests" not in t["instruction"]
            assert "obscure_tools" not in (t.get("knobs") or {})
    # the env option renames tools for real: the agent must read descriptions
    env = gym.make("agentworld/wine-club-subscriptions-v0", obscure_tools=True).unwrapped
    env.reset(options={"task_index": 0})
    names = [s["function"]["name"] for s in env.tools if s["function"]["name"] != "submit"]
    assert names and all(n.startswith("tool_") for n in names)
    for a in env.solution_actions()[:-1]:
        env.step(a)
    assert env.step(env.solution_actions()[-1])[1] == 1.0
    env.close()


def test_difficulty_tracks_reference_length_and_baseline_failures(bundles):
    from agentworld_envs.tasks.store import headroom_stats, task_row

    rows = [task_row(t) for b in bundles.values() for t in b.tasks if "baselines_failed" in t["knobs"]]
    stats = headroom_stats([{"task_rows": rows}])
    assert stats["difficulty_vs_calls_pearson"] >= 0.5
    assert stats["top_third_reference_calls_median"] >= 6 and stats["hard_reference_calls_min"] >= MIN_CALLS
    greedy = stats["baseline_failure"]["greedy"]
    assert greedy["hard"] == 1.0 and greedy["standard"] < 1.0 and greedy["difficulty_pearson"] > 0


# ---------------------------------------------------------------------------- planted violations


def _planted(b):
    tasks = copy.deepcopy(b.tasks)
    base = next(t for t in tasks if t["kind"] == "graph")
    out = []
    # a chain that comes back to where it started: order -> member -> the same order
    order = b.initial.execute("SELECT id, club_member_id FROM shipment_orders WHERE club_member_id IS NOT NULL LIMIT 1").fetchone()
    out.append({**base, "id": "plant-loop", "solution": [
        {"name": "get_shipment_order", "arguments": {"shipment_order_id": order[0]}},
        {"name": "get_club_member", "arguments": {"club_member_id": order[1]}},
        {"name": "get_shipment_order", "arguments": {"shipment_order_id": order[0]}},
        {"name": "submit", "arguments": {"answer": "x"}}]})
    # a trap that says what blocks it
    from agentworld_envs.tasks.lint import blocking_values

    conn = b.connect()
    trap, group = next((t, g[0]) for t in tasks for g in [blocking_values(b.spec, conn, t)] if g)
    conn.close()
    out.append({**trap, "id": "plant-trap", "instruction": trap["instruction"] + f" (Note: {', '.join(group)}.)"})
    # one template for seven requests, filler, a dead knob, a short 'hard' task
    for i in range(7):
        out.append({**base, "id": f"plant-skel-{i}", "instruction": f"Kindly look into record ZZ-{1000 + i} for me today."})
    out.append({**base, "id": "plant-filler", "instruction": "Quick request: " + base["instruction"]})
    out.append({**base, "id": "plant-knob", "knobs": {**base["knobs"], "obscure_tools": True}})
    out.append({**base, "id": "plant-short", "tags": [*base["tags"], "hard"]})
    return out


def test_each_task_lint_class_catches_a_planted_violation(bundles):
    b = bundles["wine-club-subscriptions"]
    assert set(TASK_RULES) <= set(RULES)
    planted = _planted(b)
    conn = b.connect()
    try:
        found = check_tasks(b.spec, conn, planted)
        clean = check_tasks(b.spec, conn, b.tasks)
        via_lint = lint_built("wine-club-subscriptions", b.spec, conn, list(b.tasks) + planted)
    finally:
        conn.close()
    by = {}
    for v in found:
        by.setdefault(v.rule, set()).add(v.where)
    assert by.get("loop_back") == {"plant-loop"}
    assert "plant-trap" in by.get("announced_trap", set())
    assert by.get("skeleton_repeat")
    assert by.get("filler") == {"plant-filler"} and by.get("dead_knob") == {"plant-knob"}
    assert "plant-short" in by.get("hard_too_short", set())
    assert not clean
    assert set(TASK_RULES) <= _rules(via_lint)


def test_gate_keeps_hard_tasks_honest(bundles):
    b = bundles["fine-dining-reservation-book"]
    runner = Runner(b.spec, b.golden, b.tools)
    try:
        for t in [t for t in b.tasks if "hard" in t["tags"]]:
            assert gate(runner, t) is None, t["id"]
    finally:
        runner.close()


def test_rule_batch_is_decided_by_each_records_figure_not_its_status(bundles):
    """hard rule_batch: every listed record is in a status the change allows; one breaks a business rule,
    and only its own figure (looked up) makes the refusal."""
    b = bundles["wine-club-subscriptions"]
    tasks = _shape_tasks(b, "hard_rule_batch", "rule_batch", attempts=6)
    runner = Runner(b.spec, b.golden, b.tools)
    try:
        for t in tasks:
            sub = t["solution"][-1]["arguments"]
            assert sub["outcome"] == "partial" and _calls(t) >= MIN_CALLS and play(runner, t)["greedy"]
            reads = [s for s in t["solution"] if s["name"] != "submit" and not b.tools[s["name"]].writes]
            statuses = set()
            for s in reads:
                out = runner.run(None, [s]).results[0]
                row = out.get("results", [out])[0] if isinstance(out, dict) else out[0]
                statuses.add(row.get("status"))
            writes = {s["name"] for s in t["solution"] if s["name"] != "submit" and b.tools[s["name"]].writes}
            tool = b.spec["tools"][[x["name"] for x in b.spec["tools"]].index(writes.pop())]
            assert statuses <= set(tool["impl"]["from"]), statuses   # the status gives nothing away
            assert runner.run(t, t["solution"]).score == 1.0
            # the rule is public: quoting it, without the record's figure, is no reason
            quoted = sub["message"].split(" (")[0]
            rule_only = {"outcome": "partial", "answer": quoted.split(": ", 1)[1], "message": quoted + "."}
            assert runner.run(t, t["solution"][:-1] + [{"name": "submit", "arguments": rule_only}]).score == 0.0
    finally:
        runner.close()


@pytest.mark.parametrize("name", ["fine-dining-reservation-book", "lecture-room-booking"])
def test_window_sweep_is_decided_by_dates_worked_out_from_today(bundles, name):
    """hard window_sweep: the records to change lie more than N days before/after today, have two dates
    more than N days apart, or have a date on a weekend (no date is written in the request), some also above a
    figure's bound; the answer totals what the change leaves. The
    reference passes; one write short, one write too many (a sibling the change also allows) or a total
    off by five cents fails; the greedy baseline fails."""
    import re

    from datetime import date

    from agentworld_envs.tasks.hard import date_noun, clock_side

    b = bundles[name]
    tasks = _shape_tasks(b, "hard_window", "window_sweep", attempts=8)
    runner = Runner(b.spec, b.golden, b.tools)
    try:
        for t in tasks:
            text = t["instruction"]
            assert re.search(r"more than \d+ (calendar )?days (before today|after today|after its )|falls on a weekend",
                             text), text
            assert not re.search(r"\d{4}-\d\d-\d\d", text), text     # the boundary date is worked out, not given
            assert _calls(t) >= MIN_CALLS and play(runner, t)["greedy"]
            sol = t["solution"]
            assert runner.run(t, sol).score == 1.0
            writes = [i for i, s in enumerate(sol) if s["name"] != "submit" and b.tools[s["name"]].writes]
            assert len(writes) >= 2
            assert runner.run(t, sol[:writes[0]] + sol[writes[0] + 1:]).score < 1.0
            # one more record the same change allows, outside the window or under the bound
            tool = b.spec["tools"][[x["name"] for x in b.spec["tools"]].index(sol[writes[0]]["name"])]
            impl, key = tool["impl"], tool["impl"]["key"]["param"]
            done = {sol[i]["arguments"][key] for i in writes}
            marks = ", ".join("?" * len(impl["from"]))
            other = runner.initial.execute(
                f'SELECT id FROM "{impl["table"]}" WHERE "{impl["column"]}" IN ({marks}) ORDER BY id',
                tuple(impl["from"])).fetchall()
            extra = next(r[0] for r in other if r[0] not in done)
            more = sol[:-1] + [{"name": tool["name"], "arguments": {**sol[writes[0]]["arguments"], key: extra}}, sol[-1]]
            assert runner.run(t, more).score < 1.0
            answer = float(sol[-1]["arguments"]["answer"])
            off = {**sol[-1]["arguments"], "answer": f"{answer + 0.05:.2f}" if "." in sol[-1]["arguments"]["answer"]
                   else str(int(answer) + 1)}
            off.pop("message", None)
            assert runner.run(t, sol[:-1] + [{"name": "submit", "arguments": off}]).score == 0.0
            # a reply may say how many it changed, or what they came to (blind round 98 failed on "Dropped the 5
            # mangels" beside "6"); that figure given as the answer still fails
            for value in next(c.get("exclude", []) for c in t["checks"] if c.get("type") == "answer"):
                _told_not_answered(runner, t, value, f"Done: {value} of them came from this change.")
            # a window never moves a record to a status on the wrong side of today (no no-show next month)
            today = b.spec["now"][:10]
            cols = [c["name"] for t_ in b.spec["tables"] if t_["name"] == impl["table"] for c in t_["columns"]]
            for col in cols:
                side = clock_side(b.spec, impl["table"], col, impl["to"])
                if side is None:
                    continue
                days = [runner.initial.execute(f'SELECT substr("{col}", 1, 10) FROM "{impl["table"]}" WHERE id = ?',
                                               (rid,)).fetchone()[0] for rid in done]
                assert all(d is None or (d <= today if side == "past" else d > today) for d in days), (col, side)
            weekend = re.search(r"whose (.+?) falls on a weekend", text)
            if weekend:          # every record changed falls on a Saturday or a Sunday, no record says which
                col = next(c for c in cols if date_noun(c) == weekend.group(1))
                days = [runner.initial.execute(f'SELECT substr("{col}", 1, 10) FROM "{impl["table"]}" WHERE id = ?',
                                               (rid,)).fetchone()[0] for rid in done]
                assert all(date.fromisoformat(d).weekday() >= 5 for d in days), days
    finally:
        runner.close()


def test_a_window_sweeps_reply_may_say_how_many_it_changed():
    """Blind round 98: a correct reply failed for "Dropped the 5 mangels …" beside answer 6 (how many of the site's
    defects are now won't do, counting the one already there). The count the change made and what was already there
    are the reply's own figures; given as the answer, either still fails."""
    b = load_bundle("construction-defect-register")
    t = next(t for t in b.tasks if t["knobs"]["family"] == "hard_window" and "counting any that already" in t["instruction"])
    check = next(c for c in t["checks"] if c.get("type") == "answer")
    said = [str(int(float(v))) for v in check.get("exclude", [])]
    sol = t["solution"]
    answer = int(sol[-1]["arguments"]["answer"])
    assert len(said) == 2 and sum(int(v) for v in said) == answer   # changed now, and already there
    runner = Runner(b.spec, b.golden, b.tools)
    try:
        assert runner.run(t, sol).score == 1.0
        for value in said:
            _told_not_answered(runner, t, value, f"Dropped the {value} mangels of bauvorhaben VTF.")
        hedged = {**sol[-1]["arguments"], "message": f"It is {answer}, or maybe {said[0]}."}
        assert runner.run(t, sol[:-1] + [{"name": "submit", "arguments": hedged}]).score == 0.0
    finally:
        runner.close()


def test_adjust_sweep_is_decided_by_the_agents_own_arithmetic(bundles):
    """hard adjust_sweep: a two-tier price rise, rounded to the cent and capped, then a total. The update
    tool takes any figure, so a write a cent off, the unrounded figure, a figure past the cap, or a raise
    on a record the request leaves out each fail, as does a total five cents off; the reference passes and
    the greedy baseline fails."""
    import re
    from decimal import Decimal

    from agentworld_envs.tasks.hard import ADJUST_RECORDS, raised

    b = bundles["motorcycle-rental"]
    tasks = _shape_tasks(b, "hard_adjust", "adjust_sweep", attempts=8)
    runner = Runner(b.spec, b.golden, b.tools)
    try:
        for t in tasks:
            text = t["instruction"]
            pcts = [Decimal(p) for p in re.findall(r"by (\d+(?:\.\d+)?)%", text)]
            cap = Decimal(re.search(r"(?:above|at) (\d+\.\d\d)", text).group(1))
            assert len(pcts) == 2 and pcts[0] != pcts[1] and "half a cent rounds up" in text, text
            sol = t["solution"]
            assert _calls(t) >= MIN_CALLS and play(runner, t)["greedy"]
            assert runner.run(t, sol).score == 1.0
            writes = [i for i, s in enumerate(sol) if s["name"] != "submit" and b.tools[s["name"]].writes]
            tool = next(x for x in b.spec["tools"] if x["name"] == sol[writes[0]]["name"])
            key, table = tool["impl"]["key"]["param"], tool["impl"]["table"]
            fig = next(k for k in sol[writes[0]]["arguments"] if k != key)
            olds = {sol[i]["arguments"][key]: runner.initial.execute(
                f'SELECT "{fig}" FROM "{table}" WHERE id = ?', (sol[i]["arguments"][key],)).fetchone()[0] for i in writes}
            news = {sol[i]["arguments"][key]: Decimal(str(sol[i]["arguments"][fig])) for i in writes}
            # every new figure is the old one raised by one of the two rates and rounded, or the cap
            assert all(v == cap or v in {raised(olds[k], p) for p in pcts} for k, v in news.items()), news
            capped = [k for k, v in news.items() if v == cap]
            assert ADJUST_RECORDS[0] <= len(news) <= ADJUST_RECORDS[1], len(news)   # too many to do at a glance
            assert capped and all(max(raised(olds[k], p) for p in pcts) > cap for k in capped)

            def with_write(i, value, sol=sol, fig=fig):
                step = {"name": sol[i]["name"], "arguments": {**sol[i]["arguments"], fig: value}}
                return sol[:i] + [step] + sol[i + 1:]

            i = writes[0]
            assert runner.run(t, with_write(i, float(news[sol[i]["arguments"][key]] + Decimal("0.01")))).score < 1.0
            rid = capped[0]
            j = next(w for w in writes if sol[w]["arguments"][key] == rid)
            over = max(raised(olds[rid], p) for p in pcts)
            assert runner.run(t, with_write(j, float(over))).score < 1.0          # the cap ignored
            exact = Decimal(str(olds[rid])) * (100 + pcts[0]) / 100
            if exact != exact.quantize(Decimal("0.01")):
                assert runner.run(t, with_write(j, float(exact))).score < 1.0     # not rounded
            # a sibling the request leaves out, raised too
            rows = runner.initial.execute(f'SELECT id, "{fig}" FROM "{table}" ORDER BY id').fetchall()
            extra = next(r for r in rows if r[0] not in news and r[1])
            more = sol[:-1] + [{"name": tool["name"], "arguments": {key: extra[0], fig: float(raised(extra[1], pcts[1]))}},
                               sol[-1]]
            assert runner.run(t, more).score < 1.0
            assert _answer_off(runner, t, 0.05).score == 0.0
    finally:
        runner.close()


@pytest.mark.parametrize("family,shape", [("hard_budget", "budget_fill"), ("hard_best", "best_fit")])
def test_budget_shapes_are_decided_by_the_set_the_budget_takes(bundles, family, shape):
    """hard budget_fill: open records taken earliest first while a running total stays within a budget, one
    that would pass it skipped and the next tried; best_fit: the one set that uses most of the budget. Then
    what is left. The reference passes; the greedy baseline, one write fewer, one more record of the same
    listing, or a remainder five cents off fail."""
    import re

    b = bundles["wine-club-subscriptions"]
    tasks = _shape_tasks(b, family, shape, attempts=24)
    runner = Runner(b.spec, b.golden, b.tools)
    try:
        for t in tasks:
            text = t["instruction"]
            assert (("earliest first" in text and "skip" in text) if shape == "budget_fill"
                    else "combination" in text), text
            assert re.search(r"(?:budget of|more than|closest to) \d+\.\d\d", text), text
            sol = t["solution"]
            assert _calls(t) >= MIN_CALLS and play(runner, t)["greedy"]
            assert runner.run(t, sol).score == 1.0
            writes = [i for i, s in enumerate(sol) if s["name"] != "submit" and b.tools[s["name"]].writes]
            assert runner.run(t, sol[:writes[-1]] + sol[writes[-1] + 1:]).score < 1.0
            tool = next(x for x in b.spec["tools"] if x["name"] == sol[writes[0]]["name"])
            key = tool["impl"]["key"]["param"]
            taken = {sol[i]["arguments"][key] for i in writes}
            listed = [r for s in sol[:writes[0]] if s["name"] == b.spec["tools"][0]["name"] or "search" in s["name"]
                      for r in (runner.run(None, [s]).results[0].get("results") or [])
                      if r.get(tool["impl"]["column"]) in tool["impl"]["from"]]
            skipped = [r["id"] for r in listed if r["id"] not in taken]
            assert skipped, "the budget leaves some record of the listing out"
            # big enough that no glance decides it: at least four taken (and, for the best fit, four left)
            assert len(taken) >= 4 and (shape == "budget_fill" or len(skipped) >= 4), (len(taken), len(skipped))
            more = sol[:-1] + [{"name": tool["name"], "arguments": {**sol[writes[0]]["arguments"], key: skipped[0]}},
                               sol[-1]]
            assert runner.run(t, more).score < 1.0
            assert _answer_off(runner, t, 0.05).score == 0.0
    finally:
        runner.close()


def test_group_fill_keeps_one_running_total_per_group_from_what_each_already_has():
    """hard group_fill: the records in one status dated within a run of days, earliest first, each changed while
    its group's total over the records already in the resulting status stays within one cap per group. The
    references agree with a simulation read off the database; the greedy baseline, one write fewer, a skipped
    record changed too, or a total five cents off fail; and forgetting what a group already has would take
    another set."""
    import re
    from decimal import Decimal

    from agentworld_envs.tasks.hard import GROUP_RECORDS, _fill, _group_take
    from agentworld_envs.tasks.model import words

    # (golf-simulator-bay-booking's bays fit no cap per group once its fees are on a golf bay's scale)
    b = load_bundle("surf-shop-rental-and-retail")
    tasks = _shape_tasks(b, "hard_group", "group_fill", attempts=12)
    runner = Runner(b.spec, b.golden, b.tools)
    try:
        for t in tasks:
            text, sol = t["instruction"], t["solution"]
            got = re.search(r"the (\w+) (.+?) whose (.+?) is between (\S+) and (\S+) \(both days included\)", text)
            cap = re.search(r"(?:has a cap of|passes) (\d+\.\d\d)", text)
            group = re.search(r"(?:Each|No) (.+?) (?:has a cap|may end up)", text)
            assert got and cap and group, text
            assert _calls(t) >= MIN_CALLS and play(runner, t)["greedy"]
            assert runner.run(t, sol).score == 1.0
            calls = sol[:-1]
            writes = [i for i, s in enumerate(calls) if b.tools[s["name"]].writes]
            tool = next(x for x in b.spec["tools"] if x["name"] == calls[writes[0]]["name"])
            impl, key = tool["impl"], tool["impl"]["key"]["param"]
            table = next(x for x in b.spec["tables"] if x["name"] == impl["table"])
            cols = [c["name"] for c in table["columns"]]
            g = next(c for c in cols if words(c.removesuffix("_id") if c.endswith("_id") else c) == group.group(1))
            asked = re.search(r"(?:Then tell me|report) (.+)$", text).group(1)
            fig = next(c for c in cols if c not in (g, impl["column"]) and re.search(rf"\b{words(c)}\b", asked)
                       and isinstance(runner.initial.execute(f'SELECT "{c}" FROM "{impl["table"]}" LIMIT 1').fetchone()[0], float))
            date_col = next(c for c in cols if c.startswith(got.group(3).split(" ")[0]) and c.endswith(("_at", "_on", "_date")))
            conn = runner.initial
            rows = conn.execute(f'SELECT id, "{g}", "{fig}" FROM "{impl["table"]}" WHERE "{impl["column"]}" IN '
                                f'({",".join("?" * len(impl["from"]))}) AND substr("{date_col}", 1, 10) BETWEEN ? AND ? '
                                f'ORDER BY "{date_col}"', (*impl["from"], got.group(4), got.group(5))).fetchall()
            assert GROUP_RECORDS[0] <= len(rows) <= GROUP_RECORDS[1], len(rows)
            starts = {k: Decimal(str(conn.execute(f'SELECT COALESCE(SUM("{fig}"), 0) FROM "{impl["table"]}" WHERE '
                                                  f'"{impl["column"]}" = ? AND "{g}" = ?', (impl["to"], k)).fetchone()[0]))
                      .quantize(Decimal("0.01")) for k in {r[1] for r in rows}}
            seqs = {k: [(r[0], Decimal(str(r[2]))) for r in rows if r[1] == k] for k in starts}
            taken = {calls[i]["arguments"][key] for i in writes}
            capped = Decimal(cap.group(1))
            assert taken == _group_take(seqs, starts, capped)            # the reference is the rule, read off the data
            assert _group_take(seqs, starts, capped, counted=False) != taken   # what groups already had decides
            one = _fill([(r[0], Decimal(str(r[2]))) for r in rows], sum(starts.values(), Decimal(0)), capped)
            assert one is None or set(one) != taken                          # one budget for all is another set
            assert runner.run(t, sol[:writes[-1]] + sol[writes[-1] + 1:]).score < 1.0
            skipped = [r[0] for r in rows if r[0] not in taken]
            more = sol[:-1] + [{"name": tool["name"], "arguments": {**calls[writes[0]]["arguments"], key: skipped[0]}},
                               sol[-1]]
            assert runner.run(t, more).score < 1.0
            assert _answer_off(runner, t, 0.05).score == 0.0
    finally:
        runner.close()


def test_hidden_batch_leaves_out_what_only_a_weekday_shows(bundles):
    """hard hidden_batch: a list of codes to change, some refused for their status, one or two left out by the
    request because a date of theirs falls on a weekend (no record says its weekday). The reference passes;
    changing a record left out, or leaving out one more, fails; the greedy baseline fails."""
    import re
    from datetime import date

    from agentworld_envs.tasks.hard import date_noun
    from agentworld_envs.tasks.model import EnvModel

    b = bundles["wine-club-subscriptions"]
    tasks = _shape_tasks(b, "hard_batch", "hidden_batch", attempts=8)
    runner = Runner(b.spec, b.golden, b.tools)
    try:
        for t in tasks:
            text, sol = t["instruction"], t["solution"]
            said = re.search(r"whose (.+?) (?:falls on a weekend|is a Saturday or a Sunday)", text)
            assert said, text
            assert _calls(t) >= MIN_CALLS and play(runner, t)["greedy"]
            assert runner.run(t, sol).score == 1.0
            calls = sol[:-1]
            writes = [i for i, s in enumerate(calls) if b.tools[s["name"]].writes]
            tool = next(x for x in b.spec["tools"] if x["name"] == calls[writes[0]]["name"])
            table, key = tool["impl"]["table"], tool["impl"]["key"]["param"]
            col = next(c["name"] for t_ in b.spec["tables"] if t_["name"] == table for c in t_["columns"]
                       if date_noun(c["name"]) == said.group(1))
            label = EnvModel(b.spec).tables[table].label
            named = re.findall(r"[A-Z]+-\d+", text)
            rows = {code: runner.initial.execute(f'SELECT id, substr("{col}", 1, 10), "{tool["impl"]["column"]}" '
                                                 f'FROM "{table}" WHERE "{label}" = ?', (code,)).fetchone()
                    for code in named}
            done = {calls[i]["arguments"][key] for i in writes}
            weekend = {code for code, r in rows.items() if date.fromisoformat(r[1]).weekday() >= 5}
            allowed = {code for code, r in rows.items() if r[2] in tool["impl"]["from"]}
            out = weekend & allowed
            assert out and not {rows[c][0] for c in out} & done           # left out: allowed, on a weekend, untouched
            assert all(rows[c][0] in done for c in allowed - weekend)    # every other allowed one is changed
            rid = rows[sorted(out)[0]][0]
            more = sol[:-1] + [{"name": tool["name"], "arguments": {**calls[writes[0]]["arguments"], key: rid}}, sol[-1]]
            assert runner.run(t, more).score < 1.0
            assert runner.run(t, sol[:writes[0]] + sol[writes[0] + 1:]).score < 1.0
    finally:
        runner.close()


# ---------------------------------------------------------------------------- follow-up duties

#: A theme whose policy owes a follow-up: cancelling a shuttle ride cancels its open bookings (an unaccompanied-minor
#: service had no distractor left once bookings under flights not yet flown were never checked in).
DUTY_ENV = "airport-shuttle-booking"


@pytest.fixture(scope="module")
def duty_bundle():
    return load_bundle(DUTY_ENV)


def _duty(b):
    from agentworld_envs.engine.rules import Rule

    duties = [Rule.from_json(r) for r in b.spec.get("rules", []) if r["kind"] == "duty"]
    assert len(duties) == 1, b.spec.get("rules")
    return duties[0]


def _open_children(conn, duty, pid):
    marks = ", ".join("?" * len(duty.states))
    return {i for (i,) in conn.execute(f'SELECT id FROM "{duty.table}" WHERE "{duty.column}" = ? AND status IN ({marks})',
                                       (pid, *duty.states))}


def test_a_duty_is_stated_apart_and_no_tool_carries_it_out(duty_bundle):
    """The policy states the follow-up under its own heading (the tools enforce the rules above it, not this
    one); the trigger tool has no precondition for it and leaves the children as they were."""
    b = duty_bundle
    duty = _duty(b)
    head, _, duties = b.spec["policy"].partition("Follow-up duties")
    assert duty.text in duties and duty.text not in head and "no tool carries" in duties
    assert "the follow-up duties below require" in head
    trigger = next(t for t in b.spec["tools"] if t["name"] == duty.tool)
    assert duty.text not in str(trigger["impl"].get("preconditions", "")) and duty.text not in trigger["description"]
    runner = Runner(b.spec, b.golden, b.tools)
    try:
        pid = next(p for (p,) in runner.initial.execute(f'SELECT DISTINCT "{duty.column}" FROM "{duty.table}" WHERE '
                                                        f'"{duty.column}" IS NOT NULL AND status IN ({", ".join("?" * len(duty.states))})', duty.states)
                   if runner.initial.execute(f'SELECT status FROM "{duty.parent}" WHERE id = ?', (p,)).fetchone()[0]
                   in trigger["impl"]["from"])
        before = _open_children(runner.initial, duty, pid)
        args = {trigger["impl"]["key"]["param"]: pid, **{p: "route withdrawn" for p in
                                                         trigger["parameters"].get("required", []) if p.endswith("reason")}}
        runner.run(None, [{"name": duty.tool, "arguments": args}])
        assert before and _open_children(runner.conn, duty, pid) == before
    finally:
        runner.close()


def test_seeded_history_keeps_the_duty_and_lint_catches_a_planted_break(duty_bundle):
    from agentworld_envs.audit.lint import check_rules

    b = duty_bundle
    duty = _duty(b)
    conn = b.connect()
    try:
        closed = conn.execute(f'SELECT COUNT(*) FROM "{duty.parent}" WHERE status IN '
                              f'({", ".join("?" * len(duty.guards))})', duty.guards).fetchone()[0]
        assert closed and list(check_rules(b.spec, conn)) == []
        # plant an open child under a closed parent
        conn.execute(f'UPDATE "{duty.table}" SET status = ?, "{duty.column}" = (SELECT id FROM "{duty.parent}" '
                     f'WHERE status = ? LIMIT 1) WHERE id = (SELECT MIN(id) FROM "{duty.table}")',
                     (duty.states[0], duty.guards[0]))
        found = list(check_rules(b.spec, conn))
        assert [v.rule for v in found] == ["rule_history"] and duty.text in found[0].detail
    finally:
        conn.close()


def test_every_reference_that_closes_a_record_carries_out_its_duty(duty_bundle):
    """Whatever the task (a duty sweep, a window, a compound walk), each trigger call in a reference is
    followed by the listing of that record's children and the follow-up on exactly those still open; replayed,
    no closed record keeps an open child. Leaving out any follow-up fails the task."""
    b = duty_bundle
    duty = _duty(b)
    trigger = next(t for t in b.spec["tools"] if t["name"] == duty.tool)
    follow = next(t for t in b.spec["tools"] if t["name"] == duty.follow)
    key, fkey = trigger["impl"]["key"]["param"], follow["impl"]["key"]["param"]
    runner = Runner(b.spec, b.golden, b.tools)
    checked = 0
    try:
        for t in list(b.tasks) + _shape_tasks(b, "hard_duty", "duty_sweep", attempts=6):
            sol = t["solution"]
            for i, s in enumerate(sol):
                if s["name"] != duty.tool:
                    continue
                pid = s["arguments"][key]
                owed = _open_children(runner.initial, duty, pid)
                listing, rest = sol[i + 1], sol[i + 2:]
                assert listing["name"] != duty.follow and listing["arguments"].get(duty.column) == pid, t["id"]
                got = [x["arguments"][fkey] for x in rest[:len(owed)] if x["name"] == duty.follow]
                assert set(got) == owed, (t["id"], pid)
                checked += 1
                if owed:
                    j = i + 2
                    assert runner.run(t, sol[:j] + sol[j + 1:]).score < 1.0, t["id"]
            assert runner.run(t, sol).score == 1.0, t["id"]
    finally:
        runner.close()
    assert checked >= 3


def test_duty_sweep_hinges_on_the_policy_not_the_request(duty_bundle):
    """hard duty_sweep: a list of records to close, the request silent on their children. The reference closes
    each and follows up on the open children of those that have any; doing only what the request says (the
    greedy baseline) fails, and the request never names the children's table or statuses."""
    b = duty_bundle
    duty = _duty(b)
    key = next(t for t in b.spec["tools"] if t["name"] == duty.tool)["impl"]["key"]["param"]
    tasks = _shape_tasks(b, "hard_duty", "duty_sweep", attempts=6)
    runner = Runner(b.spec, b.golden, b.tools)
    try:
        for t in tasks:
            sol = t["solution"]
            assert _calls(t) >= MIN_CALLS and runner.run(t, sol).score == 1.0
            assert play(runner, t)["greedy"]
            literal = [s for s in sol if s["name"] != duty.follow]
            assert runner.run(t, literal).score < 1.0
            text = t["instruction"].lower()
            assert duty.table.replace("_", " ") not in text and not any(f" {s} " in text for s in duty.states)
            follows = sum(1 for s in sol if s["name"] == duty.follow)
            closes = [s for s in sol if s["name"] == duty.tool]
            quiet = [s for s in closes if not _open_children(runner.initial, duty, s["arguments"][key])]
            assert follows >= 3 and len(closes) >= 3 and len(closes) > len(quiet)
    finally:
        runner.close()


def test_verify_batch_acts_only_where_every_given_detail_matches(bundles):
    """hard verify_batch: codes each given with one detail of the record (a date or a count); one or two details
    are not what the record holds. The policy makes details binding, so the reference changes only the records
    whose detail matches and says what the others hold; acting on a misstated one too fails, and so does a
    refusal that does not say what the record holds."""
    import re

    from agentworld_envs.engine.rules import VERIFY_RULE
    from agentworld_envs.tasks.model import EnvModel

    b = bundles["wine-club-subscriptions"]
    assert VERIFY_RULE in b.spec["policy"]
    tasks = _shape_tasks(b, "hard_verify", "verify_batch", attempts=8)
    model = EnvModel(b.spec)
    runner = Runner(b.spec, b.golden, b.tools)
    try:
        for t in tasks:
            text, sol = t["instruction"], t["solution"]
            check = next(c for c in t["checks"] if c.get("mode") == "refusal")
            table, col = check["candidates"][0].split(".")
            info = model.tables[table]
            pairs = re.findall(r"([A-Z]+-\d+) \(([^)]*)\)", text)
            assert len(pairs) >= 5, text
            writes = [s for s in sol[:-1] if b.tools[s["name"]].writes]
            key = next(x for x in b.spec["tools"] if x["name"] == writes[0]["name"])["impl"]["key"]["param"]
            done = {s["arguments"][key] for s in writes}
            mismatched = set()
            for code, detail in pairs:
                rid, held = runner.initial.execute(f'SELECT id, "{col}" FROM "{table}" WHERE "{info.label}" = ?',
                                                   (code,)).fetchone()
                held = held[:10] if isinstance(held, str) else str(held)
                if not re.search(rf"(?<![\d-]){re.escape(held)}(?![\d-])", detail):
                    mismatched.add(code)
                    assert rid not in done, (code, detail, held)
                else:
                    assert rid in done, (code, detail, held)
            assert mismatched == set(check["about"]) and 1 <= len(mismatched) <= 2
            assert _calls(t) >= MIN_CALLS and play(runner, t)["greedy"]
            assert runner.run(t, sol).score == 1.0
            # acting on a misstated record as well fails
            code = sorted(mismatched)[0]
            rid = runner.initial.execute(f'SELECT id FROM "{table}" WHERE "{info.label}" = ?', (code,)).fetchone()[0]
            more = sol[:-1] + [{"name": writes[0]["name"], "arguments": {**writes[0]["arguments"], key: rid}}, sol[-1]]
            assert runner.run(t, more).score < 1.0
            # a refusal that does not say what the record holds fails
            vague = {**sol[-1]["arguments"], "answer": "", "message": f"I left {' and '.join(sorted(mismatched))} alone: "
                                                                      "the details you gave do not match."}
            assert runner.run(t, sol[:-1] + [{"name": "submit", "arguments": vague}]).score < 1.0
    finally:
        runner.close()


def test_a_record_naming_its_parent_twice_is_no_child_list_of_it():
    """An fx conversion names two wallets (from, to): "the conversions of the wallet" would mean either, so no
    shape lists a parent's children through such a pair, and no duty is owed through it."""
    from agentworld_envs.tasks.model import EnvModel

    b = load_bundle("multi-currency-accounts")
    model = EnvModel(b.spec)
    twice = {(t.name, p) for t in model.tables.values() for p in set(t.fks.values()) if list(t.fks.values()).count(p) > 1}
    assert twice
    for child, parent in twice:
        assert not [fk for c, fk in model.tables[parent].children if c == child], (child, parent)
    duties = [r for r in b.spec.get("rules", []) if r["kind"] == "duty"]
    assert not [r for r in duties if (r["table"], r["parent"]) in twice]
    for t in b.tasks:   # no reference lists a parent's children through either key
        for s in t["solution"]:
            args = set(s["arguments"])
            assert not any(fk in args for child, parent in twice for fk, p in model.tables[child].fks.items()
                           if p == parent and s["name"] == model.tables[child].search), (t["id"], s)


def test_no_task_leaves_a_record_in_a_status_its_dates_contradict():
    """Blind round 81: a batch asked to mark invoices overdue that fell due next month, and the tools took it. A
    task never moves a record to a status the world's clock contradicts: the state every reference leaves holds
    no ``clock_status`` violation, as the golden state holds none."""
    from agentworld_envs.audit.lint import check_world
    from agentworld_envs.tasks.build import generate_tasks

    # without the check, these task sets (seed "clock") left 3 and 1 such states: loads delivered before their
    # estimated delivery, rate confirmations started ahead of their start date, memberships ended early
    for name in ("freight-brokerage-load-board", "co-living-memberships"):
        b = load_bundle(name)
        tasks, _ = generate_tasks(b.spec, b.golden, seed="clock", prefix="t", target=12)
        runner = Runner(b.spec, b.golden, b.tools)
        try:
            assert [v for v in check_world(name, b.spec, runner.conn) if v.rule == "clock_status"] == []
            moved = 0
            for t in tasks:
                runner.run(t, t["solution"], keep=True)
                moved += sum(1 for s in t["solution"] if s["name"] in b.tools and b.tools[s["name"]].writes)
                assert [v for v in check_world(name, b.spec, runner.conn) if v.rule == "clock_status"] == [], t["id"]
                runner.rewind()
            assert len(tasks) >= 12 and moved
        finally:
            runner.close()


def test_a_status_whose_date_has_passed_is_not_reached_on_that_day():
    """A record moved to a status whose date lies in the past (a load delivered) has that date before today, as the
    lint reads it: a load due today is not delivered yet (a hard batch of this stop delivered one)."""
    import random

    from agentworld_envs.tasks.generate import Generator
    from agentworld_envs.tasks.model import EnvModel

    b = load_bundle("freight-brokerage-load-board")
    runner = Runner(b.spec, b.golden, b.tools)
    try:
        gen = Generator(EnvModel(b.spec), runner, random.Random(0))
        today = b.spec["now"][:10]
        on_day = runner.initial.execute("SELECT id FROM loads WHERE substr(estimated_delivery, 1, 10) = ?", (today,)).fetchall()
        before = runner.initial.execute("SELECT id FROM loads WHERE substr(estimated_delivery, 1, 10) < ? LIMIT 5", (today,)).fetchall()
        assert on_day and before
        assert not any(gen.clock_allows("loads", "delivered", i) for (i,) in on_day)
        assert all(gen.clock_allows("loads", "delivered", i) for (i,) in before)
    finally:
        runner.close()

