"""User text made safe to show: the one home of control-character escaping.

Used by errors (every Problem and infeasible message) and by render (terminal
output and reports, re-exported from render/format.py). Imports nothing.
"""

from __future__ import annotations

import re

# C0 and C1 control characters and DEL, except newline and tab, which callers handle.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def control_escape(text: object) -> str:
    """User text with control characters written as escapes (ESC → '\\x1b').

    A model name or path holding terminal escape sequences would otherwise set
    the terminal's title or clear the screen when printed.
    """
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def one_line_escape(text: object) -> str:
    """control_escape, and a newline written as '\\n': one message stays one line."""
    return control_escape(text).replace("\n", "\\n")


# JSON encoders escape C0 controls (RFC 8259 requires it) but pass DEL and C1 (U+007F–U+009F,
# the 8-bit CSI among them) through raw. They can occur only inside strings, so writing them
# as \u escapes keeps the same values.
_JSON_RAW_CONTROL = re.compile("[\x7f-\x9f]")
# Looked for one character at a time: `c in text` scans at memchr speed, several times faster
# on a long plan than the character-class search.
_JSON_RAW_CONTROLS = tuple(chr(c) for c in range(0x7F, 0xA0))


def json_control_escape(json_text: str) -> str:
    """JSON text with DEL and C1 control characters written as \\u escapes: same values, nothing raw."""
    if not any(c in json_text for c in _JSON_RAW_CONTROLS):
        return json_text
    return _JSON_RAW_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)
