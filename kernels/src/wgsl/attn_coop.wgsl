enable f16;
enable wgpu_cooperative_matrix;

// Prefill, second pass over tiles of rows on cooperative matrices (tensor cores): the contract
// of attn_tiles.wgsl — causal attention of a batch of prepared queries (attn_prep.wgsl) of one
// sequence at consecutive positions against the paged KV cache, flash-style, workgroup (h, b)
// taking query head h of rows b BR .. b BR + BR — with both products on 16 × 16 × 16 f16
// fragments, f32 sums:
//   1. the block's BK keys into workgroup memory as f16 (`kvs`);
//   2. S = Q Kᵀ over the f16 queries (`qs`, loaded once): the BR / 16 × BK / 16 fragments
//      of the scores times 8 / that many parts of the head dim make the 8 subgroups' work
//      (every subgroup multiplies: cooperative-matrix operations need uniform control
//      flow), each part's sums into its own plane of `s`;
//   3. the block's values into `kvs`; the planes added; each row's running max by its WG / BR
//      threads (maxima
//      through `redm`), the weights exp(S - m) in f32 (their sums through `reds`) and as f16
//      into `ps`, alpha = exp(m_old - m_new);
//   4. P V: two of the BR × HD output fragments per subgroup, BK / 16 multiply-adds, stored
//      to `pv`; each thread then O = O alpha + P V for two rows × two vec4 columns in
//      registers (a fragment cannot be scaled by row), l = l alpha + sum P.
// The output is O / l. HD 64, 128 or 256, BR = 4096 / HD, BK 32 (16 at HD 256): the 256
// threads own BR × HD outputs exactly, as attn_tiles.wgsl's do.
//
// Precision: queries, keys, values and weights rounded to f16 (clamped to its range), products
// summed in f32 — llama.cpp's f16 flash attention rounds the same operands. The test bound is
// set by that rounding (runtime/tests/row_kernels.rs), not attn_tiles.wgsl's f32 one.
//
// Tile rows are the data plus 8 halves (4 floats): 16-byte aligned fragment rows that do not
// all start in one bank. Needs 32-lane subgroups (one fragment a subgroup).

//!include attn_causal_io.wgsl

override HD: u32 = 128u;
override BR: u32 = 4096u / HD;
override BK: u32 = 32u;
override HD4: u32 = HD / 4u;
const WG: u32 = 256u;
// Row pitches: f16 tiles in halves, f32 tiles in floats.
override QP: u32 = HD + 8u;
override PP: u32 = BK + 8u;
override SP: u32 = BK + 4u;
override VP: u32 = HD + 4u;

var<workgroup> qs: array<f16, BR * QP>;
var<workgroup> kvs: array<f16, BK * QP>;
// The scores, one plane per part of the head dim (8 subgroups / fragments of scores).
var<workgroup> s: array<f32, 8u / ((BR / 16u) * (BK / 16u)) * BR * SP>;
var<workgroup> ps: array<f16, BR * PP>;
var<workgroup> pv: array<f32, BR * VP>;
var<workgroup> alpha: array<f32, BR>;
var<workgroup> redm: array<f32, WG>;
var<workgroup> reds: array<f32, WG>;

//!include attn_pages.wgsl
//!include attn_tile_rows.wgsl

fn half4(v: vec4<f32>) -> vec4<f16> {
    return vec4<f16>(clamp(v, vec4<f32>(-65504.0), vec4<f32>(65504.0)));
}

// The block of BK keys from j0 of KV head `kvh` (`which` 0: k, 1: v) into `kvs` as f16; zeros
// past the last key. Branch-free loads (the key clamped, the value selected).
fn load_block(j0: u32, kvh: u32, lid: u32, which: u32) {
    let base = cache_row(j0);
    for (var i = lid; i < BK * HD4; i += WG) {
        let key = i / HD4;
        let live = j0 + key < p.n_keys;
        let at = (base + min(key, p.n_keys - 1u - j0)) * p.kv_heads * HD4 + kvh * HD4 + i % HD4;
        var val: vec4<f32>;
        if which == 0u {
            val = kv_load(k[at]);
        } else {
            val = kv_load(v[at]);
        }
        let h = half4(select(vec4<f32>(0.0), val, live));
        let o = key * QP + (i % HD4) * 4u;
        kvs[o] = h.x;
        kvs[o + 1u] = h.y;
        kvs[o + 2u] = h.z;
        kvs[o + 3u] = h.w;
    }
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_id) sg: u32,
) {
    let h = wg.x;
    let t0 = wg.y * BR;
    let rows = min(BR, p.tokens - t0);
    let pos0 = p.n_keys - p.tokens + t0;
    let kvh = h / (p.heads / p.kv_heads);
    for (var i = lid; i < BR * HD4; i += WG) {
        let r = i / HD4;
        let d = i % HD4;
        let val = tile_query(t0, rows, h, r, d);
        let hv = half4(val);
        let o = r * QP + d * 4u;
        qs[o] = hv.x;
        qs[o + 1u] = hv.y;
        qs[o + 2u] = hv.z;
        qs[o + 3u] = hv.w;
    }
    // This thread's outputs: rows rp and rp + BR / 2, vec4 columns cp and cp + HD / 8.
    let cp = lid % (HD / 8u);
    let rp = lid / (HD / 8u);
    var o00 = vec4<f32>(0.0);
    var o01 = vec4<f32>(0.0);
    var o10 = vec4<f32>(0.0);
    var o11 = vec4<f32>(0.0);
    var la = 0.0;
    var lb = 0.0;
    // Step 3's row r3 (this thread's scores j3, j3 + tpr, ..: tpr threads a row) and its
    // running max.
    let tpr = WG / BR;
    let r3 = lid / tpr;
    let j3 = lid % tpr;
    var m = -3.0e38;
    // Step 2's fragment of scores and part of the head dim (`parts` of `kr` columns), and step
    // 4's two output fragments (`nf` a row of fragments).
    let frags = (BR / 16u) * (BK / 16u);
    let parts = 8u / frags;
    let kr = HD / parts;
    let sfr = (sg % frags) / (BK / 16u);
    let sfc = (sg % frags) % (BK / 16u);
    let k0 = (sg / frags) * kr;
    let plane = (sg / frags) * BR * SP;
    let nf = HD / 16u;
    let first = first_key(pos0);
    let last = pos0 + rows - 1u;
    for (var j0 = first - first % BK; j0 <= last; j0 += BK) {
        load_block(j0, kvh, lid, 0u);
        workgroupBarrier();
        var acc = coop_mat16x16<f32, C>();
        for (var kk = 0u; kk < kr; kk += 16u) {
            let a = coopLoadT<coop_mat16x16<f16, A>>(&qs[sfr * 16u * QP + k0 + kk], QP);
            let b = coopLoad<coop_mat16x16<f16, B>>(&kvs[sfc * 16u * QP + k0 + kk], QP);
            acc = coopMultiplyAdd(a, b, acc);
        }
        coopStoreT(acc, &s[plane + sfr * 16u * SP + sfc * 16u], SP);
        workgroupBarrier();
        load_block(j0, kvh, lid, 1u);
        let o = r3 * SP;
        var mx = -3.0e38;
        for (var i = j3; i < BK; i += tpr) {
            var dot_ = s[o + i];
            for (var pl = 1u; pl < parts; pl++) {
                dot_ += s[pl * BR * SP + o + i];
            }
            let sc = score(dot_, pos0 + r3, j0 + i);
            s[o + i] = sc;
            mx = max(mx, sc);
        }
        redm[lid] = mx;
        workgroupBarrier();
        var m_new = m;
        for (var i = 0u; i < tpr; i++) {
            m_new = max(m_new, redm[r3 * tpr + i]);
        }
        var sum = 0.0;
        for (var i = j3; i < BK; i += tpr) {
            // A masked score (-3e38) weighs nothing, also while every score so far is masked.
            var e = 0.0;
            if s[o + i] > -1.0e38 {
                e = exp(s[o + i] - m_new);
            }
            ps[r3 * PP + i] = f16(e);
            sum += e;
        }
        reds[lid] = sum;
        if j3 == 0u {
            alpha[r3] = exp(m - m_new);
        }
        m = m_new;
        workgroupBarrier();
        // Output fragments 2 sg and 2 sg + 1 (straight-line: a loop bounded by `sg` is
        // non-uniform control flow).
        let fa = 2u * sg;
        let fb = fa + 1u;
        var acc_a = coop_mat16x16<f32, C>();
        var acc_b = coop_mat16x16<f32, C>();
        for (var kk = 0u; kk < BK; kk += 16u) {
            let a = coopLoadT<coop_mat16x16<f16, A>>(&ps[(fa / nf) * 16u * PP + kk], PP);
            let ba = coopLoadT<coop_mat16x16<f16, B>>(&kvs[kk * QP + (fa % nf) * 16u], QP);
            acc_a = coopMultiplyAdd(a, ba, acc_a);
            let a2 = coopLoadT<coop_mat16x16<f16, A>>(&ps[(fb / nf) * 16u * PP + kk], PP);
            let bb = coopLoadT<coop_mat16x16<f16, B>>(&kvs[kk * QP + (fb % nf) * 16u], QP);
            acc_b = coopMultiplyAdd(a2, bb, acc_b);
        }
        coopStoreT(acc_a, &pv[(fa / nf) * 16u * VP + (fa % nf) * 16u], VP);
        coopStoreT(acc_b, &pv[(fb / nf) * 16u * VP + (fb % nf) * 16u], VP);
        workgroupBarrier();
        let ra = alpha[rp];
        let rb = alpha[rp + BR / 2u];
        let ia = rp * VP + cp * 4u;
        let ib = (rp + BR / 2u) * VP + cp * 4u;
        let hb = HD / 2u;
        o00 = o00 * ra + vec4<f32>(pv[ia], pv[ia + 1u], pv[ia + 2u], pv[ia + 3u]);
        o01 = o01 * ra + vec4<f32>(pv[ia + hb], pv[ia + hb + 1u], pv[ia + hb + 2u], pv[ia + hb + 3u]);
        o10 = o10 * rb + vec4<f32>(pv[ib], pv[ib + 1u], pv[ib + 2u], pv[ib + 3u]);
        o11 = o11 * rb + vec4<f32>(pv[ib + hb], pv[ib + hb + 1u], pv[ib + hb + 2u], pv[ib + hb + 3u]);
        var suma = 0.0;
        var sumb = 0.0;
        for (var i = 0u; i < tpr; i++) {
            suma += reds[rp * tpr + i];
            sumb += reds[(rp + BR / 2u) * tpr + i];
        }
        la = la * ra + suma;
        lb = lb * rb + sumb;
        workgroupBarrier();
    }
    store_rows(t0, rows, h, rp, cp, mat2x4<f32>(o00, o01), mat2x4<f32>(o10, o11), la, lb);
}
