"""The command line: one entry point, one module per command."""
