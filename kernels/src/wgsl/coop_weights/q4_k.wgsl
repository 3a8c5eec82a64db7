// The tensor-core GEMM's Q4_K weights (gemm_coop.wgsl).
//
// RUN 1 (the default): each thread owns a run of consecutive quant words of one tile row and
// fetches it as whole words — the block's 16-byte head and the run's quant words, one vec4 per
// four words, from `w4` — into its share before the multiplies; it decodes them after the
// multiplies, when the chunk is published. A word holds four elements of two sub-blocks, 2j
// in its low nibbles and 2j + 1 in its high ones. With chunks of 32 columns (KC 32) a chunk is
// one sub-block and a run of NWS steps is NWS words, of which the chunk takes one nibble half;
// with KC 64 a chunk is the pair of sub-blocks that share their words, a run of NWS steps is
// NWS / 2 words, and both halves of every word are used: the same three loads (NWS 16: the
// head and two vec4s) bring 64 weights instead of 32. A row past the matrix loads the last row
// and keeps a zero head (d = dmin = 0: every weight decodes to zero), so the loads stay
// branch-free.
//
// RUN 0: a step at a time as the other types (`fetch_steps`), each step's head one vec4 load
// (docs/performance.md, v33: four scalar loads became one).

fn coop_step(b: u32, s: u32, k: u32) -> StepW {
    return step_weights_head(w4[b >> 4u], w[(b >> 2u) + 4u + 8u * (s >> 1u) + k], s);
}

// Whether a chunk is a pair of sub-blocks (KC 64), and how many quant words a run holds (as
// functions of the overrides: naga 30 fails on an override initialized from these).
fn pairs() -> bool {
    return KC == 64u;
}

fn run_words() -> u32 {
    return select(NWS, NWS / 2u, pairs());
}

// This thread's share: a run (the head, zero past the last row, and up to eight quant words),
// or with RUN 0 its decoded steps.
struct WShare {
    head: vec4<u32>,
    q0: vec4<u32>,
    q1: vec4<u32>,
    steps: StepShare,
}

// Chunk `c`'s first sub-block, and this thread's first word (of eight) in that sub-block's.
struct RunWord {
    s: u32,
    k0: u32,
}

fn run_word(c: u32, k0: u32) -> RunWord {
    if pairs() {
        return RunWord(2u * (c % 4u), k0 / 2u);
    }
    return RunWord(c % 8u, k0);
}

fn coop_fetch_weights(c: u32, n0: u32, lid: u32) -> WShare {
    var r: WShare;
    if RUN == 0u {
        r.steps = fetch_steps(c, n0, lid);
        return r;
    }
    let at = run_at(c, n0, lid);
    let rw = run_word(c, at.k0);
    let q = ((at.b >> 2u) + 4u + 8u * (rw.s >> 1u) + rw.k0) >> 2u;
    r.head = select(vec4<u32>(0u), w4[at.b >> 4u], at.live);
    r.q0 = w4[q];
    if run_words() > 4u {
        r.q1 = w4[q + 1u];
    }
    return r;
}

// Word `q`'s elements of sub-block `s` (its nibble half) at `o`, and with KC 64 those of
// sub-block s + 1 (the other half) 32 columns on.
fn put_run_word(o: u32, h: vec4<u32>, q: u32, s: u32) {
    put4(o, vec4<f16>(step_weights_head(h, q, s).a));
    if pairs() {
        put4(o + 32u, vec4<f16>(step_weights_head(h, q, s + 1u).a));
    }
}

// The share into the weight tile at `wbase`; zeros where `keep` is false (a zero head: d =
// dmin = 0).
fn coop_publish_weights(r: WShare, c: u32, wbase: u32, lid: u32, keep: bool) {
    if RUN == 0u {
        publish_steps(r.steps, c, wbase, lid, keep);
        return;
    }
    let at = run_at(c, 0u, lid);
    let rw = run_word(c, at.k0);
    let s = rw.s;
    let o = wbase + at.o + 4u * rw.k0;
    let h = select(vec4<u32>(0u), r.head, keep);
    put_run_word(o, h, r.q0.x, s);
    put_run_word(o + 4u, h, r.q0.y, s);
    put_run_word(o + 8u, h, r.q0.z, s);
    put_run_word(o + 12u, h, r.q0.w, s);
    if run_words() > 4u {
        put_run_word(o + 16u, h, r.q1.x, s);
        put_run_word(o + 20u, h, r.q1.y, s);
        put_run_word(o + 24u, h, r.q1.z, s);
        put_run_word(o + 28u, h, r.q1.w, s);
    }
}
