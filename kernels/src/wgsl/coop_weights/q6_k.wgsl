// The tensor-core GEMM's Q6_K weights (gemm_coop.wgsl).
//
// RUN 1 (the default): each thread owns a run of NWS consecutive steps of one tile row (a chunk
// of 32 columns is one sub-block, 8 steps) and fetches its words before the multiplies — the
// run's low-bit and high-bit bytes as NWS words each, four words a vec4 load from `w4` (the
// GPU's groups start every ql and qh run on 16 bytes: quant/q6_k_groups.wgsl), the word with
// its two scale bytes and the word with d — and decodes them after the multiplies, when the
// chunk is published: 6 loads a chunk at NWS 8 (18 as words, v51–v55) where a step at a time
// issues 6 a step (48). A row past the matrix loads the last row and keeps d = 0 (every
// weight decodes to zero), so the loads stay branch-free. The values are `step_weights'` bit
// for bit (see `coop_publish_weights`).
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

// A step's word as four int8 4 (q - 32) — quarter q's nibbles at bits 2..6 of each byte (the
// low ones shifted up, the high ones down), its qh pairs at bits 6..8; with the GPU's flipped
// qh that is the signed byte as it stands (q8dot/q6_k.wgsl's q6_words) — as floats. Masks on
// whole words and one sign-extending unpack, where a byte at a time took three operations a
// field.
fn run_step(lo: u32, hi: u32, q: u32) -> vec4<f32> {
    let l = select(lo << 2u, lo >> 2u, q > 1u);
    let h = hi << (6u - 2u * q);
    return vec4<f32>(unpack4xI8((l & 0x3C3C3C3Cu) | (h & 0xC0C0C0C0u)));
}

// Byte i of `word` as a signed scale.
fn scale_byte(word: u32, i: u32) -> f32 {
    return f32(bitcast<i32>(word << (24u - 8u * i)) >> 24u);
}

// The share into the weight tile at `wbase`; zeros where `keep` is false (d = 0). A step's
// values are (d sc / 4) * 4 (q - 32): the same exact product as `step_weights`' (d sc) * (q -
// 32), so the same f32 and the same f16 (a quarter and a factor of four are exact). Steps k0..
// k0 + 3 take the scale byte k0 / 4 of the sub-block's pair, k0 + 4.. the next (NWS is 4 or 8,
// and k0 a multiple of it).
fn coop_publish_weights(share: WShare, c: u32, wbase: u32, lid: u32, keep: bool) {
    if RUN == 0u {
        publish_steps(share.steps, c, wbase, lid, keep);
        return;
    }
    let q = (c % 8u) & 3u;
    let at = run_at(c, 0u, lid);
    let k0 = at.k0;
    let o = wbase + at.o + 4u * k0;
    let d = unpack2x16float(select(0u, share.d, keep)).x;
    let first = share.scale_at + (k0 >> 2u);
    let da = vec4<f32>(0.25 * (d * scale_byte(share.scales, first)));
    let l = share.l0;
    let h = share.h0;
    put4(o, vec4<f16>(da * run_step(l.x, h.x, q)));
    put4(o + 4u, vec4<f16>(da * run_step(l.y, h.y, q)));
    put4(o + 8u, vec4<f16>(da * run_step(l.z, h.z, q)));
    put4(o + 12u, vec4<f16>(da * run_step(l.w, h.w, q)));
    if NWS > 4u {
        let db = vec4<f32>(0.25 * (d * scale_byte(share.scales, first + 1u)));
        let l1 = share.l1;
        let h1 = share.h1;
        put4(o + 16u, vec4<f16>(db * run_step(l1.x, h1.x, q)));
        put4(o + 20u, vec4<f16>(db * run_step(l1.y, h1.y, q)));
        put4(o + 24u, vec4<f16>(db * run_step(l1.z, h1.z, q)));
        put4(o + 28u, vec4<f16>(db * run_step(l1.w, h1.w, q)));
    }
}
