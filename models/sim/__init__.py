"""Simulation: the workload model, the EASY scheduler and the Moab log writer (demos, tests)."""
