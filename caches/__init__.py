"""The once-caches: the table of every library's (`model`, `caches.toml`), whether vLLM's logger renders first
(`renders_first`), and the patch that makes it (`cache_fix`)."""
