"""Mutations: put the warning_once bug back at every discovered site (via mutmut), score and report."""
