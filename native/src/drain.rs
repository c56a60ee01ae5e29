//! The per-record loops of `models/drain/accountant.py` (seed 000 §III), compiled.
//!
//! `drain_intervals`: a batch of node-status records in arrival order against each node's latest
//! accepted record -> the intervals they close (a record is accepted when it is later than
//! every earlier record of its node; equal: a duplicate, earlier: out of order).
//! `drain_accrue`: those intervals split at the finest window edges and summed per node and
//! category, per window and category, per job (drain: Idle with a reservation), with the nodes
//! new to each window. Both are the numpy code's rules, record for record: sums are exact
//! integers, so the order of the work does not change a result. The accountant keeps its state
//! in numpy arrays, which these functions read and update in place.

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use rustc_hash::FxHashMap;

const N_COMBOS: i64 = 4;

pub(crate) fn buffer<T: pyo3::buffer::Element>(obj: &Bound<'_, PyAny>, what: &str, write: bool) -> PyResult<PyBuffer<T>> {
    let b = PyBuffer::<T>::get(obj)?;
    if !b.is_c_contiguous() {
        return Err(PyValueError::new_err(format!("{what}: not a contiguous array")));
    }
    if write && b.readonly() {
        return Err(PyValueError::new_err(format!("{what}: read-only array")));
    }
    Ok(b)
}

/// The buffer's items. Safety: the buffer outlives the slice and nothing else writes to it
/// meanwhile (the accountant's own arrays, during one call).
pub(crate) unsafe fn view<T: pyo3::buffer::Element>(b: &PyBuffer<T>) -> &[T] {
    let n = b.item_count();
    if n == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(b.buf_ptr() as *const T, n)
    }
}

/// As `view`, writable; the arrays passed are distinct objects.
#[allow(clippy::mut_from_ref)]
pub(crate) unsafe fn view_mut<T: pyo3::buffer::Element>(b: &PyBuffer<T>) -> &mut [T] {
    let n = b.item_count();
    if n == 0 {
        &mut []
    } else {
        std::slice::from_raw_parts_mut(b.buf_ptr() as *mut T, n)
    }
}

/// The values as little-endian bytes (`to_le`: the type's `to_le_bytes`), as numpy's
/// `frombuffer` reads them back.
pub(crate) fn le_bytes<T: Copy, const N: usize>(v: &[T], to_le: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * N);
    for &x in v {
        out.extend_from_slice(&to_le(x));
    }
    out
}

fn check_index(v: &[i64], len: usize, what: &str) -> PyResult<()> {
    if v.iter().any(|&x| x < 0 || x as usize >= len) {
        return Err(PyValueError::new_err(format!("{what}: code out of range")));
    }
    Ok(())
}

/// drain_intervals(node, ts, state, rsv, has_job (uint8), last_ts, last_state, last_rsv,
/// last_combo, none_ts, no_job, out) -> (duplicates, out_of_order, accepted, m): the first m
/// columns of ``out`` (an int64 array of 6 rows, at least as long as the batch) are the
/// intervals closed: node, start, end, state, combo, rsv. Updates the four per-node arrays.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn drain_intervals<'py>(
    py: Python<'py>,
    node: &Bound<'py, PyAny>,
    ts: &Bound<'py, PyAny>,
    state: &Bound<'py, PyAny>,
    rsv: &Bound<'py, PyAny>,
    has_job: &Bound<'py, PyAny>,
    last_ts: &Bound<'py, PyAny>,
    last_state: &Bound<'py, PyAny>,
    last_rsv: &Bound<'py, PyAny>,
    last_combo: &Bound<'py, PyAny>,
    none_ts: i64,
    no_job: i64,
    out: &Bound<'py, PyAny>,
) -> PyResult<(i64, i64, i64, usize)> {
    let (b_node, b_ts, b_state, b_rsv) = (
        buffer::<i64>(node, "node", false)?,
        buffer::<i64>(ts, "ts", false)?,
        buffer::<i64>(state, "state", false)?,
        buffer::<i64>(rsv, "rsv", false)?,
    );
    let b_job = buffer::<u8>(has_job, "has_job", false)?;
    let (l_ts, l_state, l_rsv, l_combo) = (
        buffer::<i64>(last_ts, "last_ts", true)?,
        buffer::<i64>(last_state, "last_state", true)?,
        buffer::<i64>(last_rsv, "last_rsv", true)?,
        buffer::<i64>(last_combo, "last_combo", true)?,
    );
    let b_out = buffer::<i64>(out, "out", true)?;
    // Safety: distinct arrays, alive for the call, written by nobody else meanwhile.
    let (node, ts, state, rsv, job) = unsafe { (view(&b_node), view(&b_ts), view(&b_state), view(&b_rsv), view(&b_job)) };
    let (lts, lst, lrs, lco) = unsafe { (view_mut(&l_ts), view_mut(&l_state), view_mut(&l_rsv), view_mut(&l_combo)) };
    let out = unsafe { view_mut(&b_out) };
    let n = node.len();
    if [ts.len(), state.len(), rsv.len(), job.len()].iter().any(|&m| m != n) {
        return Err(PyValueError::new_err("batch columns of different lengths"));
    }
    let shape = b_out.shape();
    if shape.len() != 2 || shape[0] != 6 || shape[1] < n {
        return Err(PyValueError::new_err("out: not 6 rows as long as the batch"));
    }
    let cap = shape[1];
    let nn = [lts.len(), lst.len(), lrs.len(), lco.len()].into_iter().min().unwrap_or(0);
    check_index(node, nn, "node")?;
    Ok(py.allow_threads(|| {
        let (mut dups, mut ooo, mut acc, mut m) = (0i64, 0i64, 0i64, 0usize);
        let (o_node, rest) = out.split_at_mut(cap);
        let (o_s, rest) = rest.split_at_mut(cap);
        let (o_e, rest) = rest.split_at_mut(cap);
        let (o_state, rest) = rest.split_at_mut(cap);
        let (o_combo, o_rsv) = rest.split_at_mut(cap);
        for i in 0..n {
            let k = node[i] as usize;
            let (t, p) = (ts[i], lts[k]);
            if t <= p {
                if t == p {
                    dups += 1;
                } else {
                    ooo += 1;
                }
                continue;
            }
            acc += 1;
            if p != none_ts {
                o_node[m] = node[i];
                o_s[m] = p;
                o_e[m] = t;
                o_state[m] = lst[k];
                o_combo[m] = lco[k];
                o_rsv[m] = lrs[k];
                m += 1;
            }
            lts[k] = t;
            lst[k] = state[i];
            lrs[k] = rsv[i];
            lco[k] = (rsv[i] != no_job) as i64 * 2 + (job[i] != 0) as i64;
        }
        (dups, ooo, acc, m)
    }))
}

/// Index of the window holding `t`: the last edge <= t (edges cover it).
#[inline]
fn locate(edges: &[i64], t: i64) -> usize {
    edges.partition_point(|&x| x <= t) - 1
}

/// As `locate`, trying the window found last first (records of one iteration share it).
#[inline]
fn locate_near(edges: &[i64], t: i64, hint: &mut usize) -> usize {
    let h = *hint;
    if h + 1 < edges.len() && edges[h] <= t && t < edges[h + 1] {
        return h;
    }
    *hint = locate(edges, t);
    *hint
}

/// Nodes new to each window of a grid (per node, windows only move forward in time).
struct Fresh<'a> {
    edges: &'a [i64],
    last: &'a mut [i64],
    counts: FxHashMap<i64, i64>,
}

impl Fresh<'_> {
    #[inline]
    fn see(&mut self, node: usize, w: usize) {
        let edge = self.edges[w];
        if self.last[node] != edge {
            *self.counts.entry(edge).or_insert(0) += 1;
            if edge > self.last[node] {
                self.last[node] = edge;
            }
        }
    }

    fn pairs(&self) -> Vec<i64> {
        let mut keys: Vec<_> = self.counts.iter().map(|(&k, &v)| (k, v)).collect();
        keys.sort_unstable();
        keys.into_iter().flat_map(|(k, v)| [k, v]).collect()
    }
}

struct Accrued {
    gaps: i64,
    w0: i64,
    nw: i64,
    sums: Vec<i64>,
    fine: Vec<i64>,
    hour: Vec<i64>,
    day: Vec<i64>,
    pair_job: Vec<i64>,
    pair_node: Vec<i64>,
}

/// drain_accrue(node, start, end, state, combo, rsv, max_gap_ms, idle, no_job, fine_edges,
/// hour_edges (empty: the fine grid is hours), day_edges, node_ms (nodes x width), node_gap_ms,
/// last_fine, last_hour, last_day, job_drain_ms, job_first_ms, job_last_ms) -> (gaps, w0, nw,
/// sums (nw x (width + 1): the categories, then unaccounted), nodes new per fine / hour / day
/// window ((edge, count) pairs), drain (job, node) pairs), int64 arrays as little-endian bytes.
/// Category = state * 4 + combo; an interval longer than max_gap_ms is unaccounted. Updates the
/// per-node and per-job arrays.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn drain_accrue<'py>(
    py: Python<'py>,
    node: &Bound<'py, PyAny>,
    start: &Bound<'py, PyAny>,
    end: &Bound<'py, PyAny>,
    state: &Bound<'py, PyAny>,
    combo: &Bound<'py, PyAny>,
    rsv: &Bound<'py, PyAny>,
    max_gap_ms: i64,
    idle: i64,
    no_job: i64,
    fine_edges: &Bound<'py, PyAny>,
    hour_edges: &Bound<'py, PyAny>,
    day_edges: &Bound<'py, PyAny>,
    node_ms: &Bound<'py, PyAny>,
    node_gap_ms: &Bound<'py, PyAny>,
    last_fine: &Bound<'py, PyAny>,
    last_hour: &Bound<'py, PyAny>,
    last_day: &Bound<'py, PyAny>,
    job_drain_ms: &Bound<'py, PyAny>,
    job_first_ms: &Bound<'py, PyAny>,
    job_last_ms: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let ins = [(node, "node"), (start, "start"), (end, "end"), (state, "state"), (combo, "combo"), (rsv, "rsv")]
        .map(|(o, w)| buffer::<i64>(o, w, false));
    let [b_node, b_s, b_e, b_state, b_combo, b_rsv] = ins;
    let (b_node, b_s, b_e, b_state, b_combo, b_rsv) = (b_node?, b_s?, b_e?, b_state?, b_combo?, b_rsv?);
    let (b_fe, b_he, b_de) = (
        buffer::<i64>(fine_edges, "fine_edges", false)?,
        buffer::<i64>(hour_edges, "hour_edges", false)?,
        buffer::<i64>(day_edges, "day_edges", false)?,
    );
    let b_nms = buffer::<i64>(node_ms, "node_ms", true)?;
    let shape = b_nms.shape();
    if shape.len() != 2 {
        return Err(PyValueError::new_err("node_ms: not a 2-d array"));
    }
    let (nn, width) = (shape[0], shape[1]);
    let outs = [
        (node_gap_ms, "node_gap_ms"),
        (last_fine, "last_fine"),
        (last_hour, "last_hour"),
        (last_day, "last_day"),
        (job_drain_ms, "job_drain_ms"),
        (job_first_ms, "job_first_ms"),
        (job_last_ms, "job_last_ms"),
    ]
    .map(|(o, w)| buffer::<i64>(o, w, true));
    let [b_gap, b_lf, b_lh, b_ld, b_jd, b_jf, b_jl] = outs;
    let (b_gap, b_lf, b_lh, b_ld, b_jd, b_jf, b_jl) = (b_gap?, b_lf?, b_lh?, b_ld?, b_jd?, b_jf?, b_jl?);
    // Safety: distinct arrays, alive for the call, written by nobody else meanwhile.
    let (node, s, e, state, combo, rsv) =
        unsafe { (view(&b_node), view(&b_s), view(&b_e), view(&b_state), view(&b_combo), view(&b_rsv)) };
    let (fe, he, de) = unsafe { (view(&b_fe), view(&b_he), view(&b_de)) };
    let (nms, gap_ms) = unsafe { (view_mut(&b_nms), view_mut(&b_gap)) };
    let (lf, lh, ld) = unsafe { (view_mut(&b_lf), view_mut(&b_lh), view_mut(&b_ld)) };
    let (jd, jf, jl) = unsafe { (view_mut(&b_jd), view_mut(&b_jf), view_mut(&b_jl)) };
    let n = node.len();
    if [s.len(), e.len(), state.len(), combo.len(), rsv.len()].iter().any(|&m| m != n) {
        return Err(PyValueError::new_err("interval columns of different lengths"));
    }
    // every node and job code must index every per-node and per-job array
    let hours = !he.is_empty();
    let nodes = [nn, gap_ms.len(), lf.len(), ld.len(), if hours { lh.len() } else { nn }].into_iter().min().unwrap_or(0);
    let jobs = [jd.len(), jf.len(), jl.len()].into_iter().min().unwrap_or(0);
    check_index(node, nodes, "node")?;
    if (0..n).any(|i| e[i] <= s[i] || state[i] * N_COMBOS + combo[i] >= width as i64 || state[i] < 0 || combo[i] < 0) {
        return Err(PyValueError::new_err("interval: empty, or category out of range"));
    }
    if (0..n).any(|i| state[i] == idle && rsv[i] != no_job && (rsv[i] < 0 || rsv[i] as usize >= jobs)) {
        return Err(PyValueError::new_err("rsv: code out of range"));
    }
    if n > 0 {
        let (lo, hi) = (s.iter().min().copied().unwrap_or(0), e.iter().max().copied().unwrap_or(0));
        for edges in [fe, de].into_iter().chain((!he.is_empty()).then_some(he)) {
            if edges.is_empty() || edges[0] > lo || *edges.last().unwrap_or(&0) < hi {
                return Err(PyValueError::new_err("window edges do not cover the intervals"));
            }
        }
    }
    let a = py.allow_threads(|| {
        let ncat = width + 1;
        let mut a = Accrued { gaps: 0, w0: 0, nw: 0, sums: Vec::new(), fine: Vec::new(), hour: Vec::new(), day: Vec::new(), pair_job: Vec::new(), pair_node: Vec::new() };
        if n == 0 {
            return a;
        }
        let lo = *s.iter().min().unwrap();
        let hi = *e.iter().max().unwrap();
        let w0 = locate(fe, lo);
        let nw = locate(fe, hi - 1) - w0 + 1;
        let mut sums = vec![0i64; nw * ncat];
        let mut fine = Fresh { edges: fe, last: lf, counts: FxHashMap::default() };
        let mut hour = Fresh { edges: he, last: lh, counts: FxHashMap::default() };
        let mut day = Fresh { edges: de, last: ld, counts: FxHashMap::default() };
        let (mut fine_hint, mut hour_hint, mut day_hint) = (w0, 0usize, 0usize);
        for i in 0..n {
            let k = node[i] as usize;
            let gap = e[i] - s[i] > max_gap_ms;
            a.gaps += gap as i64;
            let cat = if gap { width } else { (state[i] * N_COMBOS + combo[i]) as usize };
            let drains = !gap && state[i] == idle && rsv[i] != no_job;
            let mut cur = s[i];
            let mut w = locate_near(fe, cur, &mut fine_hint);
            loop {
                let nxt = fe[w + 1];
                let piece_end = e[i].min(nxt);
                let len = piece_end - cur;
                if gap {
                    gap_ms[k] += len;
                } else {
                    nms[k * width + cat] += len;
                }
                sums[(w - w0) * ncat + cat] += len;
                fine.see(k, w);
                if hours {
                    hour.see(k, locate_near(he, cur, &mut hour_hint));
                }
                day.see(k, locate_near(de, cur, &mut day_hint));
                if drains {
                    let j = rsv[i] as usize;
                    jd[j] += len;
                    jf[j] = jf[j].min(cur);
                    jl[j] = jl[j].max(piece_end);
                    a.pair_job.push(rsv[i]);
                    a.pair_node.push(node[i]);
                }
                if e[i] <= nxt {
                    break;
                }
                cur = nxt;
                w += 1;
            }
        }
        a.w0 = w0 as i64;
        a.nw = nw as i64;
        a.sums = sums;
        a.fine = fine.pairs();
        a.hour = hour.pairs();
        a.day = day.pairs();
        a
    });
    let arrays = [&a.sums, &a.fine, &a.hour, &a.day, &a.pair_job, &a.pair_node].map(|v| PyBytes::new(py, &le_bytes(v, i64::to_le_bytes)).into_any());
    let head = [a.gaps, a.w0, a.nw].map(|x| x.into_pyobject(py).map(|o| o.into_any()));
    let [g, w0, nw] = head;
    let mut items = vec![g?, w0?, nw?];
    items.extend(arrays);
    PyTuple::new(py, items)
}
