"""The test cluster: kube-apiserver and etcd built from pinned Go modules, upstream CRDs."""
