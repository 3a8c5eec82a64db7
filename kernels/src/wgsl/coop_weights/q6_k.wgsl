// The tensor-core GEMM's Q6_K weights (gemm_coop.wgsl).
//
// RUN 1 (the default): each thread owns a run of NWS consecutive steps of one tile row (a chunk
// of 32 columns is one sub-block, 8 steps) and fetches its words before the multiplies — the
// run's low-bit and high-bit bytes as NWS words each, four words a vec4 load from `w4` (the
// GPU's groups start every ql and qh run on 16 bytes: quant/q6_k_groups.wgsl), the word with
// its two scale bytes and the word with d — and decodes them after the multiplies, when the
// chunk is published: 6 loads a chunk at NWS 8 (18 as words, v51–v55) where a step at a time
// issues 6 a step (48). A row past the matrix loads the last row and keeps d = 0 (every
// weight decodes to zero), so the loads stay branch-free. The values are `step_weights`' (the
// same operations in the same order).
//
// RUN 0: a step at a time (`fetch_steps`), as the other types.

fn coop_step(b: u32, s: u32, k: u32) -> StepW {
    return step_weights(b, s, k);
}

// This thread's share: a run — low-bit words (l0, then l1 where NWS is 8), high-bit words
// (h*), the word with the sub-block's two scale bytes (`scale_at` bytes in), d in the low half
// of its word (zero past the last row) — or with RUN 0 its decoded steps.
struct WShare {
    l0: vec4<u32>,
    l1: vec4<u32>,
    h0: vec4<u32>,
    h1: vec4<u32>,
    scales: u32,
    scale_at: u32,
    d: u32,
    steps: StepShare,
}

// Words i..i + 4 (i a multiple of 4) as one 16-byte load: four scalar loads issue four
// instructions, and NVIDIA's compiler does not join them (it cannot see the alignment).
fn words4(i: u32) -> vec4<u32> {
    return w4[i >> 2u];
}

fn coop_fetch_weights(c: u32, n0: u32, lid: u32) -> WShare {
    var r: WShare;
    if RUN == 0u {
        r.steps = fetch_steps(c, n0, lid);
        return r;
    }
    let at = run_at(c, n0, lid);
    let q6 = q6_block(at.b);
    // Chunk c is sub-block s = c % 8 of its block: half h, quarter q.
    let s = c % 8u;
    let h = s >> 2u;
    let q = s & 3u;
    let lw = (q6.ql + 64u * h + 32u * (q & 1u) + 4u * at.k0) >> 2u;
    let hw = (q6.qh + 32u * h + 4u * at.k0) >> 2u;
    r.l0 = words4(lw);
    r.h0 = words4(hw);
    if NWS > 4u {
        r.l1 = words4(lw + 4u);
        r.h1 = words4(hw + 4u);
    }
    let sat = q6.scales + 8u * h + 2u * q;
    r.scales = w[sat >> 2u];
    r.scale_at = sat & 3u;
    r.d = select(0u, w[q6.d >> 2u] >> (8u * (q6.d & 2u)), at.live);
    return r;
}

// Step k of sub-block s from its low-bit and high-bit words: `step_weights` of quant/q6_k.wgsl.
fn put_run_step(r: WShare, o: u32, lo: u32, hi: u32, s: u32, k: u32) {
    let q = s & 3u;
    let l4 = bytes4(lo >> (4u * (q >> 1u))) & vec4<u32>(0xFu);
    let h4 = (bytes4(qh_bits(hi)) >> vec4<u32>(2u * q)) & vec4<u32>(3u);
    let v = small_f32(l4 | (h4 << vec4<u32>(4u)), 32.0);
    // The step's scale byte: byte (k >> 2) of the sub-block's pair.
    let at = 8u * (r.scale_at + (k >> 2u));
    let sc = f32(bitcast<i32>(((r.scales >> at) & 0xFFu) << 24u) >> 24u);
    let d = unpack2x16float(r.d).x;
    put4(o, vec4<f16>((d * sc) * v));
}

// The share into the weight tile at `wbase`; zeros where `keep` is false (d = 0).
fn coop_publish_weights(share: WShare, c: u32, wbase: u32, lid: u32, keep: bool) {
    if RUN == 0u {
        publish_steps(share.steps, c, wbase, lid, keep);
        return;
    }
    var r = share;
    r.d = select(0u, share.d, keep);
    let s = c % 8u;
    let at = run_at(c, 0u, lid);
    let k0 = at.k0;
    let o = wbase + at.o + 4u * k0;
    let l = r.l0;
    let hh = r.h0;
    put_run_step(r, o, l.x, hh.x, s, k0);
    put_run_step(r, o + 4u, l.y, hh.y, s, k0 + 1u);
    put_run_step(r, o + 8u, l.z, hh.z, s, k0 + 2u);
    put_run_step(r, o + 12u, l.w, hh.w, s, k0 + 3u);
    if NWS > 4u {
        let l1 = r.l1;
        let h1 = r.h1;
        put_run_step(r, o + 16u, l1.x, h1.x, s, k0 + 4u);
        put_run_step(r, o + 20u, l1.y, h1.y, s, k0 + 5u);
        put_run_step(r, o + 24u, l1.z, h1.z, s, k0 + 6u);
        put_run_step(r, o + 28u, l1.w, h1.w, s, k0 + 7u);
    }
}
