"""Everything that knows mutmut's internals: its exit codes, its state files, its seams.

Replacing mutmut 3.8.1 by another version means reading this package.
"""
