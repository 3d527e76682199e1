"""The pure domain core every flow shares: the model, checks, selection, rendering rules, admission.

Nothing in this package does I/O, reads the environment or the clock, logs, or imports another
Runway package (not even providers/: the edges hand provider plug-ins in through the registry).
Sub-packages, lowest first; each imports only from those before it:
fields, model, schema, cel, checks, selection, rendering, admission.
"""
