"""Checkout tools (not shipped): README's generated tables, the npm pins of the report viewer, the fault campaign
(campaign/) and the miniature vLLM it shares with the tests (toy_vllm.py), the release's build and checks
(release.py)."""
