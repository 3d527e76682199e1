"""The providers, one package each: its __init__ builds the one Provider value the core sees
(core/model/plugin.py), exported as PROVIDER and naming only the hooks it has (the others take
the defaults), and its config.yaml is its InferenceProviderConfig; catalogs/*.json its flag
catalogs (`make flags`) and facts/*.json what its hooks read from the operator's sources. The
rest is the package's own: typically render.py (the upstream objects), overrides.py (layer 2 of
spec.provider.overrides), status.py (its upstream status), and what else it needs.

providers/modules.py finds the packages at call time: a sixth provider is one package and its
config.yaml. A provider imports only core/.
"""
