"""The shared ground: exit codes and errors, files and ownership, processes, the console."""
