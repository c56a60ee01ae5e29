"""Offline replay engines, one module per input family."""
