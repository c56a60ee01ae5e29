"""drainwatch shell: Faust app, topics, agents, sinks, shippers and the CLI."""
