"""Every CLI command, every parameter, bad inputs: one line and exit 0 or 2, never a traceback.

The commands are read off the typer app (plug-in commands such as ``train`` and ``evolve``
included), so a new command or option is walked without editing this file. Each parameter gets
bad values of its kind while the others keep working values: negative and non-numeric numbers,
unknown ids, and for paths a missing file, a directory where a file is expected, a file where a
directory is expected, garbage JSON, a FIFO and ``/dev/zero``. Each command's cases run in one
child process (``stdin`` closed), each case under a time limit, so a bad value that is silently
accepted and starts real work shows up as a failure too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

#: Parameters whose values are paths (matched by name; click.Path parameters are paths too).
PATH_PARAMS = {"out", "output_dir", "run", "html_out", "config", "model", "adapter", "task_overlay", "resume_from"}
#: Free text by design, not validated against anything: skipped (a secret from the environment, a prompt).
FREE_TEXT = {("eval", "api_key"), ("train", "system_prompt"), ("serve-mcp", "host"),
             ("tasks synth", "min_difficulty")}
#: Working values for the other parameters of a case (required ones only).
WORKING = {"env_id": "retail", "ids": "retail", "run": "{run}", "out": "{fresh}"}
#: A command that runs real work on valid input gets arguments that keep it cheap, placed before the
#: bad value (which, given last, wins): ``train --print-config`` validates the whole config and stops;
#: ``eval`` plays one no-op episode.
CHEAP = {"train": ["--print-config"], "eval": ["retail", "--policy", "noop", "--tasks-per-env", "1"]}
#: Commands without a cheap mode: values that are valid (a huge count, a new output directory) would
#: start the real, long job, so only values that must be refused are walked there.
HEAVY = {"evolve": {"99999999999999999999999", "{missing}"}}
CASE_TIMEOUT_S = 40
#: Commands not walked here, with the reason.
SKIP: dict[str, str] = {}


def _commands():
    """``(path, click command)`` for every leaf command of the full ``agentworld`` app."""
    import typer.main

    from agentworld_envs import cli

    cli._load_plugins()
    root = typer.main.get_command(cli.app)
    out = []

    def walk(group, prefix):
        for name, cmd in sorted(group.commands.items()):
            path = f"{prefix} {name}".strip()
            if hasattr(cmd, "commands"):
                walk(cmd, path)
            else:
                out.append((path, cmd))

    walk(root, "")
    return out


def _bad_values(param, kind: str) -> list[str]:
    if kind in ("int", "float"):
        values = ["-5", "abc", "1e999" if kind == "float" else "99999999999999999999999"]
        return values + (["nan"] if kind == "float" else [])
    if kind == "path":
        return ["{missing}", "{dir}", "{file}", "{garbage}", "{fifo}", "/dev/zero"]
    return ["nope-xyz", "../../etc/passwd", "", "\u202eevil"]


def _annotation(param):
    import typing

    ann = param.type_descriptor.annotation
    while typing.get_origin(ann) in (typing.Union, list) or type(ann).__name__ == "UnionType":
        ann = next(a for a in typing.get_args(ann) if a is not type(None))
    return ann


def _is_argument(param) -> bool:
    return "Argument" in type(param).__name__


def _kind(param) -> str | None:
    ann = _annotation(param)
    if getattr(param, "is_flag", False) or ann is bool:
        return None
    if param.name in PATH_PARAMS or ann is Path:
        return "path"
    if ann is int:
        return "int"
    if ann is float:
        return "float"
    return "str"


def _cases():
    cases = []
    for path, cmd in _commands():
        if path in SKIP:
            continue
        params = [p for p in cmd.params if p.name != "help"]
        required = [p for p in params if p.required]
        for p in params:
            kind = _kind(p)
            if kind is None or (path, p.name) in FREE_TEXT:
                continue
            for value in _bad_values(p, kind):
                if value in HEAVY.get(path, ()):
                    continue
                argv = path.split() + CHEAP.get(path, [])
                for other in required:
                    if other is p:
                        continue
                    working = WORKING.get(other.name, "{fresh}")
                    argv += [working] if _is_argument(other) else [other.opts[0], working]
                argv += [value] if _is_argument(p) else [p.opts[0], value]
                cases.append((path, argv))
    return cases


def _by_command():
    grouped: dict[str, list[list[str]]] = {}
    for path, argv in _cases():
        grouped.setdefault(path, []).append(argv)
    return grouped


@pytest.fixture(scope="module")
def places(tmp_path_factory):
    base = tmp_path_factory.mktemp("walk")
    (base / "dir").mkdir()
    (base / "dir" / "users-file.txt").write_text("keep")
    (base / "file").write_text("not a directory\n")
    (base / "garbage.json").write_bytes(b'{"envs": [1, 2\x00\xff')
    os.mkfifo(base / "fifo")
    run = base / "run"
    env = {**os.environ}
    out = subprocess.run([sys.executable, "-m", "agentworld_envs.cli", "eval", "retail", "--policy", "noop",
                          "--tasks-per-env", "1", "--out", str(run)], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    return {"missing": str(base / "missing" / "x.json"), "dir": str(base / "dir"), "file": str(base / "file"),
            "garbage": str(base / "garbage.json"), "fifo": str(base / "fifo"), "run": str(run), "base": base}


def test_every_command_is_walked():
    names = {path for path, _ in _commands()}
    assert {"list", "show", "play", "validate", "bench", "build", "lint", "stats", "serve-mcp", "eval", "diagnose",
            "tasks synth", "export tasks", "export sft", "train", "evolve"} <= names
    assert sum(len(v) for v in _by_command().values()) > 200


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(_by_command()))
def test_bad_inputs_are_one_line_errors(command, places, tmp_path):
    cases = []
    for k, argv in enumerate(_by_command()[command]):
        subs = {key: val for key, val in places.items() if key != "base"}
        subs["fresh"] = str(tmp_path / f"fresh-{k}")
        cases.append([a.format(**subs) if "{" in a else a for a in argv])
    cwd = tmp_path / "cwd"   # default output directories (eval's runs/...) land here, not in the checkout
    cwd.mkdir()
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), json.dumps(cases)], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=CASE_TIMEOUT_S * len(cases) + 300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    bad = [r for r in results if r["problem"]]
    assert not bad, "\n".join(f"{' '.join(r['argv'])!r}: {r['problem']}" for r in bad[:15])
    # and nothing of the user's was touched
    assert (places["base"] / "dir" / "users-file.txt").read_text() == "keep"
    assert (places["base"] / "file").read_text() == "not a directory\n"


# ------------------------------------------------------------------------------------------ child process
class _Text:
    """A text stream to capture into that also has ``.buffer`` (like ``sys.stdout``)."""

    def __init__(self):
        import io

        self.buffer = io.BytesIO()
        self._text = io.TextIOWrapper(self.buffer, encoding="utf-8", write_through=True)

    def write(self, s):
        return self._text.write(s)

    def flush(self):
        self._text.flush()

    def isatty(self):
        return False

    def fileno(self):
        raise OSError("captured")

    def getvalue(self):
        self._text.flush()
        return self.buffer.getvalue().decode("utf-8", "replace")


def _run_cases(cases: list[list[str]]) -> list[dict]:
    """Run each argv through the real entry point's wrapper in this process; report what went wrong."""
    import contextlib
    import signal
    import traceback

    from agentworld_envs import cli
    from agentworld_envs.util.errors import run_cli

    cli._load_plugins()

    def alarm(signum, frame):
        raise TimeoutError(f"still running after {CASE_TIMEOUT_S} s (a bad value accepted?)")

    signal.signal(signal.SIGALRM, alarm)
    results = []
    for argv in cases:
        out, err = _Text(), _Text()   # with a .buffer: a server started on valid input writes to it
        problem = None
        signal.alarm(CASE_TIMEOUT_S)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                run_cli(cli.app, args=argv)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException as exc:  # noqa: BLE001 - what the walk is looking for
            code = None
            problem = f"traceback: {type(exc).__name__}: {str(exc)[:300]} | " + traceback.format_exc()[-600:]
        finally:
            signal.alarm(0)
        text = err.getvalue()
        if problem is None and code not in (0, 2):
            problem = f"exit {code}: {text[-300:]}"
        elif problem is None and "Traceback" in text + out.getvalue():
            problem = f"printed a traceback: {text[-300:]}"
        elif problem is None and code == 2 and len(text.strip().splitlines()) > 1 and "Usage:" not in text:
            problem = f"more than one line: {text[-300:]}"
        results.append({"argv": argv, "code": code, "problem": problem})
    return results


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    print(json.dumps(_run_cases(json.loads(sys.argv[1]))))
