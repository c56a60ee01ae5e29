//! Node-sample trace lines (models/formats/sampletrace.py) to columns, for the live samples
//! path. The pass takes only the common line: a JSON object whose keys are all the trace's
//! own, each once, every value of its own JSON type and in range (sampletrace._plain_fields'
//! rules), strings without escapes, no `fs`, no negative numbers. Anything else (a bad line,
//! or a good one written differently) is left to Python, which decides with its reasons: the
//! pass never accepts a line Python refuses, nor reads a value differently.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};
use rustc_hash::FxHashMap;

use crate::drain::{self, le_bytes};

const MAX_INT: u64 = i64::MAX as u64;
const MAX_CORE_PCT: f64 = 100.0 * 8192.0;
const MAX_CORES: u64 = 8192;
const MAX_MEMORY_KB: u64 = 1 << 40;

// the trace's keys; their kinds below
const KEYS: [&[u8]; 20] = [
    b"ts", b"job", b"pid", b"node", b"command", b"vmPeak", b"vmSize", b"vmRss", b"vmSwap",
    b"syscr", b"syscw", b"read_bytes", b"write_bytes", b"core", b"receive", b"transmit",
    b"start", b"cores", b"class", b"wchar",
];
const TS: usize = 0;
const JOB: usize = 1;
const PID: usize = 2;
const NODE: usize = 3;
const PEAK: usize = 5;
const SIZE: usize = 6;
const RSS: usize = 7;
const SWAP: usize = 8;
const RB: usize = 11;
const WB: usize = 12;
const CORE: usize = 13;
const START: usize = 16;
const CORES: usize = 17;

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Num, // int or float, read as a float
    Int, // a JSON integer
    Str,
}

fn kind(k: usize) -> Kind {
    match k {
        0 | 13 | 16 => Kind::Num,
        1 | 3 | 4 | 18 => Kind::Str,
        _ => Kind::Int,
    }
}

#[derive(Clone, Copy)]
enum Val<'a> {
    None,
    Int(u64),
    Float(f64),
    Str(&'a [u8]),
}

fn key_index(k: &[u8]) -> Option<usize> {
    // by length and first byte first: one comparison for most keys
    let i = match (k.len(), k.first()?) {
        (2, b't') => TS,
        (3, b'j') => JOB,
        (3, b'p') => PID,
        (4, b'n') => NODE,
        (4, b'c') => CORE,
        (5, b'c') if k[4] == b's' => if k[1] == b'o' { CORES } else { 18 },
        (5, b's') if k[1] == b'y' => if k[4] == b'r' { 9 } else { 10 },
        (5, b's') => START,
        (5, b'v') => RSS,
        (5, b'w') => 19,
        (6, b'v') => if k[2] == b'P' { PEAK } else if k[3] == b'i' { SIZE } else { SWAP },
        (7, b'c') => 4,
        (7, b'r') => 14,
        (8, b't') => 15,
        (10, b'r') => RB,
        (11, b'w') => WB,
        _ => return None,
    };
    if KEYS[i] == k {
        Some(i)
    } else {
        None
    }
}

/// The end of the run of ASCII digits starting at `i`.
fn digits(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && s[i].is_ascii_digit() {
        i += 1;
    }
    i
}

struct Scan<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Scan<'a> {
    fn ws(&mut self) {
        while self.i < self.s.len() && (self.s[self.i] == b' ' || self.s[self.i] == b'\t') {
            self.i += 1;
        }
    }
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    /// A string without escapes or control characters, valid UTF-8 (the opening quote taken).
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.i;
        let rest = &self.s[start..];
        let end = memchr::memchr2(b'"', b'\\', rest)?;
        if rest[end] != b'"' {
            return None;
        }
        let v = &rest[..end];
        // printable ASCII needs no more checks; otherwise no control bytes and valid UTF-8
        if !v.iter().all(|&b| (0x20..0x7f).contains(&b))
            && (v.iter().any(|&b| b < 0x20) || std::str::from_utf8(v).is_err())
        {
            return None;
        }
        self.i = start + end + 1;
        Some(v)
    }
    /// A JSON number without a sign: Int when it has no fraction or exponent (and fits i64).
    fn number(&mut self) -> Option<Val<'a>> {
        let s = self.s;
        let start = self.i;
        let mut i = start;
        match s.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => i = digits(s, i),
            _ => return None,
        }
        let int_end = i;
        let mut float = false;
        if s.get(i) == Some(&b'.') {
            let d = digits(s, i + 1);
            if d == i + 1 {
                return None; // a point needs digits after it
            }
            i = d;
            float = true;
        }
        if matches!(s.get(i), Some(b'e') | Some(b'E')) {
            i += 1;
            if matches!(s.get(i), Some(b'+') | Some(b'-')) {
                i += 1;
            }
            let d = digits(s, i);
            if d == i {
                return None;
            }
            i = d;
            float = true;
        }
        self.i = i;
        if float {
            // correctly rounded, as Python's and orjson's readers
            let t = std::str::from_utf8(&s[start..i]).ok()?;
            let v: f64 = t.parse().ok()?;
            return if v.is_finite() { Some(Val::Float(v)) } else { None };
        }
        let mut v: u64 = 0;
        for &b in &s[start..int_end] {
            v = v.checked_mul(10)?.checked_add((b - b'0') as u64)?;
        }
        if v > MAX_INT {
            return None;
        }
        Some(Val::Int(v))
    }
}

/// One line's values by key, or None: Python decides.
fn fields(line: &[u8]) -> Option<[Val<'_>; 20]> {
    let mut vals = [Val::None; 20];
    let mut sc = Scan { s: line, i: 0 };
    sc.ws();
    if sc.peek()? != b'{' {
        return None;
    }
    sc.i += 1;
    sc.ws();
    if sc.peek()? == b'}' {
        return None; // no ts
    }
    loop {
        if sc.peek()? != b'"' {
            return None;
        }
        sc.i += 1;
        let k = key_index(sc.string()?)?;
        if !matches!(vals[k], Val::None) {
            return None; // a key twice: Python decides
        }
        sc.ws();
        if sc.peek()? != b':' {
            return None;
        }
        sc.i += 1;
        sc.ws();
        let v = match sc.peek()? {
            b'"' => {
                sc.i += 1;
                Val::Str(sc.string()?)
            }
            b'0'..=b'9' => sc.number()?,
            _ => return None,
        };
        match (kind(k), v) {
            (Kind::Str, Val::Str(_)) | (Kind::Int, Val::Int(_)) => {}
            (Kind::Num, Val::Int(x)) => vals[k] = Val::Float(x as f64),
            (Kind::Num, Val::Float(_)) => {}
            _ => return None,
        }
        if !matches!(vals[k], Val::Float(_)) {
            vals[k] = v;
        }
        sc.ws();
        match sc.peek()? {
            b',' => {
                sc.i += 1;
                sc.ws();
            }
            b'}' => {
                sc.i += 1;
                break;
            }
            _ => return None,
        }
    }
    sc.ws();
    if sc.i != line.len() {
        return None;
    }
    Some(vals)
}

fn int(v: Val<'_>) -> u64 {
    match v {
        Val::Int(x) => x,
        _ => 0,
    }
}

fn float(v: Val<'_>) -> f64 {
    match v {
        Val::Float(x) => x,
        _ => 0.0,
    }
}

struct Row<'a> {
    ts: f64,
    pid: i64,
    start: f64,
    wb: i64,
    rb: i64,
    core: f64,
    rss: i64,
    swap: i64,
    cores: i64,
    job: &'a [u8],
    node: &'a [u8],
}

fn row(line: &[u8]) -> Option<Row<'_>> {
    let v = fields(line)?;
    let (job, node) = match (v[JOB], v[NODE]) {
        (Val::Str(j), Val::Str(n)) if !j.is_empty() && !n.is_empty() => (j, n),
        _ => return None,
    };
    if matches!(v[TS], Val::None) {
        return None;
    }
    let core = float(v[CORE]);
    let cores = int(v[CORES]);
    let mem = int(v[PEAK]).max(int(v[SIZE])).max(int(v[RSS])).max(int(v[SWAP]));
    if !(core <= MAX_CORE_PCT) || cores > MAX_CORES || mem > MAX_MEMORY_KB {
        return None;
    }
    Some(Row {
        ts: float(v[TS]),
        pid: int(v[PID]) as i64,
        start: float(v[START]),
        wb: int(v[WB]) as i64,
        rb: int(v[RB]) as i64,
        core,
        rss: int(v[RSS]) as i64,
        swap: int(v[SWAP]) as i64,
        cores: cores as i64,
        job,
        node,
    })
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c'))
}

struct Intern<'a> {
    map: FxHashMap<&'a [u8], u32>,
    values: Vec<&'a [u8]>,
}

impl<'a> Intern<'a> {
    fn code(&mut self, v: &'a [u8]) -> u32 {
        if let Some(&c) = self.map.get(v) {
            return c;
        }
        let c = self.values.len() as u32;
        self.map.insert(v, c);
        self.values.push(v);
        c
    }
}

/// sample_lines(data: bytes or a contiguous byte buffer) -> (status: bytes, one per line (0
/// blank, 1 taken, 2 Python decides); bounds: little-endian u64 (start, end) per line; the
/// taken lines' columns: ts, start, core (f64), pid, write_bytes, read_bytes, vmRss, vmSwap,
/// cores (i64), job and node codes (u32), all as little-endian bytes; job values, node values
/// (str, numbered in order of first appearance)). Lines end at b"\n"; a line holding b"\r"
/// is Python's (bytes.splitlines cuts there too).
#[pyfunction]
pub fn sample_lines<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
    let buf = drain::buffer::<u8>(data, "data", false)?;
    // Safety: the buffer is held (and so unchanged) for the whole call.
    let bytes: &[u8] = unsafe { drain::view(&buf) };
    let (status, bounds, f64s, i64s, codes, jobs, nodes) = py.allow_threads(|| {
        let guess = bytes.len() / 160 + 16; // lines are ~250 bytes
        let mut status: Vec<u8> = Vec::with_capacity(guess);
        let mut bounds: Vec<u64> = Vec::with_capacity(2 * guess);
        let mut fl: [Vec<f64>; 3] = std::array::from_fn(|_| Vec::with_capacity(guess));
        let mut it: [Vec<i64>; 6] = std::array::from_fn(|_| Vec::with_capacity(guess));
        let mut jc: Vec<u32> = Vec::with_capacity(guess);
        let mut nc: Vec<u32> = Vec::with_capacity(guess);
        let mut jobs = Intern { map: FxHashMap::default(), values: Vec::new() };
        let mut nodes = Intern { map: FxHashMap::default(), values: Vec::new() };
        let mut pos = 0usize;
        while pos < bytes.len() {
            let end = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |e| pos + e);
            let line = &bytes[pos..end];
            bounds.push(pos as u64);
            bounds.push(end as u64);
            let st = if is_blank(line) {
                0
            } else if memchr::memchr(b'\r', line).is_some() {
                2
            } else if let Some(r) = row(line) {
                fl[0].push(r.ts);
                fl[1].push(r.start);
                fl[2].push(r.core);
                for (col, x) in it.iter_mut().zip([r.pid, r.wb, r.rb, r.rss, r.swap, r.cores]) {
                    col.push(x);
                }
                jc.push(jobs.code(r.job));
                nc.push(nodes.code(r.node));
                1
            } else {
                2
            };
            status.push(st);
            pos = end + 1;
        }
        let f64s: Vec<Vec<u8>> = fl.iter().map(|c| le_bytes(c, f64::to_le_bytes)).collect();
        let i64s: Vec<Vec<u8>> = it.iter().map(|c| le_bytes(c, i64::to_le_bytes)).collect();
        let codes = [le_bytes(&jc, u32::to_le_bytes), le_bytes(&nc, u32::to_le_bytes)];
        (status, le_bytes(&bounds, u64::to_le_bytes), f64s, i64s, codes, jobs.values, nodes.values)
    });
    let strs = |vs: &[&[u8]]| -> PyResult<Bound<'py, PyList>> {
        let s: Vec<Bound<'py, PyString>> =
            vs.iter().map(|v| PyString::new(py, std::str::from_utf8(v).expect("checked"))).collect();
        PyList::new(py, s)
    };
    let mut out: Vec<Bound<'py, PyAny>> = vec![
        PyBytes::new(py, &status).into_any(),
        PyBytes::new(py, &bounds).into_any(),
    ];
    for c in f64s.iter().chain(i64s.iter()).chain(codes.iter()) {
        out.push(PyBytes::new(py, c).into_any());
    }
    out.push(strs(&jobs)?.into_any());
    out.push(strs(&nodes)?.into_any());
    PyTuple::new(py, out)
}
