"""Sub-commands of the drainwatch CLI, one module each."""
