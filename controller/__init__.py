"""`runway status-controller`: after the commit, reports what runs back onto each ModelDeployment
(phase, replicas, endpoint, conditions). It writes status only (never spec, no finalizers, no
owner references), so it cannot fight Flux or Argo CD for ownership. run.py is the entry point;
lease.py the leader election; observe.py puts together kinds.py (what is watched), watching.py
(the watches, over kubeio.watch), cache.py, queue.py, reconcile.py (the status writes) and
health.py (provider health); classify.py the dry runs; metrics.py and serve.py the /healthz,
/readyz and /metrics endpoints."""
