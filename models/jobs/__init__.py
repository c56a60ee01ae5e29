"""Job analytics (seeds 001, 002, 004 and Open XDMoD usage): usage, short jobs, turnover,
run-time prediction, capability use, fair share, and the job events' time-order merger."""
