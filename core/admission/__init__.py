"""Hydration, validation and the admission pipeline for the three kinds."""
