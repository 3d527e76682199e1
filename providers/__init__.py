"""The five providers, one package each with the same files:

  render.py     the upstream objects for one ModelDeployment
  overrides.py  layer 2 of spec.provider.overrides (what the upstream object accepts)
  pods.py       the labels and port of the serving pods its operator creates
  flags.py      which engine flag catalog its pods run, and the flags it owns
  config.yaml   its InferenceProviderConfig; catalogs/*.json its catalogs (`make flags`)

Each package's __init__ is its plug-in (core/model/plugin.py); providers/modules.py lists them.
A provider imports only core/.
"""
