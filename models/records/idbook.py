"""Job ids <-> dense int codes for a long-lived worker, at ~24 bytes per numeric id.

A worker tracks up to millions of job ids; as Python strings in a dict (``Interner``) each
costs ~130 bytes. Scheduler job ids are almost always decimal numbers (Moab '1292428', Slurm
'4242'), so an id that is a canonical decimal (ASCII digits, no leading zero, at most 18 digits)
is kept as its int64 value; any other id ('1292428.bw', '42_7', '007') keeps its string. Codes
are dense and in order of first sight, as ``Interner``'s are, so the two are interchangeable.

Numeric ids are found by binary search in sorted arrays; ids coded since the last merge sit in a
small dict (with recent hits), merged into the arrays when it reaches an eighth of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

_MIN_MERGE = 4096
_NOT_NUMERIC = -1


def _lookup(keys: np.ndarray, vals: np.ndarray, queries: np.ndarray, out: np.ndarray) -> None:
    """``out[i] = vals[j]`` where ``queries[i] == keys[j]`` (``keys`` sorted); others untouched."""
    if keys.size and queries.size:
        pos = np.minimum(np.searchsorted(keys, queries), keys.size - 1)
        hit = keys[pos] == queries
        out[hit] = vals[pos[hit]]


def numeric_id(name: str) -> int:
    """The id's int value if it is a canonical decimal of at most 18 digits, else -1."""
    if name.isascii() and name.isdigit() and len(name) <= 18 and (name[0] != "0" or name == "0"):
        return int(name)
    return _NOT_NUMERIC


class IdBook:
    """Ids <-> dense codes; the interface of ``Interner`` without its ``names`` list."""

    __slots__ = ("_ids", "_n", "_strs", "_str_index", "_keys", "_vals", "_merged", "_recent")

    def __init__(self) -> None:
        self._ids = np.empty(0, dtype=np.int64)  # per code: numeric value, or -1
        self._n = 0
        self._strs: dict[int, str] = {}  # code -> id, for ids that are not numeric
        self._str_index: dict[str, int] = {}
        self._keys = np.empty(0, dtype=np.int64)  # sorted numeric values of codes < _merged
        self._vals = np.empty(0, dtype=np.int64)  # their codes
        self._merged = 0
        self._recent: dict[str, int] = {}  # numeric ids coded since the merge, and recent hits

    def __len__(self) -> int:
        return self._n

    # ---- lookups ------------------------------------------------------------------------
    def code(self, name: str) -> int:
        c = self._recent.get(name)
        if c is None:
            c = self._str_index.get(name)
        if c is None:
            c = self._slow(name, numeric_id(name))
        return c

    def codes(self, names: Sequence[str]) -> np.ndarray:
        """Codes of ``names`` (new ones coded in order), as an int64 array."""
        out = np.empty(len(names), dtype=np.int64)
        recent, strs = self._recent, self._str_index
        miss = []
        for i, name in enumerate(names):
            c = recent.get(name)
            if c is None:
                c = strs.get(name)
            if c is None:
                miss.append(i)
            else:
                out[i] = c
        if miss:
            nums = np.array([numeric_id(names[i]) for i in miss], dtype=np.int64)
            found = self._find(nums)
            for i, f in zip(miss, found.tolist(), strict=True):
                if f >= 0:
                    out[i] = f
                    self._recent[names[i]] = f
                else:
                    out[i] = self.code(names[i])  # a repeat inside ``names`` is found here
        if len(self._recent) > max(_MIN_MERGE, self._merged // 32):
            self._merge()
        return out

    def name(self, code: int) -> str:
        k = int(self._ids[code])
        return str(k) if k >= 0 else self._strs[code]

    def names_of(self, codes: Iterable[int]) -> list[str]:
        ids, strs = self._ids, self._strs
        return [str(k) if k >= 0 else strs[c] for c in codes for k in (int(ids[c]),)]

    def all_names(self) -> list[str]:
        return self.names_of(range(self._n))

    # ---- changes ------------------------------------------------------------------------
    def truncate(self, n: int) -> None:
        """Forget every id coded at or after ``n``."""
        if n >= self._n:
            return
        self._n = n
        for c in [c for c in self._strs if c >= n]:
            del self._str_index[self._strs.pop(c)]
        self._recent = {k: c for k, c in self._recent.items() if c < n}
        if n < self._merged:
            keep = self._vals < n
            self._keys, self._vals, self._merged = self._keys[keep], self._vals[keep], n

    def compact(self, keep: np.ndarray) -> None:
        """Keep the ids where ``keep`` (bool per code) is true, renumbered densely in their old
        order: the new code of a kept id is ``np.cumsum(keep)[old] - 1``."""
        keep = np.asarray(keep[: self._n], dtype=bool)
        new = np.cumsum(keep) - 1
        self._strs = {int(new[c]): s for c, s in self._strs.items() if keep[c]}
        self._str_index = {s: c for c, s in self._strs.items()}
        self._set_ids(self._ids[: self._n][keep])

    def to_arrays(self) -> tuple[np.ndarray, dict[int, str]]:
        """(numeric value or -1 per code, {code: id} of the others): the durable form."""
        return self._ids[: self._n].copy(), dict(self._strs)

    @classmethod
    def from_arrays(cls, ids: np.ndarray, strs: dict[int, str]) -> IdBook:
        self = cls()
        self._strs = {int(c): s for c, s in strs.items()}
        self._str_index = {s: c for c, s in self._strs.items()}
        self._set_ids(np.asarray(ids, dtype=np.int64))
        return self

    @classmethod
    def of(cls, names: Iterable[str]) -> IdBook:
        self = cls()
        for name in names:
            self.code(name)
        return self

    # ---- inside -------------------------------------------------------------------------
    def _set_ids(self, ids: np.ndarray) -> None:
        self._ids, self._n, self._merged, self._recent = ids.copy(), int(ids.size), 0, {}
        self._keys = self._vals = np.empty(0, dtype=np.int64)
        self._merge()

    def _find(self, nums: np.ndarray) -> np.ndarray:
        """Codes of numeric values in the merged arrays, -1 where absent or not numeric."""
        out = np.full(nums.size, -1, dtype=np.int64)
        _lookup(self._keys, self._vals, nums, out)  # -1 (not numeric) is never a key
        return out

    def _slow(self, name: str, k: int) -> int:
        if k >= 0:
            f = int(self._find(np.array([k], dtype=np.int64))[0])
            if f >= 0:
                self._recent[name] = f
                return f
        c = self._n
        if c >= self._ids.size:
            grown = np.empty(max(64, c + c // 4), dtype=np.int64)
            grown[:c] = self._ids[:c]
            self._ids = grown
        self._ids[c] = k
        self._n = c + 1
        if k >= 0:
            self._recent[name] = c
            if len(self._recent) > max(_MIN_MERGE, self._merged // 32):
                self._merge()
        else:
            self._strs[c] = name
            self._str_index[name] = c
        return c

    def _merge(self) -> None:
        """Move the numeric ids coded since the last merge into the sorted arrays."""
        lo = self._merged
        fresh = self._ids[lo : self._n]
        codes = np.flatnonzero(fresh >= 0) + lo
        if codes.size:
            keys = np.concatenate([self._keys, self._ids[codes]])
            vals = np.concatenate([self._vals, codes])
            order = np.argsort(keys, kind="stable")
            self._keys, self._vals = keys[order], vals[order]
        self._merged = self._n
        self._recent = {}


class IntIndex:
    """int64 keys -> dense codes in order of first sight, all in arrays (no Python objects per
    key): a large sorted array and a small sorted one of recent keys, merged as in IdBook."""

    __slots__ = ("_keys", "_vals", "_fkeys", "_fvals", "n")

    def __init__(self) -> None:
        z = np.empty(0, dtype=np.int64)
        self._keys, self._vals, self._fkeys, self._fvals = z, z, z, z
        self.n = 0

    def __len__(self) -> int:
        return self.n

    def find(self, keys: np.ndarray) -> np.ndarray:
        """Codes of ``keys``, -1 where absent."""
        out = np.full(keys.size, -1, dtype=np.int64)
        _lookup(self._keys, self._vals, keys, out)
        _lookup(self._fkeys, self._fvals, keys, out)
        return out

    def add(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(codes of ``keys``, which were absent); new keys get the next codes in order of
        first sight."""
        codes = self.find(keys)
        new = codes < 0
        if new.any():
            uniq, first, inv = np.unique(keys[new], return_index=True, return_inverse=True)
            order = np.argsort(first, kind="stable")  # first sight order
            rank = np.empty(order.size, dtype=np.int64)
            rank[order] = np.arange(order.size, dtype=np.int64)
            assigned = self.n + rank
            codes[new] = assigned[inv.ravel()]
            pos = np.searchsorted(self._fkeys, uniq)
            self._fkeys = np.insert(self._fkeys, pos, uniq)
            self._fvals = np.insert(self._fvals, pos, assigned)
            self.n += uniq.size
            if self._fkeys.size > max(1 << 14, self._keys.size >> 4):
                self._merge()
        return codes, new

    def keys_by_code(self) -> np.ndarray:
        """The key of every code, in code order."""
        out = np.empty(self.n, dtype=np.int64)
        out[self._vals] = self._keys
        out[self._fvals] = self._fkeys
        return out

    @classmethod
    def of(cls, keys_by_code: np.ndarray) -> IntIndex:
        """An index whose code i is ``keys_by_code[i]`` (distinct keys)."""
        self = cls()
        order = np.argsort(keys_by_code, kind="stable")
        self._keys = np.ascontiguousarray(keys_by_code[order], dtype=np.int64)
        self._vals = order.astype(np.int64)
        self.n = int(keys_by_code.size)
        return self

    def _merge(self) -> None:
        keys = np.concatenate([self._keys, self._fkeys])
        vals = np.concatenate([self._vals, self._fvals])
        order = np.argsort(keys, kind="stable")
        self._keys, self._vals = keys[order], vals[order]
        self._fkeys = self._fvals = np.empty(0, dtype=np.int64)
