"""The pure domain core: ModelDeployment model, defaulting, selection, validation, providers.

Nothing in this package does I/O, reads the environment or the clock, logs, or imports another
Runway package. Inputs arrive as arguments; results, reasons and warnings are returned.
"""
