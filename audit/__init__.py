"""The audit: every *_once call whose arguments can keep a live object in the cache (a linter)."""
