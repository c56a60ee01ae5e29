"""The sinks: where a run's rows go (files, memory, InfluxDB, metric topics, the state store),
all on one contract (:mod:`streams.sinks.base`)."""
