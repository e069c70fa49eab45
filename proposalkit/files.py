"""Reading an input file safely: regular files only, and only up to a stated size.

`plan /dev/zero` would otherwise read without end and a FIFO would block
forever; both are refused before reading, from the file's own status.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from .units import MiB


@dataclass(frozen=True)
class Limit:
    """What a file should be, its size limit, and why that limit (shown in the message)."""

    what: str
    bytes: int
    why: str

    def too_large(self, size: int) -> str:
        return (f"file too large ({size:,} bytes, expected {self.what} of at most {self.bytes // MiB} MiB, "
                f"{self.why})")


# The example workload file holds 5 workloads in 1,645 bytes (about 330 bytes each), so
# 10 MiB is some 30,000 workloads: a larger file is not a hand-written workload file.
WORKLOAD_FILE = Limit("a workload file", 10 * MiB, "some 30,000 workloads")
# A Hugging Face config.json is about 1 KB (meta-llama/Llama-3.1-8B's: 826 bytes); 1 MiB is 1,000× that.
CONFIG_FILE = Limit("a config.json", 1 * MiB, "1,000× a Hugging Face model's config")

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class Refused(Exception):
    """Why a file was not read, as a message; callers turn it into a Problem."""


def open_regular(path: str, what: str) -> tuple[int, os.stat_result]:
    """A file descriptor of the regular file at `path` and its status; Refused for anything else.

    Opened without blocking (a FIFO would wait for a writer), then checked by its
    status before a byte is read; OSError (missing, no permission) passes through.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    status = os.fstat(fd)
    if not stat.S_ISREG(status.st_mode):
        os.close(fd)
        kind = next((name for test, name in _KINDS if test(status.st_mode)), "a special file")
        raise Refused(f"not a regular file (got {kind}, expected {what})")
    return fd, status


def read_limited(path: str, limit: Limit) -> bytes:
    """The bytes of the regular file at `path`, at most `limit.bytes` of them; Refused otherwise."""
    fd, status = open_regular(path, limit.what)
    try:
        if status.st_size > limit.bytes:
            raise Refused(limit.too_large(status.st_size))
        with os.fdopen(fd, "rb") as handle:
            fd = -1
            raw = handle.read(limit.bytes + 1)
    finally:
        if fd >= 0:
            os.close(fd)
    if len(raw) > limit.bytes:     # it grew while being read
        raise Refused(limit.too_large(len(raw)))
    return raw
