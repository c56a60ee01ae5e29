//! The Moab node-status tokenizer of `models/formats/moab.py` (seed 000 §III-A), compiled;
//! the per-line rest of its fast path is in `assemble.rs`, the drain accountant's per-record
//! loops in `drain.rs`.
//!
//!     2014-12-31T00:03:19.696-0600 21166 INFO  Node '27453' status: state='Idle'
//!         rsvlist='1292428,1292433' joblist='none'     (one line)
//!
//! One pass over a chunk of whole lines: each line that has the canonical shape (exactly eight
//! quotes, the constant texts between them, nothing after the last one but one CR, an ASCII
//! head with a blank at byte 28 ending in " Node ") is `ok`, and its six values (the wall-clock
//! second `head[..19]`, the rest of the head `head[19..]`, node, state, rsvlist, joblist) are
//! dictionary-encoded per chunk: codes in first-seen order, each distinct value once (the rest
//! of the head without its three millisecond digits, which are returned as numbers). Every
//! other line is left to the Python line parser (`classify_line`), which is the format's
//! definition: this pass may refuse a line the format allows, never accept one it does not.
//! The values' own checks (timestamp, node, state) stay in Python, once per distinct value.

mod assemble;
mod drain;
mod jobevents;
mod lineproto;
mod samples;

use crate::drain::le_bytes;
use memchr::{memchr, memchr_iter};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};
use rustc_hash::FxHashMap;

const KEYS: usize = 6;
const GAPS: [&[u8]; 3] = [b" status: state=", b" rsvlist=", b" joblist="];

/// Distinct values of one column in first-seen order, with the previous line's value cached
/// (consecutive lines share their second, their node's neighbours, their state).
struct Column<'a> {
    codes: Vec<u32>,
    index: FxHashMap<&'a [u8], u32>,
    values: Vec<&'a [u8]>,
    first: Vec<u32>, // the line each value is first seen on
    last: Option<(&'a [u8], u32)>,
}

impl<'a> Column<'a> {
    fn new(lines: usize) -> Self {
        Column { codes: Vec::with_capacity(lines), index: FxHashMap::default(), values: Vec::new(), first: Vec::new(), last: None }
    }

    #[inline]
    fn code(&mut self, v: &'a [u8], line: u32) -> u32 {
        if let Some((lv, lc)) = self.last {
            if lv == v {
                return lc;
            }
        }
        let n = self.values.len() as u32;
        let c = *self.index.entry(v).or_insert(n);
        if c == n {
            self.values.push(v);
            self.first.push(line);
        }
        self.last = Some((v, c));
        c
    }
}

/// The eight quote positions of a canonical line, or None.
#[inline]
fn quotes(line: &[u8]) -> Option<[usize; 8]> {
    let mut q = [0usize; 8];
    let mut n = 0;
    for i in memchr_iter(b'\'', line) {
        if n == 8 {
            return None;
        }
        q[n] = i;
        n += 1;
    }
    if n == 8 && q[7] == line.len() - 1 {
        Some(q)
    } else {
        None
    }
}

/// The six value slices of a canonical line (the second column is the head after the
/// milliseconds: UTC offset, pid, level) and its milliseconds, or None.
#[inline]
fn fields(line: &[u8]) -> Option<([&[u8]; KEYS], u16)> {
    let q = quotes(line)?;
    let head = &line[..q[0]];
    if head.len() < 29 || head[28] != b' ' || !head.ends_with(b" Node ") || !head.is_ascii() {
        return None;
    }
    let frac = &head[19..23]; // '.696' of 2014-12-31T00:03:19.696-0600
    if frac[0] != b'.' || !frac[1..].iter().all(u8::is_ascii_digit) {
        return None;
    }
    let ms = frac[1..].iter().fold(0u16, |a, d| a * 10 + (d - b'0') as u16);
    for (k, gap) in GAPS.iter().enumerate() {
        if &line[q[2 * k + 1] + 1..q[2 * k + 2]] != *gap {
            return None;
        }
    }
    let vals = [&line[q[0] + 1..q[1]], &line[q[2] + 1..q[3]], &line[q[4] + 1..q[5]], &line[q[6] + 1..q[7]]];
    if !vals.iter().all(|v| v.is_ascii() || std::str::from_utf8(v).is_ok()) {
        return None;
    }
    Some(([&head[..19], &head[23..], vals[0], vals[1], vals[2], vals[3]], ms))
}

struct Tokens<'a> {
    lines: usize,
    ok: Vec<u8>,
    ms: Vec<u16>,
    cols: Vec<Column<'a>>,
}

fn tokenize(data: &[u8]) -> Tokens<'_> {
    let guess = data.len() / 96 + 1;
    let mut t = Tokens {
        lines: 0,
        ok: Vec::with_capacity(guess),
        ms: Vec::with_capacity(guess),
        cols: (0..KEYS).map(|_| Column::new(guess)).collect(),
    };
    let mut start = 0;
    while start < data.len() {
        let end = memchr(b'\n', &data[start..]).map_or(data.len(), |i| start + i);
        let mut line = &data[start..end];
        if line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        match fields(line) {
            Some((vals, ms)) => {
                t.ok.push(1);
                t.ms.push(ms);
                for (col, v) in t.cols.iter_mut().zip(vals) {
                    let c = col.code(v, t.lines as u32);
                    col.codes.push(c);
                }
            }
            None => {
                t.ok.push(0);
                t.ms.push(0);
                for col in t.cols.iter_mut() {
                    col.codes.push(u32::MAX); // the Python side maps it to its null code
                }
            }
        }
        t.lines += 1;
        start = end + 1;
    }
    t
}

/// tokenize_moab(data: bytes or a contiguous byte buffer) -> (lines, ok: bytes, ((codes: bytes of little-endian u32, values:
/// list[str], first line of each value: bytes of little-endian u32) for head second, head after
/// the milliseconds, node, state, rsvlist, joblist), milliseconds: bytes of little-endian u16).
/// A line the pass refuses has ok 0, code 0xFFFFFFFF in every column and milliseconds 0. Codes
/// are numbered in order of first appearance.
#[pyfunction]
fn tokenize_moab<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
    // bytes, or a memoryview of the block read (streams/sources/files.py line_chunks)
    let buf = drain::buffer::<u8>(data, "data", false)?;
    // Safety: the buffer is held (and so the block alive and unchanged) for the whole call.
    let bytes: &[u8] = unsafe { drain::view(&buf) };
    let (lines, ok, ms, cols) = py.allow_threads(|| {
        let t = tokenize(bytes);
        let cols: Vec<(Vec<u8>, Vec<&[u8]>, Vec<u8>)> =
            t.cols.into_iter().map(|c| (le_bytes(&c.codes, u32::to_le_bytes), c.values, le_bytes(&c.first, u32::to_le_bytes))).collect();
        (t.lines, t.ok, le_bytes(&t.ms, u16::to_le_bytes), cols)
    });
    let mut out = Vec::with_capacity(KEYS);
    for (codes, values, first) in cols {
        let strs: Vec<Bound<'py, PyString>> = values
            .iter()
            .map(|v| PyString::new(py, std::str::from_utf8(v).expect("checked in fields()")))
            .collect();
        out.push(PyTuple::new(
            py,
            [PyBytes::new(py, &codes).into_any(), PyList::new(py, strs)?.into_any(), PyBytes::new(py, &first).into_any()],
        )?);
    }
    PyTuple::new(
        py,
        [
            lines.into_pyobject(py)?.into_any(),
            PyBytes::new(py, &ok).into_any(),
            PyTuple::new(py, out)?.into_any(),
            PyBytes::new(py, &ms).into_any(),
        ],
    )
}

#[pymodule]
fn drainwatch_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(tokenize_moab, m)?)?;
    m.add_function(wrap_pyfunction!(drain::drain_intervals, m)?)?;
    m.add_function(wrap_pyfunction!(drain::drain_accrue, m)?)?;
    m.add_function(wrap_pyfunction!(assemble::moab_accept, m)?)?;
    m.add_function(wrap_pyfunction!(assemble::moab_assemble, m)?)?;
    m.add_function(wrap_pyfunction!(samples::sample_lines, m)?)?;
    m.add_function(wrap_pyfunction!(lineproto::lp_lines, m)?)?;
    m.add_function(wrap_pyfunction!(jobevents::jobevent_rows, m)?)?;
    m.add_function(wrap_pyfunction!(lineproto::lp_float, m)?)?;
    m.add_function(wrap_pyfunction!(lineproto::lp_bodies, m)?)?;
    Ok(())
}
