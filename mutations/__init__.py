"""Mutations: put the warning_once bug back at every discovered site (via mutmut), score and report.

Also the commands that drive the guards from outside a pytest run: the command line (`cli`) and the
release history (`history`), which runs discovery and the guards against every vLLM release.
"""
