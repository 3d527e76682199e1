"""The field checks admission composes: credentials, Secret references, engine flags, overrides
(layer 1), storage and the UPDATE rules."""
