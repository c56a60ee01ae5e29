"""Grafana as code: the dashboards (``dashboards.py``, built with ``panels.py``) and the alert
rules, contact point and notification policy (``alerting.py``) that ``python -m
streams.grafana`` writes into ``grafana/`` (docs/grafana.md)."""
