"""The parser tier (`make parsers`, issue #20): every launch Runway renders, parsed by the pinned
engines' own argument parsers, each in a cached virtualenv of its engine set.

1. cases.py renders the render matrix, the examples and a few more cases with Runway's code and
   collects every launch: the vLLM server's args (llm-d, Direct vLLM), each
   `python3 -m dynamo.<module>` container's args, each RayService application.
2. venvs.py builds `.venv-parsers-<set>` once per set of pins (vllm, dynamo-vllm, dynamo-sglang,
   dynamo, ray): conflicting pins (vLLM 0.33 for llm-d, the older vLLM Dynamo and Ray pin,
   SGLang) need separate virtualenvs.
3. check.py runs under each set's Python and imports the real parser classes (not the
   catalogs `make flags` reads statically); __main__.py prints a verdict per launch and exits 1
   on any refusal.

Where check.py departs from the process the pod runs, it is for one reason each: vLLM's parser
defaults need a platform, and with no GPU it finds none (check.py sets vLLM's CPU platform, as
vLLM's CLI does for `vllm bench`); SGLang's ServerArgs.__post_init__ needs an accelerator and
Dynamo's fetch_model downloads the model (both are skipped); the pinned TRT-LLM, whose BuildConfig
gives dynamo.trtllm four defaults, is not on PyPI (a stand-in gives them). Everything that
defines, parses and validates flags runs. README-parsers.md has the measurements.
"""
