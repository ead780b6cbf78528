"""`nox -s dogfood`: our own tests held to what we ask of vLLM's, by mutmut 3.8.1's stock operators.

The project is copied into a `warnonce_guard/` layout in a work folder (nothing is installed from it and the
checkout is only read), mutmut mutates `MODULES` there and runs the fast tests of `TESTS` (the rule's and the
products') that reach each mutated function, and the score is printed per module. A survivor is either killed by a
test or listed in `equivalents.toml` with the reason it cannot be told apart; the run fails on any other survivor
and on any module under `FLOOR` percent killed, counting `killed / (mutants - equivalent)` (a timeout counts as
killed once it times out again run alone: beside another worker a survivor may only have been slow).
"""
