"""Direct vLLM: the pods run the vLLM OpenAI server of the pinned vLLM image, whose catalog is
`vllm` (providers/vllm/catalogs/vllm.json, `make flags`); Runway owns the server's host and port
besides the engine flags it derives from the spec."""

from core.checks.flags import vllm_server_catalog, vllm_server_owned

flag_catalog = vllm_server_catalog
owned_flags = vllm_server_owned
