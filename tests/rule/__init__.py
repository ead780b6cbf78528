"""Tests of the rule (rule/): sites, liveness, formatting, discovery, the target."""
