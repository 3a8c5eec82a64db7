// Batched decode's attention over a row table, one query a (row, head), on subgroups: the pass
// `ops::attention_rows` takes for a row table where the adapter has subgroups wide enough
// (`attention::rows_sg_shape`), in place of attn_prefill.wgsl's block walk. Row t (its
// position pos and page-table base from the row table, attn_rows.wgsl) attends to keys
// [first, pos] (first = pos + 1 - window with a sliding window), or with p.split_keys > 0 to
// split z's part of them, writing the partials attn_combine.wgsl adds up (the layout of
// attn_prefill.wgsl's: o unnormalized, then m and l).
//
// Workgroup (g, t, z) takes the G query heads g G .. of row t, which share one KV head (G ≤ 4:
// `attention::rows_sg_shape`). Its subgroups walk the keys in turn (subgroup s takes keys lo +
// s, lo + s + n, .. for n subgroups), two a step so that both keys' loads are in flight
// together. A lane owns NC vec4 columns of the head dim (c = lane, lane + width, ..): it loads
// its columns of each key and value row (a subgroup reads a row with consecutive word loads)
// and keeps its columns of the G queries and output sums in registers. A key's score for a
// head is the subgroup sum of the lanes' partial dots (every lane gets it), so every lane runs
// the same online softmax (running max m and sum l per head) and scales its own columns: no
// workgroup memory and no barrier in the walk, and each score's exp is taken once a lane, not
// once per column thread as in the block walk. At the end the subgroups' (m, l, o) meet in
// workgroup memory and threads (head, column) combine them. Every subgroup is assumed full
// (128 threads in subgroups of the adapter's width, as the drivers served give them; Vulkan
// promises it only to full-subgroup pipelines, which wgpu does not ask for).
//
// Why: the block walk (attn_prefill.wgsl) stages each block in workgroup memory behind four
// barriers and walks it three times per thread (the score's dot, the block's max, the weighted
// values); at 64 rows × 192 keys of the Llama-8B shape it took 130–165 µs where the keys and
// values stream in ~16 µs (docs/performance.md, "v39").

//!include attn_causal_io.wgsl

const WG: u32 = 128u;
// Head dim, query heads a workgroup (1 to 4), vec4 columns a lane (1, 2 or 4).
override HD: u32 = 128u;
override G: u32 = 4u;
override NC: u32 = 1u;
override HD4: u32 = HD / 4u;

// The batch's rows (attn_rows.wgsl).
@group(0) @binding(6) var<storage, read> rows: array<u32>;

//!include attn_pages.wgsl
//!include attn_rows.wgsl
//!include attn_row_pass.wgsl

// The subgroups' results: per subgroup and head, HD4 vec4s of o then (m, l, 0, 0): 128 / width
// subgroups × G × (HD4 + 1) vec4s, which `attention::rows_sg_shape` keeps to PMAX
// (`attention::ROWS_SG_PARTS`).
const PMAX: u32 = 1024u;
var<workgroup> parts: array<vec4<f32>, PMAX>;

// One head's state in a lane: its query columns, its output sums at those columns, and the
// running max and weight sum (the same in every lane of the subgroup).
struct Head {
    q0: vec4<f32>,
    q1: vec4<f32>,
    q2: vec4<f32>,
    q3: vec4<f32>,
    o0: vec4<f32>,
    o1: vec4<f32>,
    o2: vec4<f32>,
    o3: vec4<f32>,
    m: f32,
    l: f32,
}

// One key or value row at a lane's columns.
struct Cols {
    c0: vec4<f32>,
    c1: vec4<f32>,
    c2: vec4<f32>,
    c3: vec4<f32>,
}

// Column `i` of this lane (its vec4 index in the head), clamped into the head; `live` says
// whether it is one.
fn col(lane: u32, width: u32, i: u32) -> u32 {
    return min(lane + i * width, HD4 - 1u);
}

fn col_live(lane: u32, width: u32, i: u32) -> bool {
    return lane + i * width < HD4;
}

// Word `i` of the key cache (`cache` 0) or the value cache (1).
fn cache_word(cache: u32, i: u32) -> KvWord {
    if cache == 0u {
        return k[i];
    }
    return v[i];
}

// Column `n` of this lane of cache row `at` (its first word), zero at a dead one.
fn cache_col(cache: u32, at: u32, lane: u32, width: u32, n: u32) -> vec4<f32> {
    let word = cache_word(cache, at + col(lane, width, n));
    return select(vec4<f32>(0.0), kv_load(word), col_live(lane, width, n));
}

// The lane's columns of cache row `row` (pool row, KV head offset kb4) of the key (`cache` 0)
// or value (1) cache.
fn load_cols(cache: u32, row: u32, kb4: u32, lane: u32, width: u32) -> Cols {
    let at = row * p.kv_heads * HD4 + kb4;
    var r: Cols;
    r.c0 = cache_col(cache, at, lane, width, 0u);
    if NC > 1u {
        r.c1 = cache_col(cache, at, lane, width, 1u);
    }
    if NC > 2u {
        r.c2 = cache_col(cache, at, lane, width, 2u);
        r.c3 = cache_col(cache, at, lane, width, 3u);
    }
    return r;
}

// Head `h`'s query at this lane's columns (zeros at dead ones).
fn load_query(t: u32, h: u32, lane: u32, width: u32) -> Head {
    var r: Head;
    let base = (t * p.heads + h) * HD4;
    let z = vec4<f32>(0.0);
    r.q0 = select(z, q[base + col(lane, width, 0u)], col_live(lane, width, 0u));
    if NC > 1u {
        r.q1 = select(z, q[base + col(lane, width, 1u)], col_live(lane, width, 1u));
    }
    if NC > 2u {
        r.q2 = select(z, q[base + col(lane, width, 2u)], col_live(lane, width, 2u));
        r.q3 = select(z, q[base + col(lane, width, 3u)], col_live(lane, width, 3u));
    }
    r.m = -3.0e38;
    return r;
}

// One key (its row `kr`, value row `vr`) into head `a`'s online softmax; `live` false leaves
// it as it was (a key past the walk's end). Called by every lane of the subgroup.
fn add_key(a: Head, kr: Cols, vr: Cols, live: bool) -> Head {
    var d = dot(a.q0, kr.c0);
    if NC > 1u {
        d += dot(a.q1, kr.c1);
    }
    if NC > 2u {
        d += dot(a.q2, kr.c2) + dot(a.q3, kr.c3);
    }
    var s = subgroupAdd(d) * p.scale;
    if p.cap > 0.0 {
        s = p.cap * tanh(clamp(s / p.cap, -15.0, 15.0));
    }
    s = select(-3.0e38, s, live);
    let m = max(a.m, s);
    let alpha = exp(a.m - m);
    let e = select(0.0, exp(s - m), live);
    var r = a;
    r.m = m;
    r.l = a.l * alpha + e;
    r.o0 = a.o0 * alpha + e * vr.c0;
    if NC > 1u {
        r.o1 = a.o1 * alpha + e * vr.c1;
    }
    if NC > 2u {
        r.o2 = a.o2 * alpha + e * vr.c2;
        r.o3 = a.o3 * alpha + e * vr.c3;
    }
    return r;
}

// Head `a` (the workgroup's head `g`) of subgroup `sg` into `parts`.
fn put_head(a: Head, sg: u32, g: u32, lane: u32, width: u32) {
    let at = (sg * G + g) * (HD4 + 1u);
    if col_live(lane, width, 0u) {
        parts[at + col(lane, width, 0u)] = a.o0;
    }
    if NC > 1u && col_live(lane, width, 1u) {
        parts[at + col(lane, width, 1u)] = a.o1;
    }
    if NC > 2u {
        if col_live(lane, width, 2u) {
            parts[at + col(lane, width, 2u)] = a.o2;
        }
        if col_live(lane, width, 3u) {
            parts[at + col(lane, width, 3u)] = a.o3;
        }
    }
    if lane == 0u {
        parts[at + HD4] = vec4<f32>(a.m, a.l, 0.0, 0.0);
    }
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_id) sg: u32,
    @builtin(num_subgroups) nsg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_size) width: u32,
) {
    let t = wg.y;
    // This workgroup's keys [lo, hi] (empty when lo > hi).
    let rk = row_keys(t, wg.z);
    let lo = rk.lo;
    let hi = rk.hi;
    let h0 = wg.x * G;
    let kb4 = (h0 / (p.heads / p.kv_heads)) * HD4;
    var a0 = load_query(t, h0, lane, width);
    var a1 = a0;
    var a2 = a0;
    var a3 = a0;
    if G > 1u {
        a1 = load_query(t, h0 + 1u, lane, width);
    }
    if G > 2u {
        a2 = load_query(t, h0 + 2u, lane, width);
    }
    if G > 3u {
        a3 = load_query(t, h0 + 3u, lane, width);
    }
    // Two keys a step: j and j + nsg (its loads clamped to j's row past hi, then unused).
    for (var j = lo + sg; j <= hi && lo <= hi; j += 2u * nsg) {
        let j2 = j + nsg;
        let live2 = j2 <= hi;
        let r1 = cache_row_in(rk.base, j);
        let r2 = cache_row_in(rk.base, select(j, j2, live2));
        let k1 = load_cols(0u, r1, kb4, lane, width);
        let v1 = load_cols(1u, r1, kb4, lane, width);
        let k2 = load_cols(0u, r2, kb4, lane, width);
        let v2 = load_cols(1u, r2, kb4, lane, width);
        a0 = add_key(add_key(a0, k1, v1, true), k2, v2, live2);
        if G > 1u {
            a1 = add_key(add_key(a1, k1, v1, true), k2, v2, live2);
        }
        if G > 2u {
            a2 = add_key(add_key(a2, k1, v1, true), k2, v2, live2);
        }
        if G > 3u {
            a3 = add_key(add_key(a3, k1, v1, true), k2, v2, live2);
        }
    }
    put_head(a0, sg, 0u, lane, width);
    if G > 1u {
        put_head(a1, sg, 1u, lane, width);
    }
    if G > 2u {
        put_head(a2, sg, 2u, lane, width);
    }
    if G > 3u {
        put_head(a3, sg, 3u, lane, width);
    }
    workgroupBarrier();
    // Thread (head, column) combines the subgroups: their sums rescaled to the largest max.
    for (var i = lid; i < G * HD4; i += WG) {
        let g = i / HD4;
        let c = i % HD4;
        var m = -3.0e38;
        for (var s = 0u; s < nsg; s++) {
            m = max(m, parts[(s * G + g) * (HD4 + 1u) + HD4].x);
        }
        var o = vec4<f32>(0.0);
        var l = 0.0;
        for (var s = 0u; s < nsg; s++) {
            let at = (s * G + g) * (HD4 + 1u);
            let w = exp(parts[at + HD4].x - m);
            o += w * parts[at + c];
            l += w * parts[at + HD4].y;
        }
        store_row_out(o, m, l, t, h0 + g, c, wg.z);
    }
}
