"""User text made safe to show: the one home of control-character escaping.

Used by errors (every Problem and infeasible message) and by render (terminal
output and reports, re-exported from render/format.py). Imports nothing.
"""

from __future__ import annotations

import re

# C0 and C1 control characters and DEL, except newline and tab, which callers handle.
_CONTROL = r"\x00-\x08\x0b-\x1f\x7f-\x9f"
# Characters that change how the text around them reads while showing nothing themselves:
# the Bidi_Control characters of Unicode's PropList.txt (ALM U+061C, LRM/RLM U+200E-200F, the
# embeddings and overrides U+202A-202E, the isolates U+2066-2069), which can show "1 - 2" as
# "2 - 1" (the "Trojan Source" attack, Boucher & Anderson 2021); the line and paragraph separators
# U+2028-2029; and the zero-width characters U+200B-200D, U+2060 and U+FEFF, which make two
# different names print the same.
INVISIBLE = "\u061c\u200b-\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff"
_ESCAPED = re.compile(f"[{_CONTROL}{INVISIBLE}]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def control_escape(text: object) -> str:
    """User text with control characters written as escapes (ESC → '\\x1b'), and the invisible
    characters that reorder or hide text as well (RIGHT-TO-LEFT OVERRIDE → '\\u202e').

    A model name or path holding terminal escape sequences would otherwise set
    the terminal's title or clear the screen when printed; a bidirectional
    override would show the figures after it reversed.
    """
    return _ESCAPED.sub(_escape, str(text))


def one_line_escape(text: object) -> str:
    """control_escape, and a newline written as '\\n': one message stays one line."""
    return control_escape(text).replace("\n", "\\n")


# JSON encoders escape C0 controls (RFC 8259 requires it) but pass DEL and C1 (U+007F–U+009F,
# the 8-bit CSI among them) and the invisible characters above through raw. They can occur only
# inside strings, so writing them as \u escapes keeps the same values.
_JSON_RAW_CONTROL = re.compile(f"[\x7f-\x9f{INVISIBLE}]")
# Looked for one character at a time: `c in text` scans at memchr speed, several times faster
# on a long plan than the character-class search.
_JSON_RAW_CONTROLS = tuple(chr(c) for c in range(0x7F, 0xA0)) + tuple(
    chr(c) for c in range(0x200B, 0x2070) if _ESCAPED.match(chr(c))) + ("\u061c", "\ufeff")


def json_control_escape(json_text: str) -> str:
    """JSON text with DEL, C1 control and invisible characters written as \\u escapes: same values,
    nothing raw."""
    if not any(c in json_text for c in _JSON_RAW_CONTROLS):
        return json_text
    return _JSON_RAW_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)
