"""Structural OpenAPI checks, size bounds, CRD rules and formats, and Runway's own CRD schemas."""
