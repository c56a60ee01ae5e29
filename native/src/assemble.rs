//! The per-line rest of the Moab fast path (`models/formats/moab.py`, `parse_moab_chunk`),
//! compiled: after the tokenizer, every check and lookup is per distinct value, and what is
//! left per line is indexing those per-value tables with the line's codes.
//!
//! `moab_accept`: a line is accepted when the tokenizer took it and its second, rest of head,
//! node and state values passed their checks (the tables); counts the accepted lines and their
//! running-job entries. `moab_assemble`: the accepted lines' columns (time in ms, node, state,
//! first reservation, has-job) and their job entries (row, job), from the interned tables.
//! Both are the numpy code's rules, line for line; the Python side allocates the outputs.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::drain::{buffer, view, view_mut};

fn lengths_equal(n: usize, others: &[usize]) -> PyResult<()> {
    if others.iter().any(|&m| m != n) {
        return Err(PyValueError::new_err("line columns of different lengths"));
    }
    Ok(())
}

#[inline]
fn at<T: Copy>(table: &[T], code: u32, what: &'static str) -> Result<T, &'static str> {
    table.get(code as usize).copied().ok_or(what)
}

/// moab_accept(tok_ok, sec, tail, node, state, job (codes: uint32 per line), sec_lut (int64 per
/// value), bad_seconds, tail_ok, node_ok, state_ok (uint8 per value), job_len (int64 per value),
/// out_ok (uint8 per line, written)) -> (accepted lines, their job entries).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn moab_accept<'py>(
    py: Python<'py>,
    tok_ok: &Bound<'py, PyAny>,
    sec: &Bound<'py, PyAny>,
    tail: &Bound<'py, PyAny>,
    node: &Bound<'py, PyAny>,
    state: &Bound<'py, PyAny>,
    job: &Bound<'py, PyAny>,
    sec_lut: &Bound<'py, PyAny>,
    bad_seconds: i64,
    tail_ok: &Bound<'py, PyAny>,
    node_ok: &Bound<'py, PyAny>,
    state_ok: &Bound<'py, PyAny>,
    job_len: &Bound<'py, PyAny>,
    out_ok: &Bound<'py, PyAny>,
) -> PyResult<(usize, usize)> {
    let b_tok = buffer::<u8>(tok_ok, "tok_ok", false)?;
    let (b_sec, b_tail, b_node, b_state, b_job) = (
        buffer::<u32>(sec, "sec", false)?,
        buffer::<u32>(tail, "tail", false)?,
        buffer::<u32>(node, "node", false)?,
        buffer::<u32>(state, "state", false)?,
        buffer::<u32>(job, "job", false)?,
    );
    let b_slut = buffer::<i64>(sec_lut, "sec_lut", false)?;
    let (b_tok_ok, b_nok, b_sok) =
        (buffer::<u8>(tail_ok, "tail_ok", false)?, buffer::<u8>(node_ok, "node_ok", false)?, buffer::<u8>(state_ok, "state_ok", false)?);
    let b_jlen = buffer::<i64>(job_len, "job_len", false)?;
    let b_out = buffer::<u8>(out_ok, "out_ok", true)?;
    // Safety: distinct arrays, alive for the call, written by nobody else meanwhile.
    let (tok, sec, tail, node, state, job) =
        unsafe { (view(&b_tok), view(&b_sec), view(&b_tail), view(&b_node), view(&b_state), view(&b_job)) };
    let (slut, took, nok, sok, jlen) =
        unsafe { (view(&b_slut), view(&b_tok_ok), view(&b_nok), view(&b_sok), view(&b_jlen)) };
    let out = unsafe { view_mut(&b_out) };
    let n = tok.len();
    lengths_equal(n, &[sec.len(), tail.len(), node.len(), state.len(), job.len(), out.len()])?;
    let r = py.allow_threads(|| -> Result<(usize, usize), &'static str> {
        let (mut rows, mut runs) = (0usize, 0usize);
        for i in 0..n {
            let ok = tok[i] != 0
                && at(slut, sec[i], "sec code out of range")? != bad_seconds
                && at(took, tail[i], "tail code out of range")? != 0
                && at(nok, node[i], "node code out of range")? != 0
                && at(sok, state[i], "state code out of range")? != 0;
            out[i] = ok as u8;
            if ok {
                rows += 1;
                let k = at(jlen, job[i], "job code out of range")?;
                if k < 0 {
                    return Err("negative job-list length");
                }
                runs += k as usize;
            }
        }
        Ok((rows, runs))
    });
    r.map_err(PyValueError::new_err)
}

/// moab_assemble(ok (uint8 per line), ms (uint16 per line: the milliseconds of the head), sec,
/// tail, node, state, rsv, job (uint32 codes per line),
/// sec_lut, tail_lut, node_lut, state_lut, rsv_lut, job_len, job_off, job_flat (int64 tables),
/// out_ts, out_node, out_state, out_rsv (int64 per accepted line), out_has_job (uint8 per
/// accepted line), out_run_row, out_run_job (int64 per job entry)): fills the outputs, sized by
/// `moab_accept`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn moab_assemble<'py>(
    py: Python<'py>,
    ok: &Bound<'py, PyAny>,
    ms: &Bound<'py, PyAny>,
    sec: &Bound<'py, PyAny>,
    tail: &Bound<'py, PyAny>,
    node: &Bound<'py, PyAny>,
    state: &Bound<'py, PyAny>,
    rsv: &Bound<'py, PyAny>,
    job: &Bound<'py, PyAny>,
    sec_lut: &Bound<'py, PyAny>,
    tail_lut: &Bound<'py, PyAny>,
    node_lut: &Bound<'py, PyAny>,
    state_lut: &Bound<'py, PyAny>,
    rsv_lut: &Bound<'py, PyAny>,
    job_len: &Bound<'py, PyAny>,
    job_off: &Bound<'py, PyAny>,
    job_flat: &Bound<'py, PyAny>,
    out_ts: &Bound<'py, PyAny>,
    out_node: &Bound<'py, PyAny>,
    out_state: &Bound<'py, PyAny>,
    out_rsv: &Bound<'py, PyAny>,
    out_has_job: &Bound<'py, PyAny>,
    out_run_row: &Bound<'py, PyAny>,
    out_run_job: &Bound<'py, PyAny>,
) -> PyResult<()> {
    let b_ok = buffer::<u8>(ok, "ok", false)?;
    let b_ms = buffer::<u16>(ms, "ms", false)?;
    let codes = [
        buffer::<u32>(sec, "sec", false)?,
        buffer::<u32>(tail, "tail", false)?,
        buffer::<u32>(node, "node", false)?,
        buffer::<u32>(state, "state", false)?,
        buffer::<u32>(rsv, "rsv", false)?,
        buffer::<u32>(job, "job", false)?,
    ];
    let tables = [
        buffer::<i64>(sec_lut, "sec_lut", false)?,
        buffer::<i64>(tail_lut, "tail_lut", false)?,
        buffer::<i64>(node_lut, "node_lut", false)?,
        buffer::<i64>(state_lut, "state_lut", false)?,
        buffer::<i64>(rsv_lut, "rsv_lut", false)?,
        buffer::<i64>(job_len, "job_len", false)?,
        buffer::<i64>(job_off, "job_off", false)?,
        buffer::<i64>(job_flat, "job_flat", false)?,
    ];
    let outs = [
        buffer::<i64>(out_ts, "out_ts", true)?,
        buffer::<i64>(out_node, "out_node", true)?,
        buffer::<i64>(out_state, "out_state", true)?,
        buffer::<i64>(out_rsv, "out_rsv", true)?,
        buffer::<i64>(out_run_row, "out_run_row", true)?,
        buffer::<i64>(out_run_job, "out_run_job", true)?,
    ];
    let b_has = buffer::<u8>(out_has_job, "out_has_job", true)?;
    // Safety: distinct arrays, alive for the call, written by nobody else meanwhile.
    let (ok, ms) = unsafe { (view(&b_ok), view(&b_ms)) };
    let [c_sec, c_tail, c_node, c_state, c_rsv, c_job] = unsafe { codes.each_ref().map(|b| view(b)) };
    let [sl, tl, nl, stl, rl, jlen, joff, jflat] = unsafe { tables.each_ref().map(|b| view(b)) };
    let [o_ts, o_node, o_state, o_rsv, o_rrow, o_rjob] = unsafe { outs.each_ref().map(|b| view_mut(b)) };
    let o_has = unsafe { view_mut(&b_has) };
    let n = ok.len();
    lengths_equal(n, &[ms.len(), c_sec.len(), c_tail.len(), c_node.len(), c_state.len(), c_rsv.len(), c_job.len()])?;
    let rows = o_ts.len();
    lengths_equal(rows, &[o_node.len(), o_state.len(), o_rsv.len(), o_has.len()])?;
    lengths_equal(o_rrow.len(), &[o_rjob.len()])?;
    let runs = o_rrow.len();
    let r = py.allow_threads(|| -> Result<(), &'static str> {
        let (mut r, mut e) = (0usize, 0usize);
        for i in 0..n {
            if ok[i] == 0 {
                continue;
            }
            if r == rows {
                return Err("more accepted lines than out_ts holds");
            }
            o_ts[r] = at(sl, c_sec[i], "sec code out of range")? * 1000
                + ms[i] as i64
                + at(tl, c_tail[i], "tail code out of range")?;
            o_node[r] = at(nl, c_node[i], "node code out of range")?;
            o_state[r] = at(stl, c_state[i], "state code out of range")?;
            o_rsv[r] = at(rl, c_rsv[i], "rsv code out of range")?;
            let j = c_job[i];
            let k = at(jlen, j, "job code out of range")?;
            o_has[r] = (k > 0) as u8;
            if k > 0 {
                let start = at(joff, j, "job code out of range")?;
                if start < 0 || k < 0 || (start + k) as usize > jflat.len() || e + k as usize > runs {
                    return Err("job entries out of range");
                }
                for x in 0..k as usize {
                    o_rrow[e] = r as i64;
                    o_rjob[e] = jflat[start as usize + x];
                    e += 1;
                }
            }
            r += 1;
        }
        if r != rows || e != runs {
            return Err("fewer accepted lines or job entries than the outputs hold");
        }
        Ok(())
    });
    r.map_err(PyValueError::new_err)
}
