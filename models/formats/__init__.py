"""Parsers: the text of each log and trace format in, records and rejects (with reasons) out."""
