"""Integrity-checked cache files: every artefact has a record of its key and hashes.

A cached artefact ``NAME`` (a golden SQLite file, a synthesised spec, a task set) is stored
next to ``NAME.meta``, a small JSON :class:`CacheRecord` ``{"format", "kind", "key", "size",
"sha256"}`` (plus ``"xxh3_128"`` when ``xxhash`` wrote it). A *sealed* artefact (an env
bundle, :func:`store_sealed`) carries that record as its own first line instead: one file to
read on a hot path. Loading checks the record before the bytes are trusted, so a truncated,
bit-flipped, zero-length or hand-edited file, or another environment's file copied under this
name (its record names another key, or the bytes do not match this record), is rebuilt with
one :class:`CacheWarning` naming the file instead of being served.

The golden files stay plain SQLite files (openable with ``sqlite3``) because the record lives
beside them, not inside. Writes are atomic (temporary file + ``os.replace``) and temporary
files are removed on every failure path; a cache that cannot be written (read-only, no
permission, full disk) raises :class:`~agentworld_envs.util.errors.CacheError` naming the file and
what to do. Payload and record are replaced one after the other, so a crash between the two
leaves a mismatch that the next load detects and repairs, never a silently wrong artefact.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import itertools
import json
import mmap
import os
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from .errors import CacheError

try:  # a dependency, guarded so the engine still runs where it cannot be installed: parses cached JSON several times faster
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the installation
    _orjson = None

try:  # likewise: checks cached files far faster than SHA-256 (README, Measured)
    import xxhash as _xxhash
except ImportError:  # pragma: no cover - depends on the installation
    _xxhash = None

FORMAT = 1
META_SUFFIX = ".meta"
T = TypeVar("T")

_READ_ONLY = {errno.EROFS, errno.EACCES, errno.EPERM}
_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


class CacheWarning(UserWarning):
    """A cached artefact failed its integrity check and is being rebuilt."""


class CorruptCacheFile(ValueError):
    """Raised by a payload ``parse`` callback when the bytes decode but have the wrong shape."""


@dataclass(frozen=True)
class CacheRecord:
    """The sidecar of one cached artefact: what it was built for and what its bytes hash to.

    ``sha256`` is always recorded. ``xxh3_128`` is recorded too when ``xxhash`` is installed,
    and then it is the hash that loading checks: every env's first use in a process reads and
    checks its golden file and bundle, and SHA-256 of retail's 0.7 MB golden file alone cost
    ~0.6 ms of the 2 ms first-use budget. A non-cryptographic hash loses nothing here: the record
    sits beside the artefact in the same writable directory, so whoever can forge the bytes can
    rewrite the record too, and against what the check is for (truncation, bit flips, partial
    writes, another artefact copied under this name) a 128-bit xxh3 digest is as reliable.
    """

    kind: str
    key: str
    size: int
    sha256: str
    format: int = FORMAT
    xxh3_128: str | None = None

    @classmethod
    def parse(cls, text: str) -> "CacheRecord":
        return cls.from_obj(loads(text))

    @classmethod
    def from_obj(cls, raw: Any) -> "CacheRecord":
        """The record of an already parsed JSON object (e.g. the golden record inside a bundle)."""
        if not isinstance(raw, dict) or not _REQUIRED <= set(raw) or not set(raw) <= _REQUIRED | {"xxh3_128"}:
            raise ValueError("record has the wrong fields")
        record = cls(**raw)
        if not (isinstance(record.key, str) and isinstance(record.sha256, str) and isinstance(record.size, int)
                and isinstance(record.xxh3_128, (str, type(None)))):
            raise ValueError("record has fields of the wrong type")
        return record

    def to_json(self) -> str:
        fields = asdict(self)
        if fields["xxh3_128"] is None:
            del fields["xxh3_128"]   # records written without xxhash keep the original five fields
        return json.dumps(fields, sort_keys=True)

    def matches(self, data: bytes | mmap.mmap) -> bool:
        """Whether ``data`` hashes to this record (xxh3 when both sides have it, else SHA-256)."""
        if self.xxh3_128 is not None and _xxhash is not None:
            return _xxhash.xxh3_128_hexdigest(data) == self.xxh3_128
        return hashlib.sha256(data).hexdigest() == self.sha256


_REQUIRED = frozenset({"kind", "key", "size", "sha256", "format"})


def make_record(kind: str, key: str, data: bytes) -> CacheRecord:
    """The record of ``data`` as :func:`store` writes it."""
    return CacheRecord(kind=kind, key=key, size=len(data), sha256=hashlib.sha256(data).hexdigest(),
                       xxh3_128=_xxhash.xxh3_128_hexdigest(data) if _xxhash is not None else None)


def meta_path(path: Path) -> Path:
    return path.with_name(path.name + META_SUFFIX)


def _remedy(exc: OSError) -> tuple[str, str]:
    if exc.errno in _FULL:
        return "no space left on the device", "free some space, or point AGENTWORLD_CACHE at a disk with room"
    if exc.errno in _READ_ONLY:
        return (f"cannot write ({os.strerror(exc.errno)})",
                "make the cache directory writable, or point AGENTWORLD_CACHE at a writable directory")
    return f"cannot write ({exc.strerror or exc})", "check the cache directory, or point AGENTWORLD_CACHE elsewhere"


def cache_error(path: Path, exc: OSError) -> CacheError:
    problem, remedy = _remedy(exc)
    return CacheError(path, problem, remedy)


def ensure_dir(path: Path) -> Path:
    """``mkdir -p`` that reports an unusable cache location as a :class:`CacheError`."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise cache_error(path, exc) from None
    return path


def _rebuild_warning(path: Path | str, kind: str, why: str) -> None:
    # The message names the file, so Python's warning registry shows each broken file once.
    warnings.warn(f"cached {kind} {path} {why}; rebuilding it", CacheWarning, stacklevel=3)


def _read(path: Path | str, kind: str) -> bytes | None:
    """The file's bytes; None when it is missing (or a directory, warned); CacheError when unreadable."""
    try:
        return read_file(path)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        _rebuild_warning(path, kind, "is a directory")
        return None
    except OSError as exc:
        raise CacheError(path, f"cannot read ({exc.strerror or exc})",
                         "fix its permissions, delete it, or point AGENTWORLD_CACHE elsewhere") from None


def _mismatch(record: CacheRecord, key: str, kind: str, payload: bytes | memoryview) -> str | None:
    """Why ``payload`` is not the artefact ``record`` vouches for (None: it is)."""
    if record.format != FORMAT or record.kind != kind:
        return f"has a record of another format or kind ({record.kind!r}, format {record.format})"
    if record.key != key:
        return f"was built for {record.key!r}, not {key!r}"
    if record.size != len(payload):
        return f"is {len(payload)} bytes, not the {record.size} recorded (truncated or edited)"
    if not record.matches(payload):
        return "does not match its recorded hash (corrupted or edited)"
    return None


def load(path: Path | str, key: str, kind: str) -> bytes | None:
    """The bytes stored at ``path`` for ``key``, or ``None`` when missing or failing the check (warned)."""
    data = _read(path, kind)
    if data is None:
        return None
    try:
        record = CacheRecord.parse(read_file(os.fspath(path) + META_SUFFIX).decode("utf-8"))
    except FileNotFoundError:
        why = "has no integrity record"
    except (OSError, ValueError, TypeError) as exc:
        why = f"has an unreadable integrity record ({type(exc).__name__})"
    else:
        why = _mismatch(record, key, kind, data)
        if why is None:
            return data
    _rebuild_warning(path, kind, why)
    return None


def load_sealed(path: Path | str, key: str, kind: str, parse: Callable[[bytes, int], T]) -> tuple[T, int] | None:
    """A sealed artefact (:func:`store_sealed`): checked against the record on its first line, then
    decoded by ``parse(data, start)``, where the payload is ``data[start:]`` (not copied out), which
    raises on the wrong shape. Returns the parsed value and the payload's size (a cheap memory
    estimate for callers), or ``None``: missing, or failing a check (warned, as :func:`load`)."""
    data = _read(path, kind)
    if data is None:
        return None
    start = data.find(b"\n") + 1   # 0: no record line, which then fails to parse
    try:
        record = CacheRecord.parse(data[:start].decode("utf-8"))
    except (ValueError, TypeError) as exc:
        why = f"has an unreadable integrity record ({type(exc).__name__})"
    else:
        why = _mismatch(record, key, kind, memoryview(data)[start:])
        if why is None:
            try:
                return parse(data, start), len(data) - start
            except (ValueError, LookupError, TypeError, EOFError) as exc:  # CorruptCacheFile, decode errors, missing keys
                why = f"has the wrong shape ({str(exc)[:120]})"
    _rebuild_warning(path, kind, why)
    return None


def load_if_matches(path: Path, record: CacheRecord) -> bytes | None:
    """The bytes at ``path`` if they match ``record`` (kept by a verified artefact that depends on
    them), else ``None``, silently: the caller then takes the :func:`load` path, which reads the
    file's own record and warns. Skips reading and parsing the sidecar when all is well."""
    try:
        data = read_file(path)
    except OSError:
        return None
    return data if len(data) == record.size and record.matches(data) else None


@contextlib.contextmanager
def mapped_if_matches(path: Path | str, record: CacheRecord) -> Iterator[mmap.mmap | None]:
    """The file at ``path`` as a read-only memory map if it matches ``record``, else ``None``
    (silently, as :func:`load_if_matches`); the map is closed when the block ends.

    For a caller that only copies the bytes somewhere else (SQLite's private copy of a golden
    database): mapping reads the kernel's page cache in place, where :func:`read_file` first
    copied it into a new ``bytes`` object, touching fresh memory for every page of a file that
    is only copied again. The map lives only inside the block: Python keeps a duplicated descriptor per
    map, and cache writers replace files atomically (a new inode), so the mapped file itself
    is never truncated under the reader by this package.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        yield None
        return
    try:
        if os.fstat(fd).st_size != record.size or record.size == 0:
            view = None
        else:
            view = mmap.mmap(fd, record.size, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        view = None
    finally:
        os.close(fd)
    if view is None:
        yield None
        return
    try:
        yield view if record.matches(view) else None
    finally:
        view.close()


def _write_temp(path: Path, data: bytes) -> str:
    """``data`` in a new temporary file beside ``path``; the file never outlives a failure here."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    except BaseException:
        _unlink(tmp)
        raise
    return tmp


def _unlink(name: str | Path) -> None:
    try:
        os.unlink(name)
    except OSError:
        pass


def store(path: Path, key: str, kind: str, data: bytes) -> None:
    """Write ``data`` and its :class:`CacheRecord` atomically; :class:`CacheError` if the cache is unusable.

    Both temporary files are written before either is renamed into place, so a full disk or a
    read-only directory fails before anything visible changes, and no temporary file is left.
    """
    record = make_record(kind, key, data)
    ensure_dir(path.parent)
    temps: list[str] = []
    try:
        temps.append(_write_temp(path, data))
        temps.append(_write_temp(meta_path(path), record.to_json().encode()))
        os.replace(temps[0], path)
        os.replace(temps[1], meta_path(path))
    except OSError as exc:
        raise cache_error(path, exc) from None
    finally:
        for tmp in temps:
            if os.path.exists(tmp):
                _unlink(tmp)


def store_sealed(path: Path | str, key: str, kind: str, data: bytes) -> None:
    """Write ``data`` as one file whose first line is its own :class:`CacheRecord` (as JSON).

    For artefacts read on a hot path: one file to open and one atomic rename, where
    :func:`store` writes a sidecar beside the payload (a second file to read on every load, and a
    crash between the two renames leaves a mismatch for the next load to repair). The record
    covers the bytes after its line. :class:`CacheError` if the cache is unusable.
    """
    record = make_record(kind, key, data)
    ensure_dir(Path(path).parent)
    tmp = None
    try:
        tmp = _write_temp(Path(path), record.to_json().encode() + b"\n" + data)
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise cache_error(Path(path), exc) from None
    finally:
        if tmp is not None:
            _unlink(tmp)


#: Every byte to a space but digits, which become "0": finds runs of digits with one ``in``.
_DIGITS_ONLY = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
#: orjson reads an integer outside [-2**63, 2**64) as a float, without an error (3.8): text with
#: a run of this many digits (a number, or digits inside a string) is parsed by json instead.
#: -2**63 - 1 already has 19.
_LONG_NUMBER = b"0" * 19


def loads(data: bytes | memoryview | str) -> Any:
    """``json.loads``, through orjson when it is installed and gives the same value.

    Takes a memoryview too (a line of a loaded artefact, sliced without copying). What orjson
    rejects (NaN, numbers out of a double's range) goes to json, and so does text with 19 digits
    in a row, where orjson could turn an integer beyond 64 bits into a float (the scan costs
    ~1 us per KB; such text is rare, and json reads it exactly)."""
    raw = data.encode() if isinstance(data, str) else bytes(data)
    if _orjson is not None and _LONG_NUMBER not in raw.translate(_DIGITS_ONLY):
        try:
            return _orjson.loads(raw)
        except _orjson.JSONDecodeError:
            pass  # e.g. NaN, which json accepts: let json decide
    return json.loads(raw)


class Lines(Sequence):
    """The lines of ``data`` as views into it, not copies, located from their known byte lengths.

    ``sizes`` is the byte length of every line (each but the last followed by one newline), as
    the writer recorded it, so a line is found without scanning ``data`` for newlines. Copying
    every line (``bytes.split``) was ~100 KB of task text per bundle of which a first use parses
    one task, and fresh memory is what a new process pays most for. Raises
    :class:`CorruptCacheFile` when the sizes do not tile ``data`` exactly.
    """

    def __init__(self, data: bytes, sizes: Sequence[int]):
        # Line i starts after the i lines before it and their newlines: at _before[i] + i.
        ints = bool(sizes) and set(map(type, sizes)) == {int} and min(sizes) >= 0
        before = list(itertools.accumulate(sizes, initial=0)) if ints else [0]
        if not ints or before[-1] + len(sizes) - 1 != len(data):
            raise CorruptCacheFile(f"{len(sizes)} line sizes do not add up to the {len(data)} bytes")
        self._data, self._view = data, memoryview(data)
        self._sizes, self._before = list(sizes), before

    def __len__(self) -> int:
        return len(self._sizes)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return _LineSlice(self, range(*index.indices(len(self))))
        if index < 0:
            index += len(self._sizes)
        if not 0 <= index < len(self._sizes):
            raise IndexError("line index out of range")
        start = self._before[index] + index
        end = start + self._sizes[index]
        if end < len(self._data) and self._data[end] != 0x0A:
            raise CorruptCacheFile(f"line {index} does not end where its size says")
        return self._view[start:end]


class _LineSlice(Sequence):
    """A range of :class:`Lines` (the tool or task lines of a bundle)."""

    def __init__(self, lines: Lines, indices: range):
        self._lines, self._indices = lines, indices

    def __len__(self) -> int:
        return len(self._indices)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return _LineSlice(self._lines, self._indices[index])
        return self._lines[self._indices[index]]


def read_file(path: Path | str) -> bytes:
    """The bytes of ``path``, read unbuffered: one allocation of the file's size, no BufferedReader."""
    with open(path, "rb", buffering=0) as fh:
        return fh.readall()


def load_json(path: Path, key: str, kind: str, parse: Callable[[Any], T]) -> T | None:
    """A JSON artefact, checked by hash and then by ``parse`` (which raises on the wrong shape)."""
    data = load(path, key, kind)
    if data is None:
        return None
    try:
        return parse(loads(data))
    except (ValueError, KeyError, TypeError) as exc:  # includes CorruptCacheFile and JSON errors
        _rebuild_warning(path, kind, f"has the wrong shape ({str(exc)[:120]})")
        return None


def store_json(path: Path, key: str, kind: str, obj: Any) -> None:
    store(path, key, kind, json.dumps(obj, ensure_ascii=False).encode())
