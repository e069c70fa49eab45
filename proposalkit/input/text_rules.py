"""What text a workload file may hold: no invisible character that reorders or hides what is
printed, and no more characters than its place in the report can show.

The one check every text field of the format goes through (values.py's Text, Name and Prose).
Output escapes the same characters wherever text reaches it another way (text.control_escape).
"""

from __future__ import annotations

import re
import unicodedata

from ..text import INVISIBLE

_INVISIBLE = re.compile(f"[{INVISIBLE}]")

# How long each kind of text may be, and why (shown in the message).
# A name heads a table column and a report section: 100 characters is wider than any model id
# (a Hugging Face Hub repo id is at most 96, huggingface_hub's validate_repo_id).
NAME_CHARACTERS = 100
NAME_WHY = "a name heads a table column; put more in the description"
# Prose (title, PI, institution, description) is one line of the report: 1,000 characters are
# 10 lines of 10-pt text (render/pdf.py CHARS_PER_LINE = 100), a fifth of the two-page body.
PROSE_CHARACTERS = 1_000
PROSE_WHY = "about 10 lines of the report; the section B body fits about 2 pages"
# Paths and ids: the longest path Linux takes (PATH_MAX, 4,096 bytes, <linux/limits.h>).
TEXT_CHARACTERS = 4_096
TEXT_WHY = "the longest path Linux takes"


def text_problem(text: str, limit: int, why: str) -> tuple[str, str] | None:
    """(what is wrong, what is expected) for text that a workload file may not hold; None when fine.

    Checked first: a bidirectional control (U+202E can show "1 - 2" as "2 - 1"), a line or paragraph
    separator, or a zero-width character (two names that print the same), named with its
    position; then the length.
    """
    found = _INVISIBLE.search(text)
    if found is not None:
        char = found.group()
        name = unicodedata.name(char, "FORMAT CHARACTER")
        return (f"holds the invisible character U+{ord(char):04X} {name} at character {found.start() + 1:,}",
                "text without bidirectional controls, zero-width characters or line/paragraph separators, "
                "which reorder or hide what is printed; delete it")
    if len(text) > limit:
        return "too long", f"at most {limit:,} characters: {why}"
    return None
