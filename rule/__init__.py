"""The rule: what a kernel-import site is, what is live, and discovery of both in a target."""
