"""The three kinds as typed views, their defaults, names, quantities, URLs, version pins, and the
interface a provider plug-in offers."""
