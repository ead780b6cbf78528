"""`nox -s vllm-tests`: strict mode on vLLM's own test suite (its environment, its test sources, the comparison)."""
