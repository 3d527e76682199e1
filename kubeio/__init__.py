"""The room every edge may import: Kubernetes and file I/O that more than one flow needs.

Runway's shipped data (provider configs, flag catalogs, version pins), the one provider-registry
builder, the one Kubernetes client factory, the one atomic file write, the one status-condition
builder and the one object key. It imports core/ and providers/, never an edge.
"""
