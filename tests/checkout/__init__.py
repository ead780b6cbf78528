"""Tests of the checkout itself: README and docs, CI files, dependencies, the layers, the checkout tools."""
