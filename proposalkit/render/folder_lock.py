"""One writer at a time in an output folder: a lock held while a report set is swapped in.

Ten `proposalkit report … -o out` runs at once each write their set into a
staging folder and then rename its files over the old ones one by one; two
runs renaming at the same moment could leave report.md of one beside
report.html of the other. Under this lock the staging and the renames of one
run never interleave with another's, so the folder holds one complete set:
the last run's.

The lock is `fcntl.flock` on `DIR/.proposalkit.lock`, which the kernel
releases when its holder dies (a SIGKILL leaves nothing to clean up). Where
flock is not supported (NFS mounts that map it to POSIX locks, Lustre without
the `flock` mount option) POSIX record locks (`fcntl.lockf`, NFS's lock
manager) are tried; on Windows `msvcrt.locking`. Where none works the set is
written unlocked, with a warning.

The holder removes the lock file before it releases it, so no file is left
behind; a waiter that then gets the lock on the removed file sees that the
path no longer names its file and opens it again (the usual pattern for a
lock file that is deleted).
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

try:
    import fcntl
except ImportError:     # pragma: no cover - Windows
    fcntl = None

LOCK_NAME = ".proposalkit.lock"
# A run holds the lock while it writes and fsyncs its few files and renames them: well under a second
# on a local disk (the example set, 5 files of 250 kB, in 20 ms), seconds on a slow network file
# system. A holder that keeps it for a minute is stopped (Ctrl-Z) or hung: give up and say so.
WAIT_SECONDS = 60.0
# Errors that say "this file system does not do this kind of lock", as opposed to "it is taken".
_UNSUPPORTED = {errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL, errno.EBADF}


class LockTimeout(OSError):
    """Another run kept the folder's lock for WAIT_SECONDS."""


@dataclass
class Held:
    """The lock as held: how, or why not (`warning`, for the user)."""

    how: str | None           # "flock", "lockf", "msvcrt", or None when written unlocked
    warning: str | None = None


def _try_lock(fd: int, how: str) -> bool:
    """Take the lock without waiting: True when taken, False when another holds it."""
    try:
        if how == "flock":
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        elif how == "lockf":
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        else:
            import msvcrt   # pragma: no cover - Windows

            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        return True
    except OSError as error:
        if error.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK, errno.EDEADLK):
            return False
        raise


def _ways() -> tuple[str, ...]:
    if fcntl is not None:
        return ("flock", "lockf")
    try:   # pragma: no cover - Windows
        import msvcrt  # noqa: F401
        return ("msvcrt",)
    except ImportError:   # pragma: no cover
        return ()


def _same_file(fd: int, path: Path) -> bool:
    try:
        here, there = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


@contextlib.contextmanager
def locked(folder: Path, wait: float | None = None) -> Iterator[Held]:
    """Hold `folder`'s lock for the block (the folder must exist). OSError when the lock file
    cannot be made (a read-only folder: the caller names the folder); LockTimeout after `wait`
    seconds (default WAIT_SECONDS) of another run holding it."""
    path = folder / LOCK_NAME
    deadline = time.monotonic() + (WAIT_SECONDS if wait is None else wait)
    ways = list(_ways())
    reason = "no file locking on this system"
    pause = 0.005
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            taken = False
            while ways:
                try:
                    taken = _try_lock(fd, ways[0])
                    break
                except OSError as error:
                    if error.errno not in _UNSUPPORTED:
                        raise
                    reason = f"{ways[0]}: {error.strerror or error}"
                    ways.pop(0)
            if not ways:          # no way of locking works here: write unlocked, and say so
                with contextlib.suppress(OSError):
                    path.unlink()
                yield Held(None, f"could not lock {folder} ({reason}): runs writing into it at the same "
                                 "time may mix their files")
                return
            if taken and _same_file(fd, path):
                try:
                    yield Held(ways[0])
                finally:
                    with contextlib.suppress(OSError):
                        path.unlink()      # before the release: a waiter then finds its file gone
                return
        finally:
            os.close(fd)
        if taken:                 # the holder removed the file this lock was on: open the path again
            continue
        if time.monotonic() >= deadline:
            raise LockTimeout(errno.EAGAIN, f"another proposalkit report kept {folder} locked for "
                                            f"{WAIT_SECONDS if wait is None else wait:.0f} s", str(path))
        time.sleep(pause)
        pause = min(pause * 2, 0.1)
