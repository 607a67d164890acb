"""Output directories the program owns: every file a command writes is recorded, with its hash.

Every command that writes a directory (``export tasks|sft --out``, ``eval --out``,
``diagnose``, ``train --output-dir``, ``evolve --output-dir``) goes through :class:`OutputDir`:

* **claim**: a new or empty directory is taken as is. A non-empty directory is used only if it
  holds this program's manifest (``.agentworld-manifest.json``) of the same kind of output;
  anything else (your notes, a copied marker file, another kind of output) is refused with
  one line, and nothing is changed.
* **overwrite** (``--overwrite``) removes only the files the manifest lists *and* whose bytes
  still match the recorded SHA-256: a file you edited, replaced by a link or added later is
  kept. Removal never follows symbolic links.
* **writes** never replace a file that the manifest does not list (or that no longer matches),
  never follow a symbolic link, and are atomic (temporary file + rename).

The manifest is signed with an HMAC under a per-user key (``<user data dir>/agentworld/
output-key``, created on first use, mode 0600), so a manifest this program did not write --
copied from elsewhere, hand-edited, or forged to list someone's file -- is not trusted: the
directory then counts as not ours.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import functools
import hashlib
import hmac
import json
import os
import secrets
import shutil
import stat
import tempfile
import threading
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .errors import DISK_ERRNOS, UserInputError

MANIFEST = ".agentworld-manifest.json"
FORMAT = 1
_TAG = "agentworld-output-manifest"
#: Larger manifests are not read (a directory of ~a million files would be needed to reach it).
MAX_MANIFEST_BYTES = 64 << 20
_STAGING_PREFIX = ".agentworld-staging-"
#: Why a write can fail that is the machine's state, not a bug: the disk's (full, size limits, read-only)
#: or the directory's permissions.
MACHINE_ERRNOS = DISK_ERRNOS | {errno.EACCES, errno.EPERM}


class OutputError(UserInputError):
    """An output directory or file this program may not use (one line, exit status 2)."""


# ----------------------------------------------------------------------------------- signing key
def _mine(st: os.stat_result, *, secret: bool) -> bool:
    """Whether a file or directory belongs to this user and no one else may change it (``secret``: nor read it)."""
    return st.st_uid == os.geteuid() and not st.st_mode & (0o077 if secret else 0o022)


@functools.cache
def _private_dir() -> Path | None:
    """This user's agentworld data directory (the signing key, the records of files written), or None
    when there is nowhere to keep them.

    A place that belongs to another user or that others may write is passed over: a key someone
    else could read or plant would let them forge a manifest (think of a shared ``AGENTWORLD_CACHE``)."""
    places = []
    with contextlib.suppress(Exception):
        import platformdirs

        places.append(Path(platformdirs.user_data_dir("agentworld")))
    if os.environ.get("AGENTWORLD_CACHE"):
        places.append(Path(os.environ["AGENTWORLD_CACHE"]))
    for place in places:
        with contextlib.suppress(OSError):
            place.mkdir(parents=True, exist_ok=True)
            st = place.lstat()
            if stat.S_ISDIR(st.st_mode) and _mine(st, secret=False):
                return place
    return None


@functools.cache
def _key() -> bytes:
    """The per-user key that signs manifests (created once in :func:`_private_dir`, mode 0600).

    A key file others may read (or that is not this user's) is never used: ours is replaced by a new
    key, so the manifests it signed are no longer trusted."""
    place = _private_dir()
    path = place / "output-key" if place is not None else None
    for _ in range(3 if path is not None else 0):
        data, mine, present = b"", False, True
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
            try:
                st = os.fstat(fd)
                mine = stat.S_ISREG(st.st_mode) and _mine(st, secret=True)
                data = os.read(fd, 64) if mine else b""
            finally:
                os.close(fd)
        except FileNotFoundError:
            present = False
        except OSError:   # a link (O_NOFOLLOW), unreadable: not a key
            pass
        if mine and len(data) >= 32:
            return data
        if present:   # readable by others, not ours, a link, too short: replaced by a new key
            with contextlib.suppress(OSError):
                os.unlink(path)
        with contextlib.suppress(OSError):
            fd, tmp = tempfile.mkstemp(dir=place, prefix=".output-key-")
            try:
                os.write(fd, secrets.token_bytes(32))
                os.close(fd)
                with contextlib.suppress(FileExistsError):
                    os.link(tmp, path)   # atomic, and never replaces a key another process made first
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
    # Nowhere to keep a key: manifests written now cannot be verified by a later process, so a
    # later run refuses the directory (the safe side) instead of trusting an unsigned record.
    return secrets.token_bytes(32)


def _sign(body: dict[str, Any]) -> str:
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hmac.new(_key(), text.encode(), hashlib.sha256).hexdigest()


# ----------------------------------------------------------------------------------- file checks
def _hash_file(path: Path) -> tuple[str, int] | None:
    """SHA-256 and size of the regular file at ``path`` (never following a link), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        h = hashlib.sha256()
        with os.fdopen(fd, "rb", closefd=False) as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest(), st.st_size
    finally:
        os.close(fd)


def _umask() -> int:
    """The process umask (read from /proc where it can be: setting it to read it races other threads)."""
    with contextlib.suppress(OSError, ValueError, StopIteration):
        with open("/proc/self/status", encoding="ascii") as fh:
            return int(next(line for line in fh if line.startswith("Umask:")).split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _entry(path: Path, sha256: str, size: int) -> dict[str, Any]:
    """A manifest entry; ``mtime_ns`` only spares re-hashing an untouched file when recording again."""
    try:
        mtime = path.lstat().st_mtime_ns
    except OSError:
        mtime = None
    return {"sha256": sha256, "size": size, "mtime_ns": mtime}


def _rel(rel: str | os.PathLike) -> str:
    """A normalised relative path inside an output directory, or OutputError."""
    text = os.fspath(rel).replace(os.sep, "/")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if not parts or text.startswith("/") or any(p == ".." for p in parts) or "\x00" in text:
        raise OutputError(f"{rel!r} is not a path inside the output directory")
    if parts[0] == MANIFEST:
        raise OutputError(f"{MANIFEST} is the output directory's manifest")
    return "/".join(parts)


def _walk_files(root: Path) -> Iterable[str]:
    """Relative paths of every file, link or other non-directory under ``root`` (links not followed)."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        base = Path(dirpath)
        for name in filenames + [d for d in dirnames if (base / d).is_symlink()]:
            yield (base / name).relative_to(root).as_posix()


# ----------------------------------------------------------------------------------- manifests
def read_manifest(root: Path) -> tuple[dict[str, Any] | None, str]:
    """The verified manifest of ``root`` (None if absent or untrusted) and why not."""
    path = root / MANIFEST
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None, "it has no agentworld manifest"
    except OSError:
        return None, f"its {MANIFEST} cannot be read"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_MANIFEST_BYTES:
            return None, f"its {MANIFEST} is not a manifest file"
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.read(MAX_MANIFEST_BYTES + 1)
    finally:
        os.close(fd)
    try:
        data = json.loads(raw)
    except ValueError:
        return None, f"its {MANIFEST} is not valid JSON"
    if not (isinstance(data, dict) and data.get("tag") == _TAG and isinstance(data.get("mac"), str)
            and isinstance(data.get("kind"), str) and isinstance(data.get("files"), dict)
            and all(isinstance(k, str) and isinstance(v, dict) and isinstance(v.get("sha256"), str)
                    for k, v in data["files"].items())):
        return None, f"its {MANIFEST} is not an agentworld manifest"
    body = {k: v for k, v in data.items() if k != "mac"}
    if not hmac.compare_digest(_sign(body), data["mac"]):
        return None, f"its {MANIFEST} was not written by agentworld for this user (edited or copied)"
    # Signed is not enough: a manifest only ever lists plain paths inside its directory, so one that
    # names '../x', '/abs', 'a//b' or the manifest itself is not trusted (never a reason to touch them).
    for rel in body["files"]:
        try:
            if _rel(rel) != rel:
                raise OutputError(rel)
        except OutputError:
            return None, f"its {MANIFEST} lists {rel[:80]!r}, which is not a path inside the directory"
    return body, ""


# ----------------------------------------------------------------------------------- directory locks
_LOCKS: dict[tuple[int, int], list[int]] = {}   # (st_dev, st_ino) -> [fd, holders] in this process
_LOCKS_GUARD = threading.Lock()


def _lock_dir(root: Path, flag: str) -> tuple[int, int] | None:
    """Hold an exclusive ``flock`` on the directory ``root`` for as long as an :class:`OutputDir` of it
    lives in this process, so two commands never write one output directory at once (the second is
    refused with one line). None where the file system has no locks (the manifest checks still hold)."""
    try:
        import fcntl
    except ImportError:   # pragma: no cover - Windows
        return None
    try:
        fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return None
    st = os.fstat(fd)
    key = (st.st_dev, st.st_ino)
    with _LOCKS_GUARD:
        held = _LOCKS.get(key)
        if held is not None:   # this process holds it already (a command that claims twice)
            os.close(fd)
            held[1] += 1
            return key
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise OutputError(f"{flag} {root}: another agentworld command is writing into this directory "
                              "(wait for it to finish, or choose another directory)") from None
        except OSError:   # no locks on this file system
            os.close(fd)
            return None
        _LOCKS[key] = [fd, 1]
    return key


def _unlock_dir(key: tuple[int, int]) -> None:
    with _LOCKS_GUARD:
        held = _LOCKS.get(key)
        if held is None:
            return
        held[1] -= 1
        if held[1] <= 0:
            del _LOCKS[key]
            with contextlib.suppress(OSError):
                os.close(held[0])   # closing the descriptor releases the flock


class OutputDir:
    """A directory this program writes into, with the signed manifest of what it wrote there.

    Use :meth:`claim` to take a directory; then :meth:`write_text` / :meth:`write_bytes`,
    :meth:`target` + :meth:`record` (for writers that need a path), :meth:`install` (a staged
    tree, e.g. a ``datasets`` save), or :meth:`record_all` (everything new since the claim).
    """

    def __init__(self, root: Path, kind: str, files: dict[str, dict[str, Any]], foreign: set[str],
                 flag: str = "--out", created: str | None = None):
        self.root, self.kind, self.files, self.flag = root, kind, files, flag
        self.foreign = foreign           # files present at the claim that are not ours: never recorded
        self.created = created or dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.removed: list[str] = []

    # ------------------------------------------------------------------ claiming
    @classmethod
    def claim(cls, path: str | os.PathLike, kind: str, *, overwrite: bool = False, resume: bool = False,
              reserved: Iterable[str] = (), flag: str = "--out", what: str | None = None,
              again: str | None = None, check_only: bool = False) -> "OutputDir":
        """Take ``path`` for an output of ``kind``, or raise :class:`OutputError` having changed nothing.

        ``overwrite``: an earlier output of this kind may be there; :meth:`clear` then removes the
        files it wrote (only those that still match their hashes). ``resume``: an earlier output
        may be there and is continued. ``reserved``:
        names this command will write; any of them that is in the way and not ours is refused.
        ``what`` / ``again``: how to name an earlier output and the remedy when one is there. ``check_only``:
        decide without creating, removing or writing anything.
        """
        root = Path(path).expanduser()
        if root.is_symlink() and not root.exists():
            raise OutputError(f"{flag} {root} is a dangling symbolic link")
        # An existing directory is locked before it is read (a new one right after it is made).
        lock = _lock_dir(root, flag) if not check_only and root.is_dir() and not root.is_symlink() else None
        try:
            self = cls._claim(root, kind, overwrite=overwrite, resume=resume, reserved=reserved, flag=flag,
                              what=what, again=again, check_only=check_only)
            if not check_only and lock is None:
                lock = _lock_dir(root, flag)
        except BaseException:
            if lock is not None:
                _unlock_dir(lock)
            raise
        if lock is not None:
            weakref.finalize(self, _unlock_dir, lock)
        return self

    @classmethod
    def _claim(cls, root: Path, kind: str, *, overwrite: bool, resume: bool, reserved: Iterable[str], flag: str,
               what: str | None, again: str | None, check_only: bool) -> "OutputDir":
        if root.exists() and not root.is_dir():
            raise OutputError(f"{flag} {root} is a file, not a directory")
        entries: list[str] = []
        if root.is_dir():
            try:
                entries = [p.name for p in root.iterdir()]
            except OSError as exc:
                raise OutputError(f"{flag} {root}: cannot list the directory ({exc.strerror or exc})") from None
        body, why = read_manifest(root) if MANIFEST in entries else (None, "it has no agentworld manifest")
        others = [e for e in entries if e != MANIFEST or body is None]   # an unverified manifest is a stranger
        if body is None and others:
            raise OutputError(f"{flag} {root} is a non-empty directory that agentworld did not write ({why}); "
                              "choose a new or empty directory")
        files: dict[str, dict[str, Any]] = {}
        if body is not None:
            if body["kind"] != kind:
                raise OutputError(f"{flag} {root} holds agentworld's {body['kind']!r} output; a {kind!r} output will "
                                  f"not replace it (choose another directory)")
            files = dict(body["files"])
        ours = {rel for rel, entry in files.items() if _hash_file(root / rel) == (entry["sha256"], entry.get("size"))}
        if ours and not (overwrite or resume):
            raise OutputError(f"{flag} {root} already holds {what or f'an earlier {kind} output'}; "
                              + (again or "pass --overwrite to replace it (only the files agentworld wrote are removed)"))
        self = cls(root, kind, {rel: files[rel] for rel in ours}, set(), flag=flag,
                   created=body.get("created") if body else None)
        present = set(_walk_files(root)) - {MANIFEST} if root.is_dir() else set()
        owned_now = set(self.files)
        if resume:
            # Continuing a run: what its manifest lists (even if the run changed it since, e.g. a write
            # cut short by a kill) and whatever lies inside its own directories is the run's.
            owned_now |= {p for p in present if p in files}
            for name in reserved:
                owned_now |= {p for p in present if p.startswith(_rel(name) + "/")}
        for name in reserved:
            rel = _rel(name)
            hits = [p for p in present if p == rel or p.startswith(rel + "/")]
            strangers = [p for p in hits if p not in owned_now]
            if strangers:
                raise OutputError(f"{flag} {root}: {root / strangers[0]} is in the way and agentworld did not write it "
                                  f"(move it, or choose another directory)")
        self.foreign = present - owned_now
        if not check_only:
            try:
                root.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise OutputError(f"{flag} {root}: cannot create the directory ({exc.strerror or exc})") from None
            self.save()
        return self

    @classmethod
    def adopt(cls, path: str | os.PathLike, kind: str, flag: str = "--out") -> "OutputDir":
        """Add files to an existing directory without claiming it whole (``diagnose`` into an eval run).

        Its files are never replaced unless a verified manifest lists them; a directory without
        one gets a manifest of ``kind`` for what is written from now on.
        """
        root = Path(path).expanduser()
        if not root.is_dir():
            raise OutputError(f"{flag} {root} is not a directory")
        lock = _lock_dir(root, flag)
        try:
            self = cls._adopt(root, kind, flag)
        except BaseException:
            if lock is not None:
                _unlock_dir(lock)
            raise
        if lock is not None:
            weakref.finalize(self, _unlock_dir, lock)
        return self

    @classmethod
    def _adopt(cls, root: Path, kind: str, flag: str) -> "OutputDir":
        body, _ = read_manifest(root)
        files = dict(body["files"]) if body else {}
        ours = {rel: e for rel, e in files.items() if _hash_file(root / rel) == (e["sha256"], e.get("size"))}
        present = set(_walk_files(root)) - {MANIFEST}
        return cls(root, body["kind"] if body else kind, ours, present - set(ours), flag=flag,
                   created=body.get("created") if body else None)

    # ------------------------------------------------------------------ removing
    def clear(self) -> None:
        """Remove every file of the earlier output that is still exactly as it was written (``--overwrite``)."""
        self._remove(sorted(self.files))
        self.save()

    def _remove(self, rels: list[str]) -> None:
        dirs: set[Path] = set()
        for rel in rels:
            entry = self.files.get(rel)
            path = self.root / rel
            # Checked again right before unlinking: never on the word of the record alone.
            if entry is None or self._unsafe_parents(rel) or _hash_file(path) != (entry["sha256"], entry.get("size")):
                continue
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            self.files.pop(rel, None)
            self.removed.append(rel)
            dirs.update(p for p in path.parents if p != self.root and self.root in p.parents)
        for d in sorted(dirs, key=lambda p: len(p.parts), reverse=True):   # only directories left empty
            with contextlib.suppress(OSError):
                if not d.is_symlink():
                    d.rmdir()

    def _unsafe_parents(self, rel: str) -> Path | None:
        """The first directory on the way to ``rel`` that is a link or not a directory (None: all fine)."""
        p = self.root
        for part in rel.split("/")[:-1]:
            p = p / part
            if p.is_symlink() or (p.exists() and not p.is_dir()):
                return p
        return None

    # ------------------------------------------------------------------ writing
    def owns(self, rel: str) -> bool:
        entry = self.files.get(rel)
        return entry is not None and _hash_file(self.root / rel) == (entry["sha256"], entry.get("size"))

    def target(self, rel: str | os.PathLike) -> Path:
        """The path to write ``rel`` at, after checking that writing there replaces nothing that is not ours."""
        rel = _rel(rel)
        bad = self._unsafe_parents(rel)
        if bad is not None:
            raise OutputError(f"{self.flag} {self.root}: {bad} is a link or a file, not a directory agentworld made")
        path = self.root / rel
        if (path.is_symlink() or path.exists()) and not self.owns(rel):
            raise OutputError(f"{self.flag} {self.root}: will not replace {path}, which agentworld did not write "
                              "(move it, or choose another directory)")
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def write_bytes(self, rel: str | os.PathLike, data: bytes) -> Path:
        """Write ``data`` at ``rel`` atomically and record it."""
        path = self.target(rel)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                os.fchmod(fh.fileno(), 0o666 & ~_umask())   # mkstemp's 0600 is for the manifest only
            os.replace(tmp, path)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if isinstance(exc, OSError) and exc.errno in MACHINE_ERRNOS:
                raise OutputError(f"{self.flag} {self.root}: cannot write {_rel(rel)} ({exc.strerror})") from None
            raise
        self.files[_rel(rel)] = _entry(path, hashlib.sha256(data).hexdigest(), len(data))
        self.save()
        return path

    def write_text(self, rel: str | os.PathLike, text: str) -> Path:
        return self.write_bytes(rel, text.encode("utf-8"))

    def record(self, *rels: str | os.PathLike) -> None:
        """Add files written at :meth:`target` paths to the manifest (a directory: every file under it)."""
        for rel in rels:
            rel = _rel(rel)
            path = self.root / rel
            if path.is_dir() and not path.is_symlink():
                for sub in _walk_files(path):
                    self._record_one(f"{rel}/{sub}")
            else:
                self._record_one(rel)
        self.save()

    def _record_one(self, rel: str) -> None:
        if rel in self.foreign:
            return
        path = self.root / rel
        entry = self.files.get(rel)
        with contextlib.suppress(OSError):
            st = path.lstat()
            if entry is not None and entry.get("size") == st.st_size and entry.get("mtime_ns") == st.st_mtime_ns:
                return   # recorded already and untouched since (a whole-run record after every checkpoint)
        got = _hash_file(path)
        if got is not None:
            self.files[rel] = _entry(path, *got)

    def record_all(self) -> None:
        """Record every regular file under the directory that was not there (and not ours) at the claim."""
        for rel in _walk_files(self.root):
            if rel != MANIFEST and rel not in self.foreign and not rel.startswith(_STAGING_PREFIX):
                self._record_one(rel)
        self.save()

    @contextlib.contextmanager
    def staging(self):
        """A private directory inside the output directory to build into; :meth:`install` moves it in place."""
        tmp = Path(tempfile.mkdtemp(dir=self.root, prefix=_STAGING_PREFIX))
        try:
            yield tmp
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def install(self, staged: Path, replace: bool = False) -> list[str]:
        """Move every file of ``staged`` to the same relative path here. Every destination is checked
        first; ``replace``: then :meth:`clear` the earlier output (so a refused install removes nothing)."""
        rels = sorted(_walk_files(staged))
        targets = {rel: self.target(rel) for rel in rels}
        if replace:
            self.clear()
        for rel, path in targets.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged / rel, path)
            got = _hash_file(path)
            if got is not None:
                self.files[rel] = _entry(path, *got)
        self.save()
        return rels

    def save(self) -> None:
        """Write the signed manifest atomically."""
        body = {"tag": _TAG, "format": FORMAT, "kind": self.kind, "created": self.created,
                "files": dict(sorted(self.files.items()))}
        text = json.dumps({**body, "mac": _sign(body)}, indent=1, sort_keys=True)
        path = self.root / MANIFEST
        if path.is_symlink():
            raise OutputError(f"{self.flag} {self.root}: {MANIFEST} is a link; agentworld will not write through it")
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".agentworld-manifest.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if exc.errno in MACHINE_ERRNOS:
                raise OutputError(f"{self.flag} {self.root}: cannot write ({exc.strerror})") from None
            raise

    def discard_if_empty(self) -> None:
        """Remove the directory again if it holds nothing but its manifest (a command that failed)."""
        try:
            if [p.name for p in self.root.iterdir()] == [MANIFEST] and not self.files:
                (self.root / MANIFEST).unlink()
                self.root.rmdir()
        except OSError:
            pass

    def note(self) -> str:
        """One line about files kept (not ours) when an earlier output was replaced ('' if none)."""
        kept = sorted(self.foreign)
        if not self.removed or not kept:
            return ""
        return f"kept {len(kept)} file(s) agentworld did not write in {self.root} (e.g. {kept[0]})"


# ----------------------------------------------------------------------------------- single files
def _record_name(path: Path, sha256: str) -> str:
    where = os.path.realpath(path.parent) + "/" + path.name
    return hashlib.sha256(f"{where}\0{sha256}".encode("utf-8", "surrogateescape")).hexdigest()


def _records() -> Path | None:
    """The directory of records of single files written (``<private dir>/written``), or None."""
    place = _private_dir()
    if place is None:
        return None
    d = place / "written"
    with contextlib.suppress(OSError):
        with contextlib.suppress(FileExistsError):
            d.mkdir(mode=0o700)
        st = d.lstat()
        if stat.S_ISDIR(st.st_mode) and _mine(st, secret=False):
            return d
    return None


def file_digest(path: str | os.PathLike) -> str | None:
    """SHA-256 of the regular file at ``path`` (never following a link), or None."""
    got = _hash_file(Path(path))
    return got[0] if got else None


def wrote_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a regular file (not a link) that agentworld wrote there, unchanged since.

    Single output files outside an output directory (``agentworld db --out``, ``diagnose --html``)
    are recorded by path and SHA-256 in the user's private directory, not beside the file."""
    path = Path(path)
    got, records = _hash_file(path), _records()
    return got is not None and records is not None and (records / _record_name(path, got[0])).is_file()


def remember_file(path: str | os.PathLike, forget: str | None = None) -> None:
    """Record that agentworld wrote the file now at ``path`` (``forget``: the SHA-256 it replaced)."""
    path = Path(path)
    got, records = _hash_file(path), _records()
    if got is None or records is None:
        return   # unrecorded: a later --overwrite refuses it, the safe side
    with contextlib.suppress(OSError):
        (records / _record_name(path, got[0])).touch()
        if forget and forget != got[0]:
            (records / _record_name(path, forget)).unlink(missing_ok=True)


def _file_owner(path: Path, flag: str) -> OutputDir | None:
    """Where a single output file outside an output directory may go: the verified output directory
    it sits in (None: a plain directory, so a new file or one :func:`wrote_file` says is ours).
    Raises when it may not be written."""
    if path.is_dir():
        raise OutputError(f"{flag} {path} is a directory, not a file")
    parent = path.parent
    body, _ = read_manifest(parent) if parent.is_dir() else (None, "")
    if body is not None:   # a directory agentworld writes: the file is recorded there
        out = OutputDir(parent, body["kind"], dict(body["files"]), set(), flag=flag, created=body.get("created"))
        out.target(path.name)
        return out
    if (path.is_symlink() or path.exists()) and not wrote_file(path):
        raise OutputError(f"{flag} {path} exists and agentworld did not write it (or it was changed since); "
                          "choose another path")
    return None


def check_new_file(path: str | os.PathLike, flag: str) -> None:
    """Raise :class:`OutputError` unless :func:`write_new_file` may write ``path``."""
    _file_owner(Path(path).expanduser(), flag)


def write_new_file(path: str | os.PathLike, text: str, flag: str) -> Path:
    """Write a single output file outside an output directory, atomically: a new file, one agentworld
    wrote there and that is unchanged (:func:`wrote_file`), or one a verified manifest beside it lists
    as ours; anything else there is refused."""
    path = Path(path).expanduser()
    owner = _file_owner(path, flag)
    if owner is not None:
        return owner.write_text(path.name, text)
    data = text.encode("utf-8")
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            os.fchmod(fh.fileno(), 0o666 & ~_umask())
        old = _hash_file(path)
        if old is None and not path.is_symlink():
            os.link(tmp, path)   # never replaces a file that appeared meanwhile
        elif wrote_file(path):   # checked again right before replacing it
            os.replace(tmp, path)
            tmp = None
        else:
            raise FileExistsError
        remember_file(path, forget=old[0] if old else None)
    except FileExistsError:
        raise OutputError(f"{flag} {path} exists and agentworld did not write it (choose another path)") from None
    except OSError as exc:
        raise OutputError(f"{flag} {path}: cannot write ({exc.strerror or exc})") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return path
