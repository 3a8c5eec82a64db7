// Prefill, second pass: causal attention of a batch of prepared queries (attn_prep.wgsl)
// against the KV cache, flash-style. Workgroup (h, t) takes query head h of batch token t at
// position pos = n_keys - tokens + t (or its row's own position and sequence: attn_rows.wgsl;
// a batch may mix sequences, each row attending to its own) and walks its keys [first, pos] (first = pos + 1 - window
// with a sliding window) in blocks of KB, keeping a running max m, exp-sum l and
// exp-weighted value sum o: each block rescales them by exp(m_old - m_new) and adds its own,
// so no per-block partials leave the workgroup. GQA: head h reads KV head h / (heads /
// kv_heads). Scores are scaled and optionally soft-capped as in decode attention.
//
// Split (p.split_keys > 0, batched decode's few rows: a workgroup per (head, row) walking every
// key left the GPU mostly idle): workgroup (h, t, z) takes keys [z * split_keys, (z + 1) *
// split_keys) of its row's range and writes its running (o, m, l) unnormalized to `out` as
// the partials attn_combine.wgsl adds up ([tokens, heads, blocks] partials of head_dim + 4
// floats, `blocks` splits per row: the combine's heads are the (row, head) pairs). A split past
// the row's position writes m = -3e38, l = 0, o = 0, which the combine weighs as zero.
//
// Each block's keys are consecutive rows of one page of the paged caches (attn_pages.wgsl).
// Per block: LPK = WG / KB lanes per key share the key row's vec4 loads against q in
// workgroup memory; values are summed by (vec4 column, key group) threads, as in
// attn_decode.wgsl. Output [tokens, heads * head_dim].

//!include attn_causal_io.wgsl

override WG: u32 = 128u;
override KB: u32 = 32u;
override LPK: u32 = WG / KB;

// The batch's rows (attn_rows.wgsl).
@group(0) @binding(6) var<storage, read> rows: array<u32>;

var<workgroup> qs: array<vec4<f32>, 64>;
var<workgroup> weights: array<f32, 256>;
var<workgroup> osum: array<vec4<f32>, 256>;

//!include wgreduce
//!include attn_pages.wgsl
//!include attn_rows.wgsl
//!include attn_score.wgsl

@compute @workgroup_size(WG)
fn main(l: Lanes) {
    let h = l.wg.x;
    let t = l.wg.y;
    let at = batch_row(t);
    let pos = at.x;
    var first = 0u;
    if p.window > 0u && pos + 1u > p.window {
        first = pos + 1u - p.window;
    }
    // The keys [lo, hi] of this workgroup (empty when lo > hi).
    var lo = first;
    var hi = pos;
    if p.split_keys > 0u {
        lo = max(first, l.wg.z * p.split_keys);
        hi = min(pos, l.wg.z * p.split_keys + p.split_keys - 1u);
    }
    let hd4 = p.head_dim / 4u;
    let kvh = h / (p.heads / p.kv_heads);
    let row4 = p.kv_heads * hd4;
    let kb4 = kvh * hd4;
    for (var d = l.lid; d < hd4; d += WG) {
        qs[d] = q[(t * p.heads + h) * hd4 + d];
    }
    workgroupBarrier();
    let key = l.lid / LPK;
    let lane = l.lid % LPK;
    let groups = max(WG / hd4, 1u);
    let c = l.lid % hd4;
    let g = l.lid / hd4;
    var m = -3.0e38;
    var total = 0.0;
    var o = vec4<f32>(0.0);
    for (var j0 = lo - lo % KB; j0 <= hi && lo <= hi; j0 += KB) {
        let j = j0 + key;
        let live = j >= lo && j <= hi;
        let base = cache_row_in(at.y, j0);
        var acc = vec4<f32>(0.0);
        if live {
            let kr = (base + key) * row4 + kb4;
            for (var d = lane; d < hd4; d += LPK) {
                acc += qs[d] * k[kr + d];
            }
        }
        let s = key_score(l, acc, live && lane == 0u);
        let m_new = max(m, wg_max(l, s));
        let alpha = exp(m - m_new);
        var e = 0.0;
        if live && lane == 0u {
            e = exp(s - m_new);
        }
        if lane == 0u {
            weights[key] = e;
        }
        total = total * alpha + wg_sum(l, e);
        m = m_new;
        o *= alpha;
        if g < groups && c < hd4 {
            for (var i = g; i < KB; i += groups) {
                let jj = j0 + i;
                if jj >= lo && jj <= hi {
                    o += weights[i] * v[(base + i) * row4 + kb4 + c];
                }
            }
        }
        workgroupBarrier();
    }
    osum[l.lid] = o;
    workgroupBarrier();
    if g == 0u && c < hd4 {
        var sum = osum[c];
        for (var gg = 1u; gg < groups; gg++) {
            sum += osum[gg * hd4 + c];
        }
        if p.split_keys > 0u {
            out[((t * p.heads + h) * p.blocks + l.wg.z) * (hd4 + 1u) + c] = sum;
        } else {
            out[(t * p.heads + h) * hd4 + c] = sum / total;
        }
    }
    if p.split_keys > 0u && l.lid == 0u {
        out[((t * p.heads + h) * p.blocks + l.wg.z) * (hd4 + 1u) + hd4] = vec4<f32>(m, total, 0.0, 0.0);
    }
}
