"""Builders and helpers shared by the test tiers."""
