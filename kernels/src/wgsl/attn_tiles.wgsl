// Prefill, second pass over tiles of rows: causal attention of a batch of prepared queries
// (attn_prep.wgsl) of one sequence at consecutive positions (row t at pos = n_keys - tokens + t)
// against the KV cache, flash-style, with each key and value loaded once per tile of BR rows
// instead of once per row (attn_prefill.wgsl, which serves batches that mix sequences).
//
// Workgroup (h, b) takes query head h of rows b BR .. b BR + BR and walks the keys the tile
// needs, [first of its first row, position of its last row], in blocks of BK, with five
// barriers a block:
//   1. the block's keys into workgroup memory (`kv`; zeros past the cache's last row);
//   2. scores S = Q Kᵀ · scale (soft-capped; -3e38 for a key outside a row's [first, pos]),
//      each thread two queries × two keys at a time, into `s`;
//   3. the block's values into `kv`, and each row's running max m by the WG / BR threads of
//      the row, their maxima of every (WG / BR)th score through `red`; after a barrier the
//      same threads turn their scores into the weights exp(S - m) in place and the first
//      writes alpha = exp(m_old - m_new) for the output (one thread a row did this alone
//      while the rest waited: BK dependent steps twice a block);
//   4. O = O alpha + P V, each thread two rows × two vec4 columns in registers, and the
//      rows' running sums l = l alpha + sum P (each of the row's threads the same sum, in key
//      order).
// The output is O / l. HD (head_dim) is 64, 128 or 256 and BR = 4096 / HD, so the 256 threads
// own BR × HD outputs exactly; BK (32, 16 or 8: the most the adapter's workgroup memory
// holds) divides a page. Rows of workgroup
// memory are one vec4 longer than the data: consecutive threads read consecutive keys' rows
// without every read falling in one bank. GQA: head h reads KV head h / (heads / kv_heads).
// Output [tokens, heads * head_dim]. f32 throughout, summed in another order than the per-row
// kernel: the tests hold both to the f64 reference.

//!include attn_causal_io.wgsl

override HD: u32 = 128u;
override BR: u32 = 4096u / HD;
override BK: u32 = 32u;
override HD4: u32 = HD / 4u;
// vec4s per row of `qs` and `kv`, and floats per row of `s`.
override QS: u32 = HD4 + 1u;
override SS: u32 = BK + 1u;
const WG: u32 = 256u;
// vec4s of a key block each thread loads (1, 2 or 4: `attention::tiles_variant`).
override NL: u32 = BK * HD4 / WG;


var<workgroup> qs: array<vec4<f32>, BR * QS>;
var<workgroup> kv: array<vec4<f32>, BK * QS>;
var<workgroup> s: array<f32, BR * SS>;
var<workgroup> alpha: array<f32, BR>;
var<workgroup> red: array<f32, WG>;

//!include attn_pages.wgsl

//!include attn_tile_rows.wgsl

// Element i (key i / HD4, vec4 i % HD4) of the block of BK keys from j0 of KV head `kvh`, from
// the caches (`which` 0: k, 1: v), pool row `base` holding key j0; zeros past the last key.
// Branch-free (the key clamped, the value selected), so a block's loads issue together.
fn cache_vec(j0: u32, base: u32, kvh: u32, i: u32, which: u32) -> vec4<f32> {
    let key = i / HD4;
    let live = j0 + key < p.n_keys;
    let at = (base + min(key, p.n_keys - 1u - j0)) * p.kv_heads * HD4 + kvh * HD4 + i % HD4;
    var val: vec4<f32>;
    if which == 0u {
        val = kv_load(k[at]);
    } else {
        val = kv_load(v[at]);
    }
    return select(vec4<f32>(0.0), val, live);
}

fn kv_put(i: u32, val: vec4<f32>) {
    kv[(i / HD4) * QS + i % HD4] = val;
}

// The block of BK keys from j0 (at most the last key) of KV head `kvh` into `kv`: NL = 1, 2 or
// 4 vec4s a thread, loaded by straight-line code before any is stored.

fn load_block(j0: u32, kvh: u32, lid: u32, which: u32) {
    let base = cache_row(j0);
    let a0 = cache_vec(j0, base, kvh, lid, which);
    var a1 = vec4<f32>(0.0);
    var a2 = vec4<f32>(0.0);
    var a3 = vec4<f32>(0.0);
    if NL > 1u {
        a1 = cache_vec(j0, base, kvh, lid + WG, which);
    }
    if NL > 2u {
        a2 = cache_vec(j0, base, kvh, lid + 2u * WG, which);
        a3 = cache_vec(j0, base, kvh, lid + 3u * WG, which);
    }
    kv_put(lid, a0);
    if NL > 1u {
        kv_put(lid + WG, a1);
    }
    if NL > 2u {
        kv_put(lid + 2u * WG, a2);
        kv_put(lid + 3u * WG, a3);
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let h = wg.x;
    let t0 = wg.y * BR;
    let rows = min(BR, p.tokens - t0);
    let pos0 = p.n_keys - p.tokens + t0;
    let kvh = h / (p.heads / p.kv_heads);
    for (var i = lid; i < BR * HD4; i += WG) {
        let r = i / HD4;
        let d = i % HD4;
        let val = tile_query(t0, rows, h, r, d);
        qs[r * QS + d] = val;
    }
    // This thread's outputs: rows rp and rp + BR / 2, vec4 columns cp and cp + HD / 8.
    let cp = lid % (HD / 8u);
    let rp = lid / (HD / 8u);
    var o00 = vec4<f32>(0.0);
    var o01 = vec4<f32>(0.0);
    var o10 = vec4<f32>(0.0);
    var o11 = vec4<f32>(0.0);
    // Step 3's row r3 (this thread's scores j3, j3 + tpr, ..: tpr threads a row) and its running max; the
    // running sums of this thread's output rows rp and rp + BR / 2.
    let tpr = WG / BR;
    let r3 = lid / tpr;
    let j3 = lid % tpr;
    var m = -3.0e38;
    var la = 0.0;
    var lb = 0.0;
    let first = first_key(pos0);
    let last = pos0 + rows - 1u;
    for (var j0 = first - first % BK; j0 <= last; j0 += BK) {
        load_block(j0, kvh, lid, 0u);
        workgroupBarrier();
        for (var i = lid; i < BR * BK / 4u; i += WG) {
            let qi = i / (BK / 2u);
            let ki = i % (BK / 2u);
            let qa = qi * QS;
            let qb = (qi + BR / 2u) * QS;
            let ka = ki * QS;
            let kb = (ki + BK / 2u) * QS;
            var s00 = 0.0;
            var s01 = 0.0;
            var s10 = 0.0;
            var s11 = 0.0;
            for (var d = 0u; d < HD4; d++) {
                let x0 = qs[qa + d];
                let x1 = qs[qb + d];
                let y0 = kv[ka + d];
                let y1 = kv[kb + d];
                s00 += dot(x0, y0);
                s01 += dot(x0, y1);
                s10 += dot(x1, y0);
                s11 += dot(x1, y1);
            }
            s[qi * SS + ki] = score(s00, pos0 + qi, j0 + ki);
            s[qi * SS + ki + BK / 2u] = score(s01, pos0 + qi, j0 + ki + BK / 2u);
            s[(qi + BR / 2u) * SS + ki] = score(s10, pos0 + qi + BR / 2u, j0 + ki);
            s[(qi + BR / 2u) * SS + ki + BK / 2u] =
                score(s11, pos0 + qi + BR / 2u, j0 + ki + BK / 2u);
        }
        workgroupBarrier();
        load_block(j0, kvh, lid, 1u);
        let o = r3 * SS;
        var mx = -3.0e38;
        for (var i = j3; i < BK; i += tpr) {
            mx = max(mx, s[o + i]);
        }
        red[lid] = mx;
        workgroupBarrier();
        var m_new = m;
        for (var i = 0u; i < tpr; i++) {
            m_new = max(m_new, red[r3 * tpr + i]);
        }
        for (var i = j3; i < BK; i += tpr) {
            // A masked score (-3e38) weighs nothing, also while every score so far is masked
            // (m_new -3e38: exp(0) would count it).
            var e = 0.0;
            if s[o + i] > -1.0e38 {
                e = exp(s[o + i] - m_new);
            }
            s[o + i] = e;
        }
        if j3 == 0u {
            alpha[r3] = exp(m - m_new);
        }
        m = m_new;
        workgroupBarrier();
        let ra = alpha[rp];
        let rb = alpha[rp + BR / 2u];
        o00 *= ra;
        o01 *= ra;
        o10 *= rb;
        o11 *= rb;
        let sa = rp * SS;
        let sb = (rp + BR / 2u) * SS;
        var suma = 0.0;
        var sumb = 0.0;
        for (var i = 0u; i < BK; i++) {
            let pa = s[sa + i];
            let pb = s[sb + i];
            suma += pa;
            sumb += pb;
            let v0 = kv[i * QS + cp];
            let v1 = kv[i * QS + cp + HD / 8u];
            o00 += pa * v0;
            o01 += pa * v1;
            o10 += pb * v0;
            o11 += pb * v1;
        }
        la = la * ra + suma;
        lb = lb * rb + sumb;
        workgroupBarrier();
    }
    store_rows(t0, rows, h, rp, cp, mat2x4<f32>(o00, o01), mat2x4<f32>(o10, o11), la, lb);
}
