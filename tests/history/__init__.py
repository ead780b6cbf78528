"""Tests of the release history (history/)."""
