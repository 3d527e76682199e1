"""InferenceProviderConfigs as a registry, and engine and provider selection with its trace."""
