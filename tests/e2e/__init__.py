"""The slow runs: the command line end to end, faults injected into it, the wheel, the replay."""
