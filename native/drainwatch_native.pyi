"""drainwatch's compiled Moab node-status tokenizer (src/lib.rs)."""

def tokenize_moab(data: bytes) -> tuple[int, bytes, tuple[tuple[bytes, list[str]], ...]]:
    """(lines, ok per line (0/1 bytes), per column (codes: little-endian u32 per line,
    0xFFFFFFFF where refused; distinct values)) for head second, head rest, node, state,
    rsvlist, joblist."""
