"""Formatting: the one place numbers and user text become text, for every output format.

Numbers are formatted by type, never by key name (`FILTERS` are the report
templates' filters; the text, diff and derivation lines call the same
functions). User text is escaped for where it goes: `md_escape` for Markdown
(report, plan tables, diff comments; words GitHub would link as code spans),
`control_escape` for terminals and every other output (control, bidirectional
and zero-width characters shown as escapes, never sent raw), and
`formula_safe` for a table cell that a spreadsheet could run as a formula.
"""

from __future__ import annotations

import re

from ..text import control_escape  # its one home is proposalkit/text.py; re-exported here
from ..units import DAYS_DECIMALS, GB, HOURS_DECIMALS, GiB, pct_text, rate_text

# Marks for a catalog fact that was not read on the provider's own page (catalog `confidence`), and what each
# means: every document that shows a marked figure says so once.
CONFIDENCE_MARKS = {"secondhand": "†", "inferred": "‡"}
CONFIDENCE_NOTES = {
    "secondhand": "Second-hand source, not the provider's own page",
    "inferred": "Inferred from documented numbers, not stated by the provider (see the catalog notes)",
}


def confidence_notes(levels) -> tuple[tuple[str, str], ...]:
    """(mark, meaning) for each marked confidence level among `levels`, in the marks' order."""
    return tuple((mark, CONFIDENCE_NOTES[level]) for level, mark in CONFIDENCE_MARKS.items() if level in levels)


class Safe(str):
    """Text that is already safe for the output format (formatted numbers, escaped text)."""


def fmt_gib(n_bytes: float, digits: int = 1, unit: bool = True) -> Safe:
    """Bytes as GiB (2^30), e.g. '28.2 GiB' ('28.2' with unit=False, for a column headed GiB)."""
    return Safe(f"{n_bytes / GiB:,.{digits}f}" + (" GiB" if unit else ""))


def fmt_gb(n_bytes: float, digits: int = 1, unit: bool = True) -> Safe:
    """Bytes as GB (10^9), the unit the rules of thumb are stated in."""
    return Safe(f"{n_bytes / GB:,.{digits}f}" + (" GB" if unit else ""))


def fmt_size(n_bytes: float) -> Safe:
    """A storage size in binary units, the largest that keeps the number ≥ 1: '156.0 MiB', '2.25 TiB'."""
    for suffix, size in (("TiB", 2**40), ("GiB", GiB), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n_bytes) >= size:
            value = n_bytes / size
            return Safe(f"{value:,.2f} {suffix}" if value < 10 else f"{value:,.1f} {suffix}")
    return Safe(f"{n_bytes:,.0f} B")


def fmt_days(days: float) -> Safe:
    """Calendar days with one decimal (units.DAYS_DECIMALS; the plan carries them so rounded: units.days_shown)."""
    return Safe(f"{days:,.{DAYS_DECIMALS}f}")


def shown_amount(x: float) -> float:
    """Hours or an amount as shown: rounded to HOURS_DECIMALS (a total of shown rows adds these)."""
    return round(x, HOURS_DECIMALS)


def fmt_hours(hours: float) -> Safe:
    """Hours and allocation units: HOURS_DECIMALS decimals, thousands separated ('1,091.77')."""
    return Safe(f"{hours:,.{HOURS_DECIMALS}f}")


# A source's version pin inside a sentence: "@ d0fed636", "(@ ce5433b0)", "`@00f37686`". The plan JSON keeps
# them (the author's record of what was read); the documents a reviewer reads drop them (issue 23: commit
# hashes are for the author), the works themselves being cited in the references.
_PIN = re.compile(r" ?\(@ ?[0-9a-f]{7,40}\)| ?@ ?[0-9a-f]{7,40}\b")


def unpinned(text: str) -> str:
    """A planner's sentence without its sources' commit pins, for the documents."""
    return _PIN.sub("", text)


def fmt_limit(x: float) -> str:
    """A limit as given (a cap, a threshold, a walltime), not a computed figure: '1,000', '0.5'."""
    return f"{x:,.0f}" if x == round(x) else f"{x:,.4f}".rstrip("0")


def limit_hours(hours: float) -> str:
    """A limit as the catalog states it (a walltime, a period): '48 h', '0.5 h', not a computed figure."""
    return f"{hours:,.0f} h" if hours == round(hours) else f"{hours:,.4f}".rstrip("0") + " h"


def fmt_in_unit(amount: float, unit: str) -> str:
    """An allocation amount with its unit: '1,234.5 SUs' (as fmt_hours); US dollars to the cent, '$6,880.00'.
    Plain text, not Safe: Markdown escapes the '$' (GitHub reads $...$ as math)."""
    return f"${amount:,.2f}" if unit == "USD" else f"{fmt_hours(amount)} {unit}"


def and_list(words) -> str:
    """'a', 'a and b', 'a, b and c'."""
    words = list(words)
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def fmt_count(n: float) -> Safe:
    """An integer count with thousands separators."""
    return Safe(f"{round(n):,}")


def fmt_si(n: float) -> Safe:
    """A count with an SI suffix as model cards write it: 204.8M, 20B, 2.5T."""
    for suffix, size in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= size:
            return Safe(f"{n / size:,.4g}{suffix}")
    return Safe(f"{n:,.4g}")


def fmt_rate(x: float) -> Safe:
    """A rate (tokens/s) as units.rate_text prints it, the figure a run's hours are worked from."""
    return Safe(rate_text(x))


def fmt_pct(fraction: float) -> Safe:
    """A fraction as a percentage (units.pct_text): 0.3 → '30%', 0.125 → '12.5%'."""
    return Safe(pct_text(fraction))


def fmt_factor(x: float) -> Safe:
    """A ratio such as 'x 1.3' written as '1.30×'."""
    return Safe(f"{x:,.2f}×")


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>#|~$!@&])")
# What GitHub turns into a link, a notification or a cross-reference wherever it stands in text: the
# GFM autolinks (GFM spec 0.29-gfm §6.9: www., http:// and https:// URLs, email addresses; cmark-gfm
# also links ftp:// and any case of the scheme) and GitHub's references (@user, #123, GH-123,
# owner/repo#123). A backslash escape does not stop them all: cmark-gfm finds an email address
# after the escapes are gone (`a\@b.co` is still linked). Nothing is linked inside a code span.
_LINKABLE = re.compile(r"://|www\.|@\w|#\d|\bgh-\d", re.IGNORECASE)
# A cell a spreadsheet reads as a formula (OWASP, CSV Injection: '=', '+', '-', '@', tab and carriage
# return; the full-width forms, which spreadsheets in East Asian locales also read as operators).
_FORMULA_START = tuple("=+-@\t\r＝＋－＠")


def md_code(text: object) -> Safe:
    """User text as a Markdown code span that nothing in it can end: the backtick fence is longer
    than any run of backticks inside (CommonMark), padded with a space where the text starts or ends
    with one; a pipe is escaped, which GitHub honours inside code spans in tables; control
    characters and newlines never pass. Inside it nothing is a link, a mention or markup."""
    text = control_escape(re.sub(r"\s+", " ", str(text))).replace("|", "\\|")
    fence = "`" * (1 + max((len(run) for run in re.findall("`+", text)), default=0))
    pad = " " if text.startswith(("`", " ")) or text.endswith(("`", " ")) else ""
    return Safe(f"{fence}{pad}{text}{pad}{fence}")


def md_escape(text: object) -> Safe:
    """User text for Markdown: one line, and every character GitHub would act on escaped.

    Newlines and tabs become spaces (a newline would end a table row), other
    control characters escapes (control_escape: ESC → '\\x1b'); the
    backslash escapes are CommonMark's, which GitHub honours in tables too
    (`\\|`). `$` is escaped because GitHub renders `$...$` as math, `@`
    because it mentions a user, `<` and `&` because Markdown passes HTML through.
    A word GitHub would link (a URL, an email address, @user, #123) becomes a
    code span (md_code) instead: escapes alone do not stop every link.
    """
    if isinstance(text, Safe):
        return text
    one_line = control_escape(re.sub(r"\s+", " ", str(text)))
    return Safe(" ".join(_md_word(word) for word in one_line.split(" ")))


# Punctuation around a word that is not part of what GitHub would link: kept outside its code span.
_AROUND = re.compile(r"^([(\[{\"'<]*)(.*?)([)\]}\"'>.,;:!?]*)$")


def _md_word(word: str) -> str:
    lead, core, trail = _AROUND.match(word).groups()
    if _LINKABLE.search(core):
        return _MD_SPECIAL.sub(r"\\\1", lead) + md_code(core) + _MD_SPECIAL.sub(r"\\\1", trail)
    return _MD_SPECIAL.sub(r"\\\1", word)


def formula_safe(text: object) -> str:
    """User text for a table cell a spreadsheet may read (a report table copied into Excel, an HTML
    report opened in one): a cell that would start with a formula character gets a leading
    apostrophe, the spreadsheets' mark for text, which they do not show (OWASP, CSV Injection)."""
    text = str(text)
    stripped = text.lstrip()
    return "'" + stripped if stripped.startswith(_FORMULA_START) else text


def fmt_span(low_high: tuple[float, float]) -> Safe:
    """A range of hours, low–high: '25.9–63.4'; one figure where there is no spread."""
    low, high = (fmt_hours(x) for x in low_high)
    return Safe(low if low == high else f"{low}–{high}")


FILTERS = {
    "span": fmt_span,
    "gib": fmt_gib, "gb": fmt_gb, "hours": fmt_hours, "count": fmt_count, "si": fmt_si,
    "rate": fmt_rate, "pct": fmt_pct, "factor": fmt_factor, "size": fmt_size, "days": fmt_days,
    "in_unit": fmt_in_unit,
}
