"""Tests of the shared ground (common/)."""
