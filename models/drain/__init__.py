"""Drain accounting (seed 000): per-node accrual, windows, bases, per-job drain, the release
forecast (seed 001), and the live accountant's event-time windows and retention."""
