// Greedy sampling: the index of the largest logit (ties: the smallest index) in two
// dispatches, so a 262,144-entry vocabulary is read by the whole GPU rather than one
// workgroup. STAGE 0: workgroup g reduces the elements i with i / WG % groups == g (a
// grid-stride loop, coalesced) to part[2g] = value bits, part[2g + 1] = index. STAGE 1: one
// workgroup reduces the `groups` partials and writes the index to tokens[out_index] (the
// sequence buffer the next embedding reads) and out[0].
//
// Many rows (`rows` 1: a batch's sampled rows, one per workgroup row of the grid): row r's
// values start at x[r * x_stride], its partials at part[2 * groups * r], and its id goes to
// tokens[table[4 * (rows_first + table[picks + r]) + 2] + 1] — the token after the row's own,
// named by the batch's row table (position, page-table base, token index, 0 per row) and its
// list of sampled rows at word `picks`. Two dispatches for every sampled row instead of two
// each (at 64 rows they were 7% of the Llama-1B shape's step, docs/performance.md v28).

struct Params {
    n: u32,
    groups: u32,
    out_index: u32,
    x_stride: u32,
    rows: u32,
    rows_first: u32,
    picks: u32,
    _pad: u32,
}

override WG: u32 = 256u;
override STAGE: u32 = 0u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> part: array<u32>;
@group(0) @binding(3) var<storage, read_write> tokens: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;
// The row table (`rows` 1); bound to x, and unread, otherwise.
@group(0) @binding(5) var<storage, read> table: array<u32>;

var<workgroup> best_v: array<f32, 1024>;
var<workgroup> best_i: array<u32, 1024>;

fn better(v: f32, i: u32, bv: f32, bi: u32) -> bool {
    return v > bv || (v == bv && i < bi);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    var v = -3.4e38;
    var idx = 0xFFFFFFFFu;
    let row = wg.y;
    let xb = row * p.x_stride;
    let pb = 2u * p.groups * row;
    if STAGE == 0u {
        for (var i = wg.x * WG + lid; i < p.n; i += p.groups * WG) {
            let e = x[xb + i];
            if better(e, i, v, idx) {
                v = e;
                idx = i;
            }
        }
    } else {
        for (var g = lid; g < p.groups; g += WG) {
            let e = bitcast<f32>(part[pb + 2u * g]);
            let i = part[pb + 2u * g + 1u];
            if better(e, i, v, idx) {
                v = e;
                idx = i;
            }
        }
    }
    best_v[lid] = v;
    best_i[lid] = idx;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if lid < s && better(best_v[lid + s], best_i[lid + s], best_v[lid], best_i[lid]) {
            best_v[lid] = best_v[lid + s];
            best_i[lid] = best_i[lid + s];
        }
        workgroupBarrier();
    }
    if lid == 0u {
        if STAGE == 0u {
            part[pb + 2u * wg.x] = bitcast<u32>(best_v[0]);
            part[pb + 2u * wg.x + 1u] = best_i[0];
        } else if p.rows == 1u {
            tokens[table[4u * (p.rows_first + table[p.picks + row]) + 2u] + 1u] = best_i[0];
        } else {
            tokens[p.out_index] = best_i[0];
            out[0] = best_i[0];
            out[1] = 1u;
        }
    }
}
