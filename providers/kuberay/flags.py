"""KubeRay: no flag catalog. Ray Serve LLM takes engine kwargs, not command-line flags."""

from core.model.plugin import no_flag_catalog, no_owned_flags

flag_catalog = no_flag_catalog
owned_flags = no_owned_flags
