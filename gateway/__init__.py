"""The gateway side: ExternalModelProvider merge boundary and LiteLLM model sync."""
