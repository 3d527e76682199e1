"""Direct vLLM: no admission rules of its own beyond layer 2 of the overrides, and the engine
answers to the name the spec gives it (Runway passes it to vLLM)."""

from core.model.plugin import no_admission_checks, spec_served_name

admission_checks = no_admission_checks
served_as = spec_served_name
