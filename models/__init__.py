"""drainwatch core: pure, synchronous records, parsers, accumulators and estimators.

No Kafka, no HTTP, no clocks: time comes in with the data.
"""
