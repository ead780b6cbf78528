"""Tests of strict mode (strict/): the pytest plugin and its contract table."""
