//! InfluxDB line protocol for a table's rows, compiled: the rules of
//! `streams/sinks/points.py`'s `Measurement.line` (tags and fields in the plan's key order,
//! an empty or None value left out, integers as `<n>i`, floats in Python's `repr` form without
//! a trailing `.0`, NaN and infinities left out, strings quoted and escaped, keys and tag values
//! escaped; the time to the millisecond in nanoseconds, with crc32(job) % 10^6 below it for a
//! per-job measurement). A row with a value this code does not format exactly as Python would
//! (a date, a float tag, a big integer...) comes back as None, for `Measurement.line`.

use pyo3::prelude::*;
use std::fmt::Write;
use pyo3::types::{PyFloat, PyInt, PyList, PyString, PyTuple};

const FLOAT: u8 = 0;
const INT: u8 = 1;
const TEXT: u8 = 2;
const SECONDS_MS: u8 = 3;
const INSTANT_MS: u8 = 4;
const CLUSTER: isize = -1;
const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53: integers up to it are exact as floats

/// A float as Python's `repr` writes it (shortest round-trip digits; positional when the
/// exponent is in [-4, 16), else `d.ddde+XX`), without `repr`'s trailing `.0`.
pub fn float_repr(out: &mut String, x: f64) {
    // ryu: the shortest round-trip digits, the nearest of them to x and a tie to even, as
    // Python's repr chooses them (Rust's own `{:e}` rounds a tie up: 744571527333723.25
    // would be ...723.3 where repr writes ...723.2)
    let mut buf = ryu::Buffer::new();
    let text = buf.format_finite(x);
    // the common case: ryu writes it positionally as repr does (exponent in [-4, 16))
    let b = text.as_bytes();
    let digits_from = if b[0] == b'-' { 1 } else { 0 };
    if !b.contains(&b'e') && !b[digits_from..].starts_with(b"0.0000") {
        out.push_str(text.strip_suffix(".0").unwrap_or(text));
        return;
    }
    let (neg, text) = match text.strip_prefix('-') {
        Some(t) => (true, t),
        None => (false, text),
    };
    let (mant, exp) = match text.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (text, 0),
    };
    // digits d1 d2 ... dn with the value 0.d1d2...dn x 10^point
    let (int_part, frac_part) = mant.split_once('.').unwrap_or((mant, ""));
    let mut digits: String = int_part.chars().chain(frac_part.chars()).collect();
    let mut point = int_part.len() as i32 + exp;
    let lead = digits.len() - digits.trim_start_matches('0').len();
    digits.drain(..lead);
    point -= lead as i32;
    let trimmed = digits.trim_end_matches('0').len();
    digits.truncate(trimmed);
    if neg {
        out.push('-');
    }
    if digits.is_empty() {
        out.push('0');
        return;
    }
    let e = point - 1; // the scientific exponent: d1.d2... x 10^e
    if (-4..16).contains(&e) {
        if e >= 0 {
            let int_len = e as usize + 1;
            if digits.len() <= int_len {
                out.push_str(&digits);
                for _ in digits.len()..int_len {
                    out.push('0');
                }
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        } else {
            out.push_str("0.");
            for _ in 0..(-e - 1) {
                out.push('0');
            }
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if e < 0 { '-' } else { '+' });
        let a = e.unsigned_abs();
        if a < 10 {
            out.push('0');
        }
        out.push_str(&a.to_string());
    }
}

fn escape_key(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            ',' => out.push_str("\\,"),
            ' ' => out.push_str("\\ "),
            '=' => out.push_str("\\="),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            _ => out.push(c),
        }
    }
}

fn escape_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            _ => out.push(c),
        }
    }
    out.push('"');
}

/// A number as Python's `float(v)` gives it: a float (or subclass) as it is, an integer
/// (or anything with `__index__` within int64) rounded to the nearest double.
fn as_float(v: &Bound<'_, PyAny>) -> Option<f64> {
    if let Ok(f) = v.downcast::<PyFloat>() {
        return Some(f.value());
    }
    v.extract::<i64>().ok().map(|i| i as f64)
}

/// An integer as `int(v)`, for a value that is not a float (an int, bool, numpy integer).
fn as_int(v: &Bound<'_, PyAny>) -> Option<i64> {
    if v.downcast::<PyFloat>().is_ok() {
        return None;
    }
    v.extract::<i64>().ok()
}

/// A tag value's or job id's text as `str(v)`: a str, or an exact int.
fn as_text(v: &Bound<'_, PyAny>, buf: &mut String) -> Option<()> {
    if let Ok(s) = v.downcast::<PyString>() {
        buf.push_str(s.to_str().ok()?);
        return Some(());
    }
    if v.is_exact_instance_of::<PyInt>() {
        let _ = write!(buf, "{}", v.extract::<i64>().ok()?);
        return Some(());
    }
    None
}

#[allow(clippy::too_many_arguments)]
fn one_line(
    out: &mut String,
    prefix: &str,
    tags: &[(String, isize)],
    fields: &[(String, usize, u8)],
    cluster: &str,
    row: &Bound<'_, PyTuple>,
    ts: Option<f64>,
    time_col: isize,
    time_div: f64,
    job_col: isize,
) -> Option<bool> {
    let mut text = String::new();
    out.push_str(prefix);
    for (k, col) in tags {
        text.clear();
        if *col == CLUSTER {
            text.push_str(cluster);
        } else {
            let v = row.get_item(*col as usize).ok()?;
            if v.is_none() {
                continue;
            }
            as_text(&v, &mut text)?;
        }
        if text.is_empty() {
            continue;
        }
        let start = out.len();
        out.push_str(k);
        let vstart = out.len();
        escape_key(out, &text);
        if out.len() == vstart {
            out.truncate(start);
        } else if out.ends_with('\\') {
            out.push(' ');
        }
    }
    out.push(' ');
    let mut any = false;
    for (k, col, kind) in fields {
        let v = row.get_item(*col).ok()?;
        if v.is_none() {
            continue;
        }
        let x = match *kind {
            INT => {
                if any {
                    out.push(',');
                }
                out.push_str(k);
                let _ = write!(out, "{}", as_int(&v)?);
                out.push('i');
                any = true;
                continue;
            }
            TEXT => {
                if any {
                    out.push(',');
                }
                out.push_str(k);
                escape_string(out, v.downcast::<PyString>().ok()?.to_str().ok()?);
                any = true;
                continue;
            }
            FLOAT => as_float(&v)?,
            SECONDS_MS => {
                let i = match v.downcast::<PyFloat>() {
                    Ok(f) => f.value().trunc(),
                    Err(_) => v.extract::<i64>().ok()? as f64,
                };
                if !(i.abs() <= EXACT) {
                    return None; // beyond 2^53 (or not finite): int(v) / 1000 is Python's
                }
                i / 1000.0
            }
            INSTANT_MS => as_float(&v)? / 1000.0,
            _ => return None,
        };
        if !x.is_finite() {
            continue;
        }
        if any {
            out.push(',');
        }
        out.push_str(k);
        float_repr(out, x);
        any = true;
    }
    if !any {
        return Some(false); // no fields: no point ('' for the caller)
    }
    let t = match ts {
        Some(t) => t,
        None => {
            let v = as_float(&row.get_item(usize::try_from(time_col).ok()?).ok()?)?;
            if time_div == 1.0 {
                v
            } else {
                v / time_div
            }
        }
    };
    let ms = (t * 1000.0).round_ties_even();
    if !(ms.abs() < 9.2e12) {
        return None; // not finite, or its nanoseconds beyond int64: Python's own error
    }
    let mut ns = ms as i64 * 1_000_000;
    if job_col >= 0 {
        text.clear();
        as_text(&row.get_item(job_col as usize).ok()?, &mut text)?;
        ns += (crc32fast::hash(text.as_bytes()) % 1_000_000) as i64;
    }
    out.push(' ');
    let _ = write!(out, "{}", ns);
    Some(true)
}

/// Each row (a tuple) as one line of line protocol; '' for a row without fields; None where
/// the row holds a value this code leaves to Python. `tags`: (",key=", column; -1: the
/// cluster) in key order; `fields`: ("key=", column, kind) in key order; `times`: each row's
/// time (POSIX seconds), else column `time_col` divided by `time_div`; `job_col` >= 0: a
/// per-job measurement's job id column; a row of another `width` is None.
#[pyfunction]
#[pyo3(signature = (prefix, tags, fields, cluster, rows, times, time_col, time_div, job_col, width))]
#[allow(clippy::too_many_arguments)]
pub fn lp_lines<'py>(
    py: Python<'py>,
    prefix: &str,
    tags: Vec<(String, isize)>,
    fields: Vec<(String, usize, u8)>,
    cluster: &str,
    rows: &Bound<'py, PyList>,
    times: Option<Vec<f64>>,
    time_col: isize,
    time_div: f64,
    job_col: isize,
    width: usize,
) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    let mut line = String::with_capacity(256);
    for (i, row) in rows.iter().enumerate() {
        line.clear();
        let ts = times.as_ref().map(|t| t[i]);
        let tuple = match row.downcast::<PyTuple>() {
            Ok(t) => Some(t.clone()),
            Err(_) => row.downcast::<PyList>().ok().map(|l| l.to_tuple()),
        };
        let done = tuple.filter(|t| t.len() == width).and_then(|t| {
            one_line(&mut line, prefix, &tags, &fields, cluster, &t, ts, time_col, time_div,
                     job_col)
        });
        match done {
            Some(true) => out.append(PyString::new(py, &line))?,
            Some(false) => out.append("")?, // no fields
            None => out.append(py.None())?,
        }
    }
    Ok(out)
}

/// `repr(x)` without a trailing `.0` (for the tests: the float rule alone).
#[pyfunction]
pub fn lp_float(x: f64) -> String {
    let mut s = String::new();
    float_repr(&mut s, x);
    s
}

/// zlib's crc32 of a line's series text, the bytes before its first space: the same series,
/// the same writer (`streams/sinks/influx.py`'s Python path takes the same function).
fn series_hash(line: &[u8]) -> u64 {
    let end = line.iter().position(|&b| b == b' ').unwrap_or(line.len());
    u64::from(crc32fast::hash(&line[..end]))
}

/// The request bodies of ``points`` (lines of line protocol; '' and None left out): per
/// writer (the series' crc32 modulo ``writers``), bodies of at most ``batch`` lines
/// joined by newlines, in the points' order. `InfluxSink.write` without a Python step per
/// line (the write queue's thread held the worker's lock ~0.37 us a point doing it).
#[pyfunction]
pub fn lp_bodies<'py>(
    py: Python<'py>,
    points: &Bound<'py, PyList>,
    writers: usize,
    batch: usize,
) -> PyResult<Bound<'py, PyList>> {
    let writers = writers.max(1);
    let batch = batch.max(1);
    let mut bodies: Vec<Vec<Vec<u8>>> = vec![Vec::new(); writers];
    let mut cur: Vec<Vec<u8>> = vec![Vec::new(); writers];
    let mut count: Vec<usize> = vec![0; writers];
    for item in points.iter() {
        let Ok(s) = item.downcast::<PyString>() else { continue }; // None: left out
        let line = s.to_str()?.as_bytes();
        if line.is_empty() {
            continue;
        }
        let w = if writers == 1 { 0 } else { (series_hash(line) % writers as u64) as usize };
        let body = &mut cur[w];
        if count[w] > 0 {
            body.push(b'\n');
        }
        body.extend_from_slice(line);
        count[w] += 1;
        if count[w] == batch {
            bodies[w].push(std::mem::take(body));
            count[w] = 0;
        }
    }
    let out = PyList::empty(py);
    for (w, mut done) in bodies.into_iter().enumerate() {
        if count[w] > 0 {
            done.push(std::mem::take(&mut cur[w]));
        }
        let part = PyList::empty(py);
        for b in done {
            part.append(pyo3::types::PyBytes::new(py, &b))?;
        }
        out.append(part)?;
    }
    Ok(out)
}
