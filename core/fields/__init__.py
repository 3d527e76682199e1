"""Field errors with Kubernetes-style field paths, and the exception tree of Runway."""
