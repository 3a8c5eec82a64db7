// The tensor-core GEMM's Q6_K weights (gemm_coop.wgsl).
//
// RUN 1 (the default): each thread owns a run of NWS consecutive steps of one tile row (a chunk
// of 32 columns is one sub-block, 8 steps) and fetches its words before the multiplies — the
// run's low-bit bytes and high-bit bytes as NWS + 1 words each (the block is 2-byte aligned, so
// a run straddles one word more than it holds), the word with its two scale bytes and the word
// with d — and decodes them after the multiplies, when the chunk is published: 20 loads a
// chunk at NWS 8 where a step at a time issues 6 a step (48). A row past the matrix loads the
// last row and keeps d = 0 (every weight decodes to zero), so the loads stay branch-free. The
// values are `step_weights`' (the same operations in the same order).
//
// RUN 0: a step at a time (`fetch_steps`), as the other types.

fn coop_step(b: u32, s: u32, k: u32) -> StepW {
    return step_weights(b, s, k);
}

// This thread's share: a run — low-bit words (l0, then l1 where NWS is 8, then l2), high-bit
// words (h*), the scale word, the d word (zero past the last row), and the block's byte shift
// (0 or 16: the block starts 4- or 2-byte aligned) — or with RUN 0 its decoded steps.
struct WShare {
    l0: vec4<u32>,
    l1: vec4<u32>,
    l2: u32,
    h0: vec4<u32>,
    h1: vec4<u32>,
    h2: u32,
    scales: u32,
    d: u32,
    shift: u32,
    steps: StepShare,
}

fn words4(i: u32) -> vec4<u32> {
    return vec4<u32>(w[i], w[i + 1u], w[i + 2u], w[i + 3u]);
}

fn coop_fetch_weights(c: u32, n0: u32, lid: u32) -> WShare {
    var r: WShare;
    if RUN == 0u {
        r.steps = fetch_steps(c, n0, lid);
        return r;
    }
    let at = run_at(c, n0, lid);
    // Chunk c is sub-block s = c % 8 of its block: half h, quarter q.
    let s = c % 8u;
    let h = s >> 2u;
    let q = s & 3u;
    let lw = (at.b + 64u * h + 32u * (q & 1u) + 4u * at.k0) >> 2u;
    let hw = (at.b + 128u + 32u * h + 4u * at.k0) >> 2u;
    r.l0 = words4(lw);
    r.h0 = words4(hw);
    if NWS > 4u {
        r.l1 = words4(lw + 4u);
        r.h1 = words4(hw + 4u);
    }
    r.l2 = w[lw + NWS];
    r.h2 = w[hw + NWS];
    r.scales = w[(at.b + 192u + 8u * h + 2u * q) >> 2u];
    r.d = select(0u, w[(at.b + 208u) >> 2u], at.live);
    r.shift = (at.b & 3u) * 8u;
    return r;
}

// The word at byte `shift` of `lo` (the rest from `hi`), as `w_u32` joins it.
fn join(lo: u32, hi: u32, shift: u32) -> u32 {
    return (lo >> shift) | ((hi << (31u - shift)) << 1u);
}

// Step k of sub-block s from its low-bit and high-bit words: `step_weights` of quant/q6_k.wgsl.
fn put_run_step(r: WShare, o: u32, lo: u32, hi: u32, s: u32, k: u32) {
    let q = s & 3u;
    let l4 = bytes4(lo >> (4u * (q >> 1u))) & vec4<u32>(0xFu);
    let h4 = (bytes4(hi) >> vec4<u32>(2u * q)) & vec4<u32>(3u);
    let v = small_f32(l4 | (h4 << vec4<u32>(4u)), 32.0);
    // The step's scale byte: byte (k >> 2) of the sub-block's pair, which starts at byte
    // 192 + 8h + 2q of the block (r.shift / 8 bytes into its word).
    let at = 8u * (((r.shift / 8u + 2u * q) & 3u) + (k >> 2u));
    let sc = f32(bitcast<i32>(((r.scales >> at) & 0xFFu) << 24u) >> 24u);
    let d = unpack2x16float(r.d >> r.shift).x;
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
    let sh = r.shift;
    let l = r.l0;
    let hh = r.h0;
    put_run_step(r, o, join(l.x, l.y, sh), join(hh.x, hh.y, sh), s, k0);
    put_run_step(r, o + 4u, join(l.y, l.z, sh), join(hh.y, hh.z, sh), s, k0 + 1u);
    put_run_step(r, o + 8u, join(l.z, l.w, sh), join(hh.z, hh.w, sh), s, k0 + 2u);
    if NWS > 4u {
        let l1 = r.l1;
        let h1 = r.h1;
        put_run_step(r, o + 12u, join(l.w, l1.x, sh), join(hh.w, h1.x, sh), s, k0 + 3u);
        put_run_step(r, o + 16u, join(l1.x, l1.y, sh), join(h1.x, h1.y, sh), s, k0 + 4u);
        put_run_step(r, o + 20u, join(l1.y, l1.z, sh), join(h1.y, h1.z, sh), s, k0 + 5u);
        put_run_step(r, o + 24u, join(l1.z, l1.w, sh), join(h1.z, h1.w, sh), s, k0 + 6u);
        put_run_step(r, o + 28u, join(l1.w, r.l2, sh), join(h1.w, r.h2, sh), s, k0 + 7u);
    } else {
        put_run_step(r, o + 12u, join(l.w, r.l2, sh), join(hh.w, r.h2, sh), s, k0 + 3u);
    }
}
