"""Where a catalog figure comes from, as a record: what kind of work, whose, which version, where.

Every catalog row (gpus.yaml, models.yaml, resources.yaml) cites its figures with typed sources:

    source:
      kind: datasheet            # one of KINDS
      by: NVIDIA                 # who published it: vendor, model publisher, site, authors
      title: NVIDIA H100 Tensor Core GPU Datasheet
      url: https://resources.nvidia.com/en-us-gpu-resources/h100-datasheet-24306
      date: 2023                 # the version read: publication date (YYYY, YYYY-MM or YYYY-MM-DD) ...
      revision: d04e592b...      # ... and/or its revision (a commit of a model or documentation repository)
      detail: "H100 SXM column: BFLOAT16 Tensor Core 1,979 TFLOPS, footnoted 'with sparsity'"

A field holds one such mapping or a list of them. The loaders render them as text (Source.text) for the
report and the plan; catalog.row_sources() lists them typed (the `catalog` command prints them and
tests/test_catalog_sources.py holds each field to its kinds). Imports nothing of the package.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The kinds of work a catalog figure may rest on, with what each means.
KINDS: dict[str, str] = {
    "datasheet": "the vendor's datasheet, product brief, specification page or architecture whitepaper",
    "model-card": "the model's own Hugging Face page (card and repository files), at a revision",
    "config": "the model's own config.json, at a revision",
    "paper": "a published paper or technical report",
    "provider-docs": "the provider's own documentation page (a site's user guide, the allocator's page)",
    "code": "the software's own source code at a commit (an engine's defaults)",
    "measurement": "a public record of a measurement (a log in an issue thread or repository), dated",
    "secondary": "a third party's restatement of a provider's figure, where the provider's page was not found",
    "derived": "proposalkit's own bound or derivation from documented facts, with its reasoning (confidence inferred)",
}
_KEYS = ("kind", "by", "title", "url", "date", "revision", "detail")
_DATE = re.compile(r"\d{4}(-\d{2}(-\d{2})?)?")


@dataclass(frozen=True)
class Source:
    """One work a catalog figure is read from (module docstring: the YAML form)."""

    kind: str           # KINDS
    by: str             # the publisher: vendor, model organisation, site, authors
    title: str
    url: str = ""       # "" only for a measurement known from records without an address
    date: str = ""      # YYYY, YYYY-MM or YYYY-MM-DD: the version read
    revision: str = ""  # a commit or document revision; a Source has a date, a revision or both
    detail: str = ""    # what the row reads there: the table, column and printed figures

    @property
    def version(self) -> str:
        """'2023', 'revision d04e592bb4f6', or both."""
        parts = [self.date] if self.date else []
        if self.revision:
            rev = self.revision[:12] if re.fullmatch(r"[0-9a-f]{13,40}", self.revision) else self.revision
            parts.append(f"revision {rev}")
        return ", ".join(parts)

    @property
    def text(self) -> str:
        """The full citation: 'NVIDIA, NVIDIA H100 Tensor Core GPU Datasheet (2023): H100 SXM column: … <url>'."""
        text = f"{self.by}, {self.title} ({self.version})"
        if self.detail:
            text += f": {self.detail}"
        return f"{text} {self.url}" if self.url else text


class SourceError(ValueError):
    """A catalog source that is not of the typed form (a bug in the catalog files, not a user's mistake)."""


def parse(value, where: str) -> tuple[Source, ...]:
    """The Sources of one catalog field: a mapping or a list of mappings (module docstring)."""
    items = value if isinstance(value, list) else [value]
    if not items:
        raise SourceError(f"{where}: no source")
    out = []
    for i, item in enumerate(items):
        at = where if len(items) == 1 else f"{where}[{i}]"
        if not isinstance(item, dict):
            raise SourceError(f"{at}: expected a mapping with {', '.join(_KEYS)}, got {item!r}")
        unknown = set(item) - set(_KEYS)
        if unknown:
            raise SourceError(f"{at}: unknown keys {sorted(unknown)}")
        fields = {k: " ".join(str(item[k]).split()) for k in _KEYS if item.get(k) is not None}
        if fields.get("kind") not in KINDS:
            raise SourceError(f"{at}: kind: expected one of {', '.join(KINDS)}, got {item.get('kind')!r}")
        missing = [k for k in ("by", "title") if not fields.get(k)]
        if missing:
            raise SourceError(f"{at}: {', '.join(missing)}: every source names its publisher and title")
        # A measurement or a secondary source may be known only from records without an address
        # (tests/test_catalog_sources.py lists those rows), and a derivation is proposalkit's own; every other
        # work has one.
        if not fields.get("url") and fields["kind"] not in ("measurement", "secondary", "derived"):
            raise SourceError(f"{at}: url: every {fields['kind']} source has its address")
        if not fields.get("date") and not fields.get("revision"):
            raise SourceError(f"{at}: date or revision: every source says which version was read")
        if fields.get("date") and not _DATE.fullmatch(fields["date"]):
            raise SourceError(f"{at}: date: expected YYYY, YYYY-MM or YYYY-MM-DD, got {fields['date']!r}")
        if fields.get("url") and not fields["url"].startswith("https://"):
            raise SourceError(f"{at}: url: expected an https:// address, got {fields['url']!r}")
        out.append(Source(**fields))
    return tuple(out)


def text(sources: tuple[Source, ...]) -> str:
    """The sources of one field as one citation text ('; ' between works), ending with a full stop."""
    return "; ".join(s.text for s in sources) + "."


def cite(value, where: str) -> str:
    """A catalog field's sources (parse) as text: what the loaders put in the row's string field."""
    return text(parse(value, where))
