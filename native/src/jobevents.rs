//! The live worker's first stage for job events (`streams/jobagents.py`, `_records`),
//! compiled for the common line: a flat JSON object whose values are plain (strings without
//! escapes, numbers, true/false/null, the node list an array of such strings) and pass
//! `models/records/jobevent.py`'s `_plain_row` checks, written straight out as the row that
//! `orjson.dumps(jobevent_row(...))` would give (the same values once read back). Every
//! other line (bad JSON, a blank line, an escape, an ISO time, a value out of range, a time
//! outside the plausible bounds) is None: Python's path decides it, with its reason. This code
//! may leave a good line to Python; it never accepts a line Python would refuse.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

const TYPES: [&[u8]; 3] = [b"submit", b"start", b"end"];
const KEYS: [&[u8]; 16] = [
    b"type", b"ts", b"job", b"user", b"group", b"account", b"partition", b"name", b"nodes",
    b"cores", b"req_walltime", b"node_list", b"state", b"exit_code", b"backfill",
    b"reserved_start",
];

#[derive(Clone, Copy)]
enum Val<'a> {
    Absent,
    Null,
    Str(&'a [u8]), // the token with its quotes: no escapes, no control characters
    Int(i64),
    Float(f64),
    Bool(bool),
    List(usize, usize), // the node list: a range of `strs`
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Parser<'a> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            Some(())
        } else {
            None
        }
    }

    /// A string token (with its quotes) that needs no unescaping.
    fn string(&mut self) -> Option<&'a [u8]> {
        self.ws();
        let start = self.i;
        if self.s.get(self.i) != Some(&b'"') {
            return None;
        }
        self.i += 1;
        loop {
            let c = *self.s.get(self.i)?;
            self.i += 1;
            match c {
                b'"' => return Some(&self.s[start..self.i]),
                b'\\' => return None,
                0..=0x1f => return None,
                _ => {}
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        if self.s[self.i..].starts_with(word) {
            self.i += word.len();
            Some(())
        } else {
            None
        }
    }

    /// A JSON number: an integer within int64 as Int, else a finite float (an integer
    /// beyond int64 is left to Python: orjson reads it as an int up to 2^64).
    fn number(&mut self) -> Option<Val<'a>> {
        let start = self.i;
        let s = self.s;
        let mut i = self.i;
        if s.get(i) == Some(&b'-') {
            i += 1;
        }
        match s.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => i = digits(s, i)?,
            _ => return None,
        }
        let mut int = true;
        if s.get(i) == Some(&b'.') {
            int = false;
            i = digits(s, i + 1)?;
        }
        if matches!(s.get(i), Some(b'e' | b'E')) {
            int = false;
            i += 1;
            if matches!(s.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            i = digits(s, i)?;
        }
        self.i = i;
        let text = std::str::from_utf8(&s[start..i]).ok()?;
        if int {
            return text.parse::<i64>().ok().map(Val::Int);
        }
        let f = text.parse::<f64>().ok()?;
        if !f.is_finite() {
            return None;
        }
        Some(Val::Float(f))
    }

    /// A value: plain ones; a node list (an array of strings) into `strs`; anything else None.
    fn value(&mut self, strs: &mut Vec<&'a [u8]>) -> Option<Val<'a>> {
        self.ws();
        match *self.s.get(self.i)? {
            b'"' => self.string().map(Val::Str),
            b'n' => self.literal(b"null").map(|_| Val::Null),
            b't' => self.literal(b"true").map(|_| Val::Bool(true)),
            b'f' => self.literal(b"false").map(|_| Val::Bool(false)),
            b'[' => {
                self.i += 1;
                let first = strs.len();
                self.ws();
                if self.s.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Some(Val::List(first, first));
                }
                loop {
                    strs.push(self.string()?);
                    self.ws();
                    match *self.s.get(self.i)? {
                        b',' => self.i += 1,
                        b']' => {
                            self.i += 1;
                            return Some(Val::List(first, strs.len()));
                        }
                        _ => return None,
                    }
                }
            }
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }
}

/// The end of the run of digits at `i`; None when there is none (JSON wants one at least).
fn digits(s: &[u8], mut i: usize) -> Option<usize> {
    let d = i;
    while matches!(s.get(i), Some(b'0'..=b'9')) {
        i += 1;
    }
    (i > d).then_some(i)
}

/// The line's fields by key (the last of a repeated key, as orjson), or None.
fn parse_line<'a>(line: &'a [u8], strs: &mut Vec<&'a [u8]>) -> Option<[Val<'a>; 16]> {
    std::str::from_utf8(line).ok()?;
    let mut p = Parser { s: line, i: 0 };
    let mut vals = [Val::Absent; 16];
    p.eat(b'{')?;
    p.ws();
    if p.s.get(p.i) == Some(&b'}') {
        p.i += 1;
    } else {
        loop {
            let key = p.string()?;
            p.eat(b':')?;
            let v = p.value(strs)?;
            let name = &key[1..key.len() - 1];
            if let Some(k) = KEYS.iter().position(|k| *k == name) {
                vals[k] = v;
            }
            p.ws();
            match *p.s.get(p.i)? {
                b',' => p.i += 1,
                b'}' => {
                    p.i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    p.ws();
    if p.i != line.len() {
        return None;
    }
    Some(vals)
}

fn push_float(out: &mut Vec<u8>, f: f64) {
    let mut b = ryu::Buffer::new();
    out.extend_from_slice(b.format_finite(f).as_bytes());
}

/// A number as `float(v)` (an int rounded to the nearest double), or None (not a number).
fn as_float(v: Val<'_>) -> Option<f64> {
    match v {
        Val::Int(i) => Some(i as f64),
        Val::Float(f) => Some(f),
        _ => None,
    }
}

/// The row of `_plain_row` as JSON, or None: Python's path decides the line.
fn row(vals: &[Val<'_>; 16], strs: &[&[u8]], not_before: f64, not_after: f64) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(160);
    out.push(b'[');
    // type
    match vals[0] {
        Val::Str(t) if TYPES.iter().any(|x| *x == &t[1..t.len() - 1]) => out.extend_from_slice(t),
        _ => return None,
    }
    out.push(b',');
    let ts = as_float(vals[1])?;
    let ms = ts * 1000.0;
    if !(not_before <= ms && ms < not_after) {
        return None; // implausible_time: Python's reason
    }
    push_float(&mut out, ts);
    out.push(b',');
    match vals[2] {
        Val::Str(j) if j.len() > 2 => out.extend_from_slice(j),
        _ => return None,
    }
    for k in 3..8 {
        out.push(b',');
        match vals[k] {
            Val::Absent | Val::Null => out.extend_from_slice(b"null"),
            Val::Str(s) => out.extend_from_slice(s),
            _ => return None,
        }
    }
    for k in 8..10 {
        out.push(b',');
        match vals[k] {
            Val::Absent | Val::Null => out.extend_from_slice(b"null"),
            Val::Int(i) if i >= 0 => out.extend_from_slice(i.to_string().as_bytes()),
            _ => return None,
        }
    }
    out.push(b',');
    match vals[10] {
        Val::Absent | Val::Null => out.extend_from_slice(b"null"),
        v => {
            let f = as_float(v)?;
            if !(f >= 0.0) {
                return None; // bad_req_walltime
            }
            push_float(&mut out, f);
        }
    }
    out.push(b',');
    match vals[11] {
        Val::Absent | Val::Null => out.extend_from_slice(b"[]"),
        Val::List(a, b) => {
            out.push(b'[');
            let mut first = true;
            for s in &strs[a..b] {
                if s.len() > 2 {
                    if !first {
                        out.push(b',');
                    }
                    out.extend_from_slice(s);
                    first = false;
                }
            }
            out.push(b']');
        }
        _ => return None,
    }
    out.push(b',');
    match vals[12] {
        Val::Absent | Val::Null => out.extend_from_slice(b"null"),
        Val::Str(s) => out.extend_from_slice(s),
        _ => return None,
    }
    out.push(b',');
    match vals[13] {
        Val::Absent | Val::Null => out.extend_from_slice(b"null"),
        Val::Int(i) => out.extend_from_slice(i.to_string().as_bytes()),
        _ => return None,
    }
    out.push(b',');
    match vals[14] {
        Val::Absent | Val::Null => out.extend_from_slice(b"null"),
        Val::Bool(true) => out.extend_from_slice(b"true"),
        Val::Bool(false) => out.extend_from_slice(b"false"),
        _ => return None,
    }
    out.push(b',');
    match vals[15] {
        Val::Absent | Val::Null => out.extend_from_slice(b"null"),
        v => push_float(&mut out, as_float(v)?),
    }
    out.push(b']');
    Some(out)
}

/// The lines of a job-events message, as the worker splits them (`bytes.splitlines()` when
/// the message holds a line feed, else the whole message as one line): for each, the row's
/// JSON (bytes) or None. `not_before_ms` / `not_after_ms`: the plausible bounds of ts x 1000.
#[pyfunction]
pub fn jobevent_rows<'py>(
    py: Python<'py>,
    value: &[u8],
    not_before_ms: f64,
    not_after_ms: f64,
) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    let mut strs: Vec<&[u8]> = Vec::new();
    for (a, b) in line_spans(value) {
        strs.clear();
        let line = &value[a..b];
        match parse_line(line, &mut strs).and_then(|v| row(&v, &strs, not_before_ms, not_after_ms)) {
            Some(bytes) => out.append(PyBytes::new(py, &bytes))?,
            None => out.append(py.None())?,
        }
    }
    Ok(out)
}

/// Where the lines are: `bytes.splitlines()` (\n, \r\n and \r end a line; no empty line
/// after the last ending) when the message holds a line feed, else the whole message.
fn line_spans(value: &[u8]) -> Vec<(usize, usize)> {
    if !value.contains(&b'\n') {
        return vec![(0, value.len())];
    }
    let mut spans = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < value.len() {
        match value[i] {
            b'\n' => {
                spans.push((start, i));
                i += 1;
                start = i;
            }
            b'\r' => {
                spans.push((start, i));
                i += if value.get(i + 1) == Some(&b'\n') { 2 } else { 1 };
                start = i;
            }
            _ => i += 1,
        }
    }
    if start < value.len() {
        spans.push((start, value.len()));
    }
    spans
}
