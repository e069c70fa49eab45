"""Planning: validated workloads × catalogs → Plan.

    records.py    the planner's records (Plan, WorkloadPlan, Candidate, Charge, ...): what render and review read
    planner.py    plan_files / plan_workload: settings, tokens, storage, warnings, assembling the Plan
    search.py     the GPU choice: GPU types and counts tried, memory fit, throughput, cheapest, alternatives
    infeasible.py why a workload cannot be planned, with what to change
    resources.py  the resource catalog (catalog/resources.yaml): resources, tracks, ACCESS credit tiers
    charges.py    a job in a resource's unit, walltime, calendar, track caps and ACCESS credits
"""
