"""Reading files a user hands in (configs, task overlays): regular files of bounded size, never a hang.

A path that names a FIFO, a device such as ``/dev/zero``, a directory or a file larger than the
caller's limit is refused with one clear :class:`~agentworld_envs.util.errors.UserInputError`: the file
is opened non-blocking (a FIFO with no writer cannot block the open) and checked on the open
descriptor (so a file swapped after a check is still caught), and at most ``limit + 1`` bytes are read.
"""

from __future__ import annotations

import os
import stat

from .errors import UserInputError


def read_regular_file(path: str | os.PathLike, limit: int, what: str = "file") -> bytes:
    """The bytes of the regular file at ``path`` (at most ``limit``), or :class:`UserInputError` naming it."""
    name = os.fspath(path)
    if "\x00" in name:
        raise UserInputError(f"{what} {name[:80]!r}: not a file path")
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise UserInputError(f"{what} {name}: cannot be read ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise UserInputError(f"{what} {name}: {kind}")
        if st.st_size > limit:
            raise UserInputError(f"{what} {name}: {st.st_size} bytes; at most {limit} are allowed")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise UserInputError(f"{what} {name}: cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if len(data) > limit:   # it grew while being read
        raise UserInputError(f"{what} {name}: larger than {limit} bytes")
    return data
