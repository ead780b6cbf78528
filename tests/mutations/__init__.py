"""Tests of the mutation run (mutations/): operators, staging, the engine, verdicts, the report."""
