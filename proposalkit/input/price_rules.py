"""Rules for price_per_hour, a cloud instance type's price (workload, `defaults:` or `proposal:`), said before
planning: it prices one cloud instance type, and an instance type the catalog has no price for needs one.

A workload's price_per_hour is for its own target (its `resource`, else the proposal's); the proposal's is for
the workloads on the proposal's resource (planning/planner.py puts it in their place, `price_for`).
"""

from __future__ import annotations

from ..catalog import resources


def price_for(workload, proposal) -> float | None:
    """The price per instance-hour a workload is planned at: its own, else its proposal's where the workload
    runs on the proposal's resource; None: the catalog's."""
    if workload.price_per_hour is not None:
        return workload.price_per_hour
    if proposal is None or proposal.price_per_hour is None:
        return None
    return proposal.price_per_hour if workload.resource in (None, proposal.resource) else None


def _priced_row(resource_id: str | None) -> tuple[resources.Resource | None, str | None]:
    """The one cloud row a price can be for, else why not (None, message). (None, None): no resource."""
    if resource_id is None:
        return None, "price_per_hour prices a cloud instance type, and no resource is named (expected resource: " \
                     "one of " + ", ".join(r.id for r in resources.resources().values() if r.is_cloud) + ")"
    rows = resources.resolve(resource_id)
    if not any(r.is_cloud for r in rows):
        return None, (f"{resource_id} is charged in {rows[0].unit} by its own rule, not at a price per "
                      f"instance-hour (price_per_hour is for a cloud instance type: AWS, Azure, Google)")
    if len(rows) > 1:
        return None, (f"price_per_hour is the price of one instance type, and {resource_id} has several "
                      f"({', '.join(r.id for r in rows)}); name one as the resource")
    return rows[0], None


def proposal_price_problem(proposal, resource_ids) -> str | None:
    """The proposal's price_per_hour without one cloud instance type to price (proposal.resource)."""
    if proposal is None or proposal.price_per_hour is None:
        return None
    if proposal.resource is not None and resource_ids is not None and proposal.resource not in resource_ids:
        return None          # the unknown resource is the problem, said at proposal.resource
    return _priced_row(proposal.resource)[1]


def price_problems(workload, proposal, resource_ids) -> list[tuple[tuple, str]]:
    """(path, message) for a workload's price_per_hour without a cloud instance type to price, and for a
    workload on an instance type the catalog has no price for, with no price_per_hour."""
    resource_id = workload.resource if workload.resource is not None else (proposal.resource if proposal else None)
    if resource_id is None or resource_ids is not None and resource_id not in resource_ids:
        if workload.price_per_hour is not None and resource_id is None:
            return [(("price_per_hour",), _priced_row(None)[1])]
        return []            # an unknown resource is said where it is named
    if workload.price_per_hour is not None:
        message = _priced_row(resource_id)[1]
        return [(("price_per_hour",), message)] if message else []
    rows = resources.resolve(resource_id)     # a provider (several rows) plans only its priced ones
    if len(rows) == 1 and rows[0].is_cloud and rows[0].price.per_hour is None \
            and price_for(workload, proposal) is None:
        row = rows[0]
        where = ("resource",) if workload.resource is not None else None
        # the catalog's finding, its derived source's title: "proposalkit, no on-demand price found (2026-11): …"
        why = row.price.source.split(" (")[0].removeprefix("proposalkit, ")
        return [(where, f"{row.id} ({row.partition}) has no price per instance-hour in the catalog ({why}; "
                        "proposalkit catalog resources); set price_per_hour, dollars per instance-hour, on the "
                        "workload or in proposal:")]
    return []
