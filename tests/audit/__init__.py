"""Tests of the audit (audit/): the rule table, scan, pragmas, baseline, output formats, --fix, the hook."""
