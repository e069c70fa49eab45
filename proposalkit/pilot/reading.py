"""Opening a pilot log: a regular file of UTF-8 text, read line by line within a size limit.

What is not one is refused before any reader sees a line, with what to do instead: a FIFO,
device or folder (files.open_regular: never blocks), a file over PILOT_LOG, UTF-16 or UTF-32
text (Windows PowerShell's `>` writes UTF-16), a compressed file or archive, binary data
(a NUL byte: in the first block, or on any later line). A UTF-8 byte-order mark is dropped.
"""

from __future__ import annotations

import io
import os
from typing import Iterator

from ..files import Limit, Refused, open_regular
from ..units import MiB
from .common import fail

# A pilot is a short run: a 10,000-step torchtune log is 1.5 MB, an hour of nvidia-smi samples of
# 8 GPUs every second 2.9 MB. 16 MiB is 10× the first; a larger file is a whole run's output, to be
# cut to the pilot's part. The limit keeps every log within seconds: lines are read one at a time
# in Python, and the slowest kind, 16 MiB of the shortest nvidia-smi rows (1.8 million), takes
# about 6 s on the project's shared 2-core machine under load (docs/pilot-logs.md).
PILOT_LOG = Limit("a pilot log", 16 * MiB, "a pilot's log is a few MB: keep the pilot's part of the file")
# The first block, for what the file is (an encoding's byte-order mark, a compressed file's magic
# number, UTF-16's NUL bytes).
SNIFF_BYTES = 4096

_COMPRESSED = ((b"\x1f\x8b", "a gzip-compressed file", "decompress it first (`gunzip`)"),     # RFC 1952 §2.3.1
               (b"BZh", "a bzip2-compressed file", "decompress it first (`bunzip2`)"),
               (b"\xfd7zXZ\x00", "an xz-compressed file", "decompress it first (`unxz`)"),   # xz format §2.1.1.1
               (b"\x28\xb5\x2f\xfd", "a zstd-compressed file", "decompress it first (`unzstd`)"),  # RFC 8878 §3.1.1
               (b"PK\x03\x04", "a zip archive", "extract the log first (`unzip`)"),
               (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "extract the log first (`7z x`)"))
_SAVE_AS_UTF8 = ("save it as UTF-8: in PowerShell `Get-Content LOG | Set-Content -Encoding utf8 LOG.txt` "
                 "(or run the command with `| Out-File -Encoding utf8`), elsewhere `iconv -f {enc} -t UTF-8`")


def _what_it_is(head: bytes) -> tuple[str, int | None] | None:
    """Why the first block is not UTF-8 text, and the line (None: the file as a whole); None if it is."""
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "UTF-32 text; expected UTF-8: " + _SAVE_AS_UTF8.format(enc="UTF-32"), None
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16 text (as Windows PowerShell's `>` writes it); expected UTF-8: " + _SAVE_AS_UTF8.format(
            enc="UTF-16"), None
    for magic, kind, remedy in _COMPRESSED:
        if head.startswith(magic) and (magic != b"BZh" or head[4:10] == b"1AY&SY"):
            return f"{kind}; expected a text log: {remedy} and pass the text", None
    nul = head.find(b"\x00")
    if nul < 0:
        return None
    # UTF-16 without a byte-order mark: ASCII text has a NUL in every other byte.
    half = len(head) // 2
    if half >= 2 and (head[1::2].count(0) >= 0.9 * half or head[0::2].count(0) >= 0.9 * half):
        return "UTF-16 text without a byte-order mark (NUL in every other byte); expected UTF-8: " + \
            _SAVE_AS_UTF8.format(enc="UTF-16LE"), None
    return "binary data (a NUL byte); expected a text log", head[:nul].count(b"\n") + 1


def lines(path: str, what: str = "a pilot log file") -> Iterator[tuple[int, str]]:
    """(line number, line) of the log at `path`, newline kept; InputError for what is not a text log.

    At most PILOT_LOG.bytes are read: a file that grows while read is refused there, so memory
    stays bounded (one line is at most the whole file)."""
    try:
        fd, status = open_regular(path, what)
    except Refused as error:
        raise fail(path, str(error)) from None
    except OSError as error:
        raise fail(path, f"cannot read ({error.strerror}); expected a readable pilot log file") from None
    if status.st_size > PILOT_LOG.bytes:
        os.close(fd)
        raise fail(path, PILOT_LOG.too_large(status.st_size))
    try:
        raw = os.fdopen(fd, "rb", buffering=1 << 16)
    except OSError:
        os.close(fd)
        raise
    with raw:
        try:
            head = raw.peek(SNIFF_BYTES)[:SNIFF_BYTES]
            refused = _what_it_is(head)
            if refused:
                raise fail(path, refused[0], refused[1])
            text = io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace")
            read, lineno, most = 0, 0, PILOT_LOG.bytes
            while True:
                line = text.readline(most + 1 - read)
                if not line:
                    return
                lineno += 1
                read += len(line)
                if "\x00" in line:
                    raise fail(path, "binary data (a NUL byte); expected a text log", lineno)
                if read > most:
                    raise fail(path, PILOT_LOG.too_large(read) + " (it grew while being read)", lineno)
                yield lineno, line
        except OSError as error:
            raise fail(path, f"cannot read ({error.strerror}); expected a readable pilot log file") from None
