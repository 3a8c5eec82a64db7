// Causal attention of a batch of prepared queries (attn_prep.wgsl) against the paged KV cache,
// a row at a time, flash-style: the pass for batches whose rows are not one sequence's
// consecutive positions (batched decode and the engine's mixed batches: a row table,
// attn_rows.wgsl, each row attending to its own sequence) and for prompts the tiled passes do
// not take. Row t sits at position pos = n_keys - tokens + t (or its row's own position and
// sequence) and attends to keys [first, pos] (first = pos + 1 - window with a sliding window).
//
// Workgroup (g, t, z) takes the GROUP query heads g GROUP .. of row t (p.group: the launcher's
// divisor of the GQA group heads / kv_heads, all of it unless its queries would outgrow
// attention::ROW_QUERY_VALUES; the pipeline's GROUP override is the same count), which
// share one KV head: each key and value row is read once for all of them. Keys go in blocks of
// KB (KB · HD ≤ 4096 values, a block within one page), staged in workgroup memory:
//   1. the block's keys, held in registers since the last block, go into `kvs` as the cache
//      holds them (`KvWord`s: packed halves for an f16 cache — half the workgroup memory of
//      f32 rows, so more workgroups share a core — unpacked where they are read);
//   2. scores: thread (head, key) dots its key with the head's query (`qs`) into `s`;
//   3. the block's values go into `kvs` (zeros outside the row's keys) and the next block's
//      keys and values are loaded into registers — their latency hides behind step 4;
//   4. values: thread (head, vec4 column) takes the block's largest score of its head as its
//      running max m (every thread of a head computes the same m and sum l), rescales its
//      running sum o and l by exp(m_old - m), and adds exp(s - m) v over the block.
// Every global load of a block is issued at once, coalesced, from straight-line code (named
// registers: on NVIDIA a load inside a branch or a non-unrolled loop waits out its latency
// before the next issues, and an indexed private array lives in memory); a thread's scores,
// weights and operands then come from workgroup memory. No subgroups, no reductions. A thread
// owns up to four (head, column) outputs (GROUP · HD ≤ 4 · 4 · WG).
//
// Split (p.split_keys > 0): workgroup z takes keys [z · split_keys, (z + 1) · split_keys) of its
// row's range and writes its (o, m, l) unnormalized as the partials attn_combine.wgsl adds up
// ([tokens, heads, blocks] partials of head_dim + 4 floats, `blocks` splits per row: the
// combine's heads are the (row, head) pairs). A split past the row's position writes m = -3e38,
// l = 0, o = 0, which the combine weighs as zero.
//
// Output [tokens, heads · head_dim].

//!include attn_causal_io.wgsl

const WG: u32 = 128u;
// Head dim (p.head_dim) and keys per block (a power of two dividing the page; KB · HD ≤ 4096).
override HD: u32 = 128u;
override KB: u32 = 32u;
override HD4: u32 = HD / 4u;
// The staged block's row pitch in cache words (one more than a row: the score threads' reads
// of consecutive keys fall in different banks, 16-byte words or 8-byte ones).
override KP: u32 = HD4 + 1u;
// Cache words (four values each) of a block per thread (at most 8: the registers below).
override NL: u32 = (KB * HD4 + WG - 1u) / WG;
// Query heads a workgroup (the launcher's p.group; attention::row_group keeps GROUP · HD ≤
// 2048 and GROUP · KB ≤ 512): the queries' and scores' memory is sized by it.
override GROUP: u32 = 4u;

// The batch's rows (attn_rows.wgsl).
@group(0) @binding(6) var<storage, read> rows: array<u32>;

var<workgroup> qs: array<vec4<f32>, GROUP * HD4>;
var<workgroup> kvs: array<KvWord, KB * KP>;
var<workgroup> s: array<f32, GROUP * KB>;

//!include attn_pages.wgsl
//!include attn_rows.wgsl
//!include attn_row_pass.wgsl

// This thread's share of a block as the cache holds it: keys in k0.., values in v0.. (cache
// words lid, lid + WG, ..).
var<private> k0: KvWord;
var<private> k1: KvWord;
var<private> k2: KvWord;
var<private> k3: KvWord;
var<private> k4: KvWord;
var<private> k5: KvWord;
var<private> k6: KvWord;
var<private> k7: KvWord;
var<private> v0: KvWord;
var<private> v1: KvWord;
var<private> v2: KvWord;
var<private> v3: KvWord;
var<private> v4: KvWord;
var<private> v5: KvWord;
var<private> v6: KvWord;
var<private> v7: KvWord;

// Where cache word `n` of this thread's share of a block sits: its pool row offset and its
// slot in `kvs` (a clamped copy of the block's last word past its end).
fn share_at(lid: u32, n: u32, base: u32, row4: u32, kb4: u32) -> vec2<u32> {
    let i = min(lid + n * WG, KB * HD4 - 1u);
    let key = i / HD4;
    let d = i % HD4;
    return vec2<u32>((base + key) * row4 + kb4 + d, key * KP + d);
}

// The block from pool row `base` into the registers.
fn fetch(lid: u32, base: u32, row4: u32, kb4: u32) {
    k0 = k[share_at(lid, 0u, base, row4, kb4).x];
    v0 = v[share_at(lid, 0u, base, row4, kb4).x];
    if NL > 1u {
        k1 = k[share_at(lid, 1u, base, row4, kb4).x];
        v1 = v[share_at(lid, 1u, base, row4, kb4).x];
    }
    if NL > 2u {
        k2 = k[share_at(lid, 2u, base, row4, kb4).x];
        v2 = v[share_at(lid, 2u, base, row4, kb4).x];
        k3 = k[share_at(lid, 3u, base, row4, kb4).x];
        v3 = v[share_at(lid, 3u, base, row4, kb4).x];
    }
    if NL > 4u {
        k4 = k[share_at(lid, 4u, base, row4, kb4).x];
        v4 = v[share_at(lid, 4u, base, row4, kb4).x];
        k5 = k[share_at(lid, 5u, base, row4, kb4).x];
        v5 = v[share_at(lid, 5u, base, row4, kb4).x];
        k6 = k[share_at(lid, 6u, base, row4, kb4).x];
        v6 = v[share_at(lid, 6u, base, row4, kb4).x];
        k7 = k[share_at(lid, 7u, base, row4, kb4).x];
        v7 = v[share_at(lid, 7u, base, row4, kb4).x];
    }
}

// Word `n` of this thread's share into `kvs` (zeros for keys outside [lo, hi] from key j0:
// the zero word is 0.0 in either cache type).
fn put(lid: u32, n: u32, val: KvWord, j0: u32, lo: u32, hi: u32) {
    let i = lid + n * WG;
    let j = j0 + i / HD4;
    if i < KB * HD4 {
        kvs[(i / HD4) * KP + i % HD4] = select(KvWord(), val, (j >= lo) & (j <= hi));
    }
}

// The keys (which 0) or values (1) in the registers into `kvs`.
fn publish(lid: u32, which: u32, j0: u32, lo: u32, hi: u32) {
    put(lid, 0u, select(k0, v0, which == 1u), j0, lo, hi);
    if NL > 1u {
        put(lid, 1u, select(k1, v1, which == 1u), j0, lo, hi);
    }
    if NL > 2u {
        put(lid, 2u, select(k2, v2, which == 1u), j0, lo, hi);
        put(lid, 3u, select(k3, v3, which == 1u), j0, lo, hi);
    }
    if NL > 4u {
        put(lid, 4u, select(k4, v4, which == 1u), j0, lo, hi);
        put(lid, 5u, select(k5, v5, which == 1u), j0, lo, hi);
        put(lid, 6u, select(k6, v6, which == 1u), j0, lo, hi);
        put(lid, 7u, select(k7, v7, which == 1u), j0, lo, hi);
    }
}

// One (head, vec4 column) output of this thread: the running value sum, max and weight sum.
struct Acc {
    o: vec4<f32>,
    m: f32,
    l: f32,
}

// The staged block's values into `a`, the output of head `g` of the workgroup at column `c`.
fn add_block(a: Acc, g: u32, c: u32) -> Acc {
    var mx = a.m;
    for (var i = 0u; i < KB; i++) {
        mx = max(mx, s[g * KB + i]);
    }
    let alpha = exp(a.m - mx);
    var o = a.o * alpha;
    var l = a.l * alpha;
    for (var i = 0u; i < KB; i++) {
        let sc = s[g * KB + i];
        let e = select(0.0, exp(sc - mx), sc > -1.0e38);
        o += e * kv_load(kvs[i * KP + c]);
        l += e;
    }
    return Acc(o, mx, l);
}

// Output `a` of query head h at vec4 column c of row t (attn_row_pass.wgsl).
fn write_out(a: Acc, t: u32, h: u32, c: u32, z: u32) {
    store_row_out(a.o, a.m, a.l, t, h, c, z);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let t = wg.y;
    // This workgroup's keys [lo, hi] (empty when lo > hi).
    let rk = row_keys(t, wg.z);
    let pos = rk.pos;
    let lo = rk.lo;
    let hi = rk.hi;
    let gs = p.group;
    let h0 = wg.x * gs;
    let kvh = h0 / (p.heads / p.kv_heads);
    let row4 = p.kv_heads * HD4;
    let kb4 = kvh * HD4;
    for (var i = lid; i < gs * HD4; i += WG) {
        qs[i] = q[(t * p.heads + h0) * HD4 + i];
    }
    // This thread's outputs: items lid, lid + WG, .. of the group's (head, column) pairs.
    let items = gs * HD4;
    var a0 = Acc(vec4<f32>(0.0), -3.0e38, 0.0);
    var a1 = a0;
    var a2 = a0;
    var a3 = a0;
    // The first block, and the last one's first key (blocks past it are fetched clamped to
    // it, unused; an empty split fetches the row's last block, unused, rather than a page
    // past the sequence's).
    let start = lo - lo % KB;
    let last = select(pos - pos % KB, hi - hi % KB, lo <= hi);
    fetch(lid, cache_row_in(rk.base, min(start, last)), row4, kb4);
    for (var j0 = start; j0 <= hi && lo <= hi; j0 += KB) {
        publish(lid, 0u, j0, 0u, 0xffffffffu);
        workgroupBarrier();
        for (var i = lid; i < gs * KB; i += WG) {
            let g = i / KB;
            let key = i % KB;
            var acc = vec4<f32>(0.0);
            for (var d = 0u; d < HD4; d++) {
                acc += qs[g * HD4 + d] * kv_load(kvs[key * KP + d]);
            }
            var sc = (acc.x + acc.y + acc.z + acc.w) * p.scale;
            if p.cap > 0.0 {
                sc = p.cap * tanh(clamp(sc / p.cap, -15.0, 15.0));
            }
            let j = j0 + key;
            s[i] = select(-3.0e38, sc, (j >= lo) & (j <= hi));
        }
        workgroupBarrier();
        publish(lid, 1u, j0, lo, hi);
        // The next block (this one again after the last: unused), in flight during the values.
        fetch(lid, cache_row_in(rk.base, min(j0 + KB, last)), row4, kb4);
        workgroupBarrier();
        if lid < items {
            a0 = add_block(a0, lid / HD4, lid % HD4);
        }
        if lid + WG < items {
            a1 = add_block(a1, (lid + WG) / HD4, (lid + WG) % HD4);
        }
        if lid + 2u * WG < items {
            a2 = add_block(a2, (lid + 2u * WG) / HD4, (lid + 2u * WG) % HD4);
        }
        if lid + 3u * WG < items {
            a3 = add_block(a3, (lid + 3u * WG) / HD4, (lid + 3u * WG) % HD4);
        }
        workgroupBarrier();
    }
    if lid < items {
        write_out(a0, t, h0 + lid / HD4, lid % HD4, wg.z);
    }
    if lid + WG < items {
        write_out(a1, t, h0 + (lid + WG) / HD4, (lid + WG) % HD4, wg.z);
    }
    if lid + 2u * WG < items {
        write_out(a2, t, h0 + (lid + 2u * WG) / HD4, (lid + 2u * WG) % HD4, wg.z);
    }
    if lid + 3u * WG < items {
        write_out(a3, t, h0 + (lid + 3u * WG) / HD4, (lid + 3u * WG) % HD4, wg.z);
    }
}
