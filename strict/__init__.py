"""Strict mode: a pytest plugin that checks the *_once cache contract at run time."""
