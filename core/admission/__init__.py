"""Admission of the three kinds: one entry (entry.admit_object) answering a Verdict
(verdict.py), over hydration, validation and the ModelDeployment pipeline."""
