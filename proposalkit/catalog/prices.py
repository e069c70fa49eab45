"""Cloud partners' prices: an instance type's on-demand price per instance-hour, as read (catalog
resources.yaml `price:`), and dollars as charging text. Pure; the price of a row is parsed with the row
(resources.py), nothing at import.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

PRICED_BASES = ("instance-hour",)   # charge bases whose factor is a price (catalog `price:`), not a site's rate


def dollars(x: float) -> str:
    """A price in charging text, as listed: '$55.04', '$21.957642' (at most six decimals, at least two)."""
    text = f"{x:,.6f}".rstrip("0")
    return "$" + text + "0" * (2 - len(text.split(".")[1]))


def usd(amount: float) -> str:
    """A dollar amount: '$6,880.00' (to the cent)."""
    return f"${amount:,.2f}"


@dataclass(frozen=True)
class Price:
    """A cloud instance type's on-demand price per instance-hour, as read (catalog ``price:``)."""

    per_hour: float | None      # US dollars per instance-hour; None: no on-demand price was found
    region: str                 # the region the price is for (us-east-1, East US, us-central1)
    basis: str                  # what the figure is: "on-demand, Linux" (no discounts, no storage or egress)
    read: str | None            # the date of the copy read, YYYY-MM-DD (None with no price)
    source: str
    confidence: str
    reference: str              # the provider's pricing page, its id in catalog/references.py (Appendix B)
    set_by: str = ""            # "": the catalog's; "workload file" or "proposal": price_per_hour replaced it

    @property
    def text(self) -> str:
        """'$55.04 per instance-hour (on-demand, Linux, us-east-1, read 2026-11-09)'; a given price says so."""
        if self.per_hour is None:
            return "no catalog price (set price_per_hour)"
        if self.set_by:
            return f"{dollars(self.per_hour)} per instance-hour (price_per_hour in the {self.set_by})"
        return f"{dollars(self.per_hour)} per instance-hour ({self.basis}, {self.region}, read {self.read})"


    @property
    def short(self) -> str:
        """'$55.04 us-east-1 2026-11-09': per instance-hour, region, date read (`catalog resources`)."""
        return "none found" if self.per_hour is None else f"{dollars(self.per_hour)} {self.region} {self.read}"


_PRICE_FIELDS = {f.name for f in fields(Price)} - {"set_by"}


def parse_price(price: dict | None, rule: dict, row: dict, bad, levels: tuple[str, ...]) -> Price | None:
    """A cloud row's `price:` (charge per instance-hour, unit USD, no factor of its own); None elsewhere.
    `bad`: the row's error maker; `levels`: the catalog's confidence levels."""
    cloud = rule.get("per") in PRICED_BASES
    if not cloud:
        if price is not None:
            raise bad("price: only a row charged per instance-hour has a price")
        return None
    if row.get("unit") != "USD" or "factor" in rule or not rule.get("whole_nodes"):
        raise bad("charge: per instance-hour is in USD, whole instances, the factor its price.per_hour")
    if not isinstance(price, dict) or set(price) != _PRICE_FIELDS:
        raise bad(f"price: expected {sorted(_PRICE_FIELDS)}, got {price!r}")
    per_hour = price["per_hour"]
    if per_hour is not None and not (isinstance(per_hour, (int, float)) and not isinstance(per_hour, bool)
                                     and per_hour > 0):
        raise bad(f"price.per_hour: expected dollars per instance-hour > 0, or null, got {per_hour!r}")
    if price["confidence"] not in levels or not price["source"]:
        raise bad("price: every price names its source and confidence")
    read = None if price["read"] is None else str(price["read"])
    if (read is None) != (per_hour is None) or read is not None and not (
            len(read) == 10 and read[4] == read[7] == "-" and read.replace("-", "").isdigit()):
        raise bad(f"price.read: expected the date the price was read, YYYY-MM-DD (null only with no price), got "
                  f"{price['read']!r}")
    from .references import REFERENCES     # deferred like the YAML: nothing is read at import
    from .sources import cite

    if price["reference"] not in REFERENCES:
        raise bad(f"price.reference: expected a work of catalog/references.py, got {price['reference']!r}")
    return Price(per_hour=float(per_hour) if per_hour is not None else None, region=str(price["region"]),
                 basis=str(price["basis"]), read=read, source=cite(price["source"], f"{row['id']}: price.source"),
                 confidence=price["confidence"], reference=price["reference"])
