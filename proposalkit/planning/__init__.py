"""Planning: validated workloads × catalogs → Plan.

    records.py    the planner's records (Plan, WorkloadPlan, Candidate, Charge, ...): what render and review read
    planner.py    plan_files / plan_workload: settings, tokens, warnings, assembling the Plan
    stores.py     what a workload stores: checkpoint, final weights, dataset, the model it starts from (shared once)
    search.py     the GPU choice: GPU types and counts tried, memory fit, throughput, cheapest, alternatives
    inference.py  inference workloads: the engine, batch jobs, services by load, the derivation
    infeasible.py why a workload cannot be planned, with what to change
    pilots.py     pilot logs in the plan: the scaling rule and the records (Scaling, Comparison)
    comparison.py each pilot beside the estimate for its own GPU type and count
    charges.py    a job in a resource's unit, walltime, calendar, track caps and ACCESS credits
"""
