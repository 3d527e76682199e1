"""`runway status-controller`: after the commit, reports what runs back onto each ModelDeployment
(phase, replicas, endpoint, conditions). It writes status only (never spec, no finalizers, no
owner references), so it cannot fight Flux or Argo CD for ownership. run.py is the entry point;
lease.py the leader election; observe.py the watches and the status writes; serve.py the
/healthz, /readyz and /metrics endpoints."""
