// The tensor-core GEMM's Q4_K weights (gemm_coop.wgsl).
//
// RUN 1 (the default): each thread owns a run of NWS consecutive steps of one tile row (a chunk
// of 32 columns is one sub-block, 8 steps: NWS 8 is the whole sub-block, NWS 4 half of it) and
// fetches it as whole words — the block's 16-byte head and the run's quant words, one vec4 per
// four steps, from `w4` — into its share before the multiplies; it decodes them after
// the multiplies, when the chunk is published. Three loads a chunk instead of two per step
// (sixteen at NWS 8), and none waited for until the tensor cores have had the previous chunk.
// A row past the matrix loads the last row and keeps a zero head (d = dmin = 0: every weight
// decodes to zero), so the loads stay branch-free.
//
// RUN 0: a step at a time as the other types (`fetch_steps`), each step's head one vec4 load
// (docs/performance.md, v33: four scalar loads became one).

fn coop_step(b: u32, s: u32, k: u32) -> StepW {
    return step_weights_head(w4[b >> 4u], w[(b >> 2u) + 4u + 8u * (s >> 1u) + k], s);
}

// This thread's share: a run (the head, zero past the last row, and up to eight quant words),
// or with RUN 0 its decoded steps.
struct WShare {
    head: vec4<u32>,
    q0: vec4<u32>,
    q1: vec4<u32>,
    steps: StepShare,
}

fn coop_fetch_weights(c: u32, n0: u32, lid: u32) -> WShare {
    var r: WShare;
    if RUN == 0u {
        r.steps = fetch_steps(c, n0, lid);
        return r;
    }
    let at = run_at(c, n0, lid);
    let q = ((at.b >> 2u) + 4u + 8u * ((c % 8u) >> 1u) + at.k0) >> 2u;
    r.head = select(vec4<u32>(0u), w4[at.b >> 4u], at.live);
    r.q0 = w4[q];
    if NWS > 4u {
        r.q1 = w4[q + 1u];
    }
    return r;
}

fn put_run_step(o: u32, h: vec4<u32>, q: u32, s: u32) {
    put4(o, vec4<f16>(step_weights_head(h, q, s).a));
}

fn coop_publish_weights(r: WShare, c: u32, wbase: u32, lid: u32) {
    if RUN == 0u {
        publish_steps(r.steps, c, wbase, lid);
        return;
    }
    let s = c % 8u;
    let o = wbase + run_at(c, 0u, lid).o;
    put_run_step(o, r.head, r.q0.x, s);
    put_run_step(o + 4u, r.head, r.q0.y, s);
    put_run_step(o + 8u, r.head, r.q0.z, s);
    put_run_step(o + 12u, r.head, r.q0.w, s);
    if NWS > 4u {
        put_run_step(o + 16u, r.head, r.q1.x, s);
        put_run_step(o + 20u, r.head, r.q1.y, s);
        put_run_step(o + 24u, r.head, r.q1.z, s);
        put_run_step(o + 28u, r.head, r.q1.w, s);
    }
}
