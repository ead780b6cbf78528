"""Guards: discover kernel-import sites in a vLLM, drive each one and detect the warning_once leak."""
