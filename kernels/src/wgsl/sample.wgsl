// Token sampling in one workgroup over the whole vocabulary, so the chosen id stays on the GPU
// and feeds the next embedding lookup:
// 1. repetition penalty on the distinct recent ids (llama.cpp's rule: positive logits divided
//    by the penalty, negative multiplied), in place;
// 2. the largest logit and its first index; temperature <= 0 is greedy and stops here;
// 3. top-k: radix select (4 passes of 8 bits, parallel 256-bin histograms) of the k-th largest
//    logit key; ties at the threshold are kept;
// 4. p = exp((logit - max) / temperature) for the survivors, written to `probs`;
// 5. top-p: the same radix select over probability keys, each bin weighted by its mass in
//    fixed point (2^24 per whole), keeping the smallest head whose mass reaches top_p;
// 6. an inverse-CDF draw with a Philox4x32-10 uniform keyed by (seed_lo, seed_hi), counter
//    (step, 0, 0, 0), over contiguous per-lane chunks.
// The recent ids are tokens[recent_start .. recent_start + n_recent]; the chosen id is written
// to tokens[out_index] (the sequence buffer the next embedding reads) and to out[0], with how
// many tokens had non-zero probability in out[1].

struct Params {
    vocab: u32,
    top_k: u32,        // 0: off
    n_recent: u32,
    step: u32,
    temperature: f32,
    top_p: f32,        // >= 1: off
    penalty: f32,      // 1: off
    seed_lo: u32,
    seed_hi: u32,
    recent_start: u32,
    out_index: u32,
    _pad0: u32,
}

// Threads (256 or 1024): one workgroup walks the whole vocabulary several times, so more
// threads mean more loads in flight on its one compute unit.
override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> logits: array<f32>;
@group(0) @binding(2) var<storage, read_write> probs: array<f32>;
@group(0) @binding(3) var<storage, read_write> tokens: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;

var<workgroup> hist: array<atomic<u32>, 256>;
var<workgroup> redf: array<f32, WG>;
var<workgroup> redu: array<u32, WG>;
var<workgroup> bcast: array<u32, 4>;

// Order-preserving map of f32 to u32: a larger float has a larger key.
fn key(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

// (low, high) halves of the 64-bit product a * b (WGSL has no 64-bit integers).
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
    let al = a & 0xFFFFu;
    let ah = a >> 16u;
    let bl = b & 0xFFFFu;
    let bh = b >> 16u;
    let ll = al * bl;
    let lh = al * bh;
    let hl = ah * bl;
    let mid = (ll >> 16u) + (lh & 0xFFFFu) + (hl & 0xFFFFu);
    return vec2<u32>((ll & 0xFFFFu) | (mid << 16u), ah * bh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u));
}

// Philox4x32-10 (Salmon et al., Random123).
fn philox(counter: vec4<u32>, k0: u32, k1: u32) -> vec4<u32> {
    var c = counter;
    var key0 = k0;
    var key1 = k1;
    for (var r = 0u; r < 10u; r++) {
        if r > 0u {
            key0 += 0x9E3779B9u;
            key1 += 0xBB67AE85u;
        }
        let a = mul_wide(0xD2511F53u, c.x);
        let b = mul_wide(0xCD9E8D57u, c.z);
        c = vec4<u32>(b.y ^ c.y ^ key0, b.x, a.y ^ c.w ^ key1, a.x);
    }
    return c;
}

// Radix select: the largest key t such that the weight of elements with key >= t reaches
// `goal`. Weights are 1 per element (top-k, keys of logits) or fixed-point masses (top-p,
// keys of probabilities); elements with weight 0 never count.
fn radix_select(lid: u32, goal: u32, on_probs: bool, total: f32) -> u32 {
    var prefix = 0u;
    var above = 0u;
    for (var pass_ = 0u; pass_ < 4u; pass_++) {
        let shift = 24u - 8u * pass_;
        if lid < 256u {
            atomicStore(&hist[lid], 0u);
        }
        workgroupBarrier();
        for (var i = lid; i < p.vocab; i += WG) {
            var k = key(logits[i]);
            var wgt = 1u;
            if on_probs {
                let e = probs[i];
                k = key(e);
                wgt = u32(e / total * 16777216.0);
            }
            // Only elements matching the bits chosen so far (all of them in the first pass).
            let matches = pass_ == 0u || (k >> (shift + 8u)) == (prefix >> (shift + 8u));
            if matches && wgt > 0u {
                atomicAdd(&hist[(k >> shift) & 0xFFu], wgt);
            }
        }
        workgroupBarrier();
        if lid == 0u {
            var b = 255u;
            var sum = above;
            loop {
                let next = sum + atomicLoad(&hist[b]);
                if next >= goal || b == 0u {
                    break;
                }
                sum = next;
                b -= 1u;
            }
            bcast[0] = prefix | (b << shift);
            bcast[1] = sum;
        }
        workgroupBarrier();
        prefix = bcast[0];
        above = bcast[1];
        workgroupBarrier();
    }
    return prefix;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32) {
    // 1. Penalty, once per distinct id (one lane: the recent window is short).
    if lid == 0u && p.penalty != 1.0 {
        for (var r = 0u; r < p.n_recent; r++) {
            let id = tokens[p.recent_start + r];
            var seen = id >= p.vocab;
            for (var s = 0u; s < r && !seen; s++) {
                seen = tokens[p.recent_start + s] == id;
            }
            if !seen {
                let l = logits[id];
                logits[id] = select(l * p.penalty, l / p.penalty, l > 0.0);
            }
        }
    }
    storageBarrier();
    workgroupBarrier();
    // 2. Max and its first index.
    var m = -3.4e38;
    var mi = 0xFFFFFFFFu;
    for (var i = lid; i < p.vocab; i += WG) {
        if logits[i] > m {
            m = logits[i];
            mi = i;
        }
    }
    redf[lid] = m;
    redu[lid] = mi;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if lid < s {
            let ov = redf[lid + s];
            let oi = redu[lid + s];
            if ov > redf[lid] || (ov == redf[lid] && oi < redu[lid]) {
                redf[lid] = ov;
                redu[lid] = oi;
            }
        }
        workgroupBarrier();
    }
    let maxv = redf[0];
    let argmax = redu[0];
    workgroupBarrier();
    if p.temperature <= 0.0 {
        if lid == 0u {
            out[0] = argmax;
            out[1] = 1u;
            tokens[p.out_index] = argmax;
        }
        return;
    }
    // 3. Top-k threshold.
    var limit = 0u;
    if p.top_k > 0u && p.top_k < p.vocab {
        limit = radix_select(lid, p.top_k, false, 1.0);
    }
    // 4. Probabilities of the survivors.
    var z = 0.0;
    for (var i = lid; i < p.vocab; i += WG) {
        var e = 0.0;
        if key(logits[i]) >= limit {
            e = exp((logits[i] - maxv) / p.temperature);
        }
        probs[i] = e;
        z += e;
    }
    storageBarrier();
    redf[lid] = z;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if lid < s {
            redf[lid] += redf[lid + s];
        }
        workgroupBarrier();
    }
    let total = redf[0];
    workgroupBarrier();
    // 5. Top-p threshold on probability keys.
    var pcut = 0u;
    if p.top_p < 1.0 {
        pcut = radix_select(lid, max(u32(p.top_p * 16777216.0), 1u), true, total);
    }
    // 6. Per-lane chunks: drop what top-p cut, sum the rest, scan, draw.
    let chunk = (p.vocab + WG - 1u) / WG;
    let start = min(lid * chunk, p.vocab);
    let end = min(start + chunk, p.vocab);
    var mass = 0.0;
    var kept = 0u;
    for (var i = start; i < end; i++) {
        var e = probs[i];
        if e > 0.0 && key(e) < pcut {
            e = 0.0;
            probs[i] = 0.0;
        }
        mass += e;
        kept += select(0u, 1u, e > 0.0);
    }
    storageBarrier();
    redf[lid] = mass;
    redu[lid] = kept;
    workgroupBarrier();
    for (var o = 1u; o < WG; o <<= 1u) {
        var v = redf[lid];
        var c = redu[lid];
        if lid >= o {
            v += redf[lid - o];
            c += redu[lid - o];
        }
        workgroupBarrier();
        redf[lid] = v;
        redu[lid] = c;
        workgroupBarrier();
    }
    let grand = redf[WG - 1u];
    let r = philox(vec4<u32>(p.step, 0u, 0u, 0u), p.seed_lo, p.seed_hi);
    let u = f32(r.x >> 8u) * (1.0 / 16777216.0) * grand;
    let before = select(0.0, redf[max(lid, 1u) - 1u], lid > 0u);
    if lid == 0u {
        bcast[2] = argmax;
    }
    workgroupBarrier();
    if mass > 0.0 && u >= before && u < redf[lid] {
        var acc = before;
        var chosen = 0xFFFFFFFFu;
        for (var i = start; i < end; i++) {
            let e = probs[i];
            if e > 0.0 {
                chosen = i;
                acc += e;
                if u < acc {
                    break;
                }
            }
        }
        bcast[2] = chosen;
    }
    workgroupBarrier();
    if lid == 0u {
        out[0] = bcast[2];
        out[1] = redu[WG - 1u];
        tokens[p.out_index] = bcast[2];
    }
}
