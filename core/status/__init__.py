"""ModelDeployment status from what runs: the shared mappings of upstream workloads (workloads.py)
and the status a ModelDeployment gets from its provider's Workload (modeldeployment.py). Pure:
the caller reads the objects and the clock, and writes the status."""
