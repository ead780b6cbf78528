"""Tests of the command line (cli/)."""
