"""``python -m streams.tables``: print the generated part of docs/outputs.md."""

from streams.tables import outputs_markdown

print(outputs_markdown(), end="")
