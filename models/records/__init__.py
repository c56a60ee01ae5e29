"""The records that travel on topics and between stages: node status, job events, node
samples, rejects, and their checks (ranges, job ids)."""
