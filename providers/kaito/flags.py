"""KAITO: no flag catalog. Presets take no flags from the spec, and the llama.cpp template
always runs the user's image (there is no default to catalogue)."""

from core.model.plugin import no_flag_catalog, no_owned_flags

flag_catalog = no_flag_catalog
owned_flags = no_owned_flags
