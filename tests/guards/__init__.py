"""Tests of the guards (guards/)."""
