"""Tests of the export (upstream/): the test vLLM can merge."""
