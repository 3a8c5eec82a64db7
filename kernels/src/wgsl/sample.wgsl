// Token sampling over the whole GPU, so the chosen id stays on the GPU and feeds the next
// embedding lookup. The vocabulary is cut into slices of SLICE logits, one workgroup each
// (G = ceil(vocab / SLICE) of them); the work runs as a chain of stages (STAGE, one dispatch
// each), the per-slice ones writing partials into `part` and one-workgroup ones combining
// them into the state words at ST:
// 0 PENALTY (one workgroup, when a penalty is set): repetition penalty on the distinct recent
//   ids (llama.cpp's rule: positive logits divided by the penalty, negative multiplied);
// 1 MAX (slices): each slice's largest logit and its first index;
// 2 MAX_COMBINE (one): the largest logit and its first index; temperature <= 0 is greedy and
//   writes the id here (the chain stops);
// 3 HIST (slices) and 4 SELECT (one), four rounds of each: radix select, 8 bits a round from
//   the top, of the k-th largest logit key (top-k, count weights; ties at the threshold kept)
//   or of the probability key where the mass from the top reaches top_p (weights in fixed
//   point, 2^24 per whole, so the sums are exact integers): HIST builds each slice's 256-bin
//   histogram of the keys that match the bits chosen so far and adds it to the round's global
//   bins (atomics: one-workgroup adding of every slice's bins was a chain of dependent loads,
//   ~70 µs a round at 256 slices on an H200), SELECT picks the next 8 bits from them;
// 5 PROBS (slices): p = exp((logit - max) / temperature) for logits at or above the top-k
//   threshold (0 otherwise) into `probs`, and each slice's sum;
// 6 MASS (slices): probabilities below the top-p threshold zeroed; each slice's kept mass
//   and count;
// 7 DRAW (one): an inverse-CDF draw with the uniform u = (draw >> 8) / 2^24, `draw` the
//   Philox4x32-10 word the host computed for the row's seed and step (`sample::draw_word`):
//   the slice whose running mass passes u, then the element within it. The id goes to
//   tokens[out_index] (the sequence buffer) and out[0], the kept count to out[1]. (Philox
//   ran here until v41: its ten unrolled rounds of 16-bit multiplies took lavapipe ~9 s to
//   compile, a stall before a CPU adapter's first sampled token, for a value the host knows
//   when it records the draw.)
// The recent ids are tokens[recent_start .. recent_start + n_recent]. Sums over slices are
// taken in slice order by one workgroup's fixed tree, so every workgroup that needs a total
// computes the same bits. One workgroup used to do all of this (0.9 ms at 262,144 logits on
// an H200: it reads the vocabulary seven times on one compute unit); the slices spread those
// reads over the GPU.

struct Params {
    vocab: u32,
    top_k: u32,        // 0: off
    n_recent: u32,
    draw: u32,
    temperature: f32,
    top_p: f32,        // >= 1: off
    penalty: f32,      // 1: off
    recent_start: u32,
    out_index: u32,
    round: u32,        // HIST, SELECT: the round (0-3), plus 16 for the top-p select
}

const WG: u32 = 256u;
// Logits per slice: four per thread.
const SLICE: u32 = 1024u;
override STAGE: u32 = 0u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> logits: array<f32>;
@group(0) @binding(2) var<storage, read_write> probs: array<f32>;
@group(0) @binding(3) var<storage, read_write> tokens: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;
// Partials and state (`sample::scratch_words`): the rounds' global histograms [8, 256], then per
// slice (max bits, index), sum bits, (kept mass bits, kept count), then the state words. Atomic
// for the histograms; everything else goes through pget/pset.
@group(0) @binding(5) var<storage, read_write> part: array<atomic<u32>>;

var<workgroup> hist: array<atomic<u32>, 256>;
var<workgroup> redf: array<f32, WG>;
var<workgroup> redu: array<u32, WG>;
var<workgroup> bcast: array<u32, 2>;

// The radix rounds: 4 of top-k, then 4 of top-p.
const ROUNDS: u32 = 8u;
const HISTS: u32 = ROUNDS * 256u;

fn groups() -> u32 {
    return (p.vocab + SLICE - 1u) / SLICE;
}
// The global bins of this dispatch's round.
fn hist_at() -> u32 {
    return ((p.round & 3u) + select(0u, 4u, p.round >= 16u)) * 256u;
}
fn max_at(g: u32) -> u32 {
    return HISTS + 2u * g;
}
fn sum_at(g: u32) -> u32 {
    return HISTS + groups() * 2u + g;
}
fn mass_at(g: u32) -> u32 {
    return HISTS + groups() * 3u + 2u * g;
}
// State: 0 max bits, 1 its index, 2 top-k prefix, 3 top-k weight above it, 4 top-p prefix,
// 5 top-p weight above it.
fn st(i: u32) -> u32 {
    return HISTS + groups() * 5u + i;
}

fn pget(i: u32) -> u32 {
    return atomicLoad(&part[i]);
}
fn pset(i: u32, v: u32) {
    atomicStore(&part[i], v);
}

// Order-preserving map of f32 to u32: a larger float has a larger key.
fn key(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

// The workgroup's sum of v in a fixed order (the same bits in every workgroup).
fn wg_sum_f(lid: u32, v: f32) -> f32 {
    redf[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if lid < s {
            redf[lid] += redf[lid + s];
        }
        workgroupBarrier();
    }
    let total = redf[0];
    workgroupBarrier();
    return total;
}

// The sum of the slices' probability sums (PROBS), in slice order per thread then the tree.
fn total_mass(lid: u32) -> f32 {
    var z = 0.0;
    for (var g = lid; g < groups(); g += WG) {
        z += bitcast<f32>(pget(sum_at(g)));
    }
    return wg_sum_f(lid, z);
}

// (max, first index) of (v, i) over the workgroup.
fn wg_argmax(lid: u32, v: f32, i: u32) -> vec2<u32> {
    redf[lid] = v;
    redu[lid] = i;
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
    return vec2<u32>(bitcast<u32>(redf[0]), redu[0]);
}

fn penalty(lid: u32) {
    // Once per distinct id (one lane: the recent window is short).
    if lid == 0u {
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
}

fn slice_max(lid: u32, g: u32) {
    var m = -3.4e38;
    var mi = 0xFFFFFFFFu;
    for (var k = 0u; k < 4u; k++) {
        let i = g * SLICE + k * WG + lid;
        if i < p.vocab && logits[i] > m {
            m = logits[i];
            mi = i;
        }
    }
    let best = wg_argmax(lid, m, mi);
    if lid == 0u {
        pset(max_at(g), best.x);
        pset(max_at(g) + 1u, best.y);
    }
}

fn max_combine(lid: u32) {
    var m = -3.4e38;
    var mi = 0xFFFFFFFFu;
    for (var g = lid; g < groups(); g += WG) {
        let v = bitcast<f32>(pget(max_at(g)));
        let i = pget(max_at(g) + 1u);
        if v > m || (v == m && i < mi) {
            m = v;
            mi = i;
        }
    }
    let best = wg_argmax(lid, m, mi);
    // Clear the rounds' bins for the HIST stages that follow.
    for (var i = lid; i < HISTS; i += WG) {
        pset(i, 0u);
    }
    if lid == 0u {
        pset(st(0u), best.x);
        pset(st(1u), best.y);
        for (var s = 2u; s < 6u; s++) {
            pset(st(s), 0u);
        }
        if p.temperature <= 0.0 {
            out[0] = best.y;
            out[1] = 1u;
            tokens[p.out_index] = best.y;
        }
    }
}

// The key and weight of element i in a select: logit keys with weight 1 (top-k), or
// probability keys weighted in fixed point against `total` (top-p).
fn keyed(i: u32, on_probs: bool, total: f32) -> vec2<u32> {
    if on_probs {
        let e = probs[i];
        return vec2<u32>(key(e), u32(e / total * 16777216.0));
    }
    return vec2<u32>(key(logits[i]), 1u);
}

fn slice_hist(lid: u32, g: u32) {
    let on_probs = p.round >= 16u;
    let pass_ = p.round & 3u;
    let shift = 24u - 8u * pass_;
    let prefix = pget(st(select(2u, 4u, on_probs)));
    var total = 1.0;
    if on_probs {
        total = total_mass(lid);
    }
    atomicStore(&hist[lid], 0u);
    workgroupBarrier();
    for (var k = 0u; k < 4u; k++) {
        let i = g * SLICE + k * WG + lid;
        if i < p.vocab {
            let kw = keyed(i, on_probs, total);
            // Only elements matching the bits chosen so far (all of them in the first round).
            let matches = pass_ == 0u || (kw.x >> (shift + 8u)) == (prefix >> (shift + 8u));
            if matches && kw.y > 0u {
                atomicAdd(&hist[(kw.x >> shift) & 0xFFu], kw.y);
            }
        }
    }
    workgroupBarrier();
    let n = atomicLoad(&hist[lid]);
    if n > 0u {
        atomicAdd(&part[hist_at() + lid], n);
    }
}

fn select_bits(lid: u32) {
    let on_probs = p.round >= 16u;
    let shift = 24u - 8u * (p.round & 3u);
    let at = select(2u, 4u, on_probs);
    atomicStore(&hist[lid], pget(hist_at() + lid));
    workgroupBarrier();
    if lid == 0u {
        var goal = p.top_k;
        if on_probs {
            goal = max(u32(p.top_p * 16777216.0), 1u);
        }
        let prefix = pget(st(at));
        var sum = pget(st(at + 1u));
        var b = 255u;
        loop {
            let next = sum + atomicLoad(&hist[b]);
            if next >= goal || b == 0u {
                break;
            }
            sum = next;
            b -= 1u;
        }
        pset(st(at), prefix | (b << shift));
        pset(st(at + 1u), sum);
    }
}

fn slice_probs(lid: u32, g: u32) {
    let maxv = bitcast<f32>(pget(st(0u)));
    let limit = select(0u, pget(st(2u)), p.top_k > 0u && p.top_k < p.vocab);
    var z = 0.0;
    for (var k = 0u; k < 4u; k++) {
        let i = g * SLICE + k * WG + lid;
        if i < p.vocab {
            var e = 0.0;
            if key(logits[i]) >= limit {
                e = exp((logits[i] - maxv) / p.temperature);
            }
            probs[i] = e;
            z += e;
        }
    }
    let total = wg_sum_f(lid, z);
    if lid == 0u {
        pset(sum_at(g), bitcast<u32>(total));
    }
}

fn slice_mass(lid: u32, g: u32) {
    let pcut = select(0u, pget(st(4u)), p.top_p < 1.0);
    // Contiguous chunks per thread, so that DRAW can walk them in id order.
    var mass = 0.0;
    var kept = 0u;
    for (var k = 0u; k < 4u; k++) {
        let i = g * SLICE + 4u * lid + k;
        if i < p.vocab {
            var e = probs[i];
            if e > 0.0 && key(e) < pcut {
                e = 0.0;
                probs[i] = 0.0;
            }
            mass += e;
            kept += select(0u, 1u, e > 0.0);
        }
    }
    let m = wg_sum_f(lid, mass);
    // Counts are exact in f32 (at most 2^24).
    let c = u32(wg_sum_f(lid, f32(kept)));
    if lid == 0u {
        pset(mass_at(g), bitcast<u32>(m));
        pset(mass_at(g) + 1u, c);
    }
}

// (exclusive, inclusive) prefix sums of v over the workgroup (Hillis-Steele). The exclusive
// sum is the previous thread's inclusive one, so the ranges [exclusive, inclusive) tile
// [0, total) exactly: a value falls in one range, never between or in two.
fn wg_scan(lid: u32, v: f32) -> vec2<f32> {
    redf[lid] = v;
    workgroupBarrier();
    for (var o = 1u; o < WG; o <<= 1u) {
        var s = redf[lid];
        if lid >= o {
            s += redf[lid - o];
        }
        workgroupBarrier();
        redf[lid] = s;
        workgroupBarrier();
    }
    let r = vec2<f32>(select(0.0, redf[max(lid, 1u) - 1u], lid > 0u), redf[lid]);
    workgroupBarrier();
    return r;
}

fn draw(lid: u32) {
    // Slice masses in slice order: per-thread runs of consecutive slices, then a scan.
    let per = (groups() + WG - 1u) / WG;
    let first = min(lid * per, groups());
    let last = min(first + per, groups());
    var run = 0.0;
    var kept = 0u;
    for (var g = first; g < last; g++) {
        run += bitcast<f32>(pget(mass_at(g)));
        kept += pget(mass_at(g) + 1u);
    }
    let count = u32(wg_sum_f(lid, f32(kept)));
    let range = wg_scan(lid, run);
    // The scan's total, still in workgroup memory.
    let grand = redf[WG - 1u];
    let u = f32(p.draw >> 8u) * (1.0 / 16777216.0) * grand;
    if lid == 0u {
        bcast[0] = 0xFFFFFFFFu;
        bcast[1] = 0u;
    }
    workgroupBarrier();
    // The slice where the running mass passes u (the thread's last slice with mass when its
    // own running sum falls short of its range's end by a rounding).
    if run > 0.0 && u >= range.x && u < range.y {
        var acc = range.x;
        var pick = 0xFFFFFFFFu;
        var pick_before = acc;
        for (var g = first; g < last; g++) {
            let m = bitcast<f32>(pget(mass_at(g)));
            if m > 0.0 {
                pick = g;
                pick_before = acc;
                if u < acc + m {
                    break;
                }
                acc += m;
            }
        }
        bcast[0] = pick;
        bcast[1] = bitcast<u32>(pick_before);
    }
    let g = workgroupUniformLoad(&bcast[0]);
    var chosen = pget(st(1u));
    if g != 0xFFFFFFFFu {
        let before = bitcast<f32>(workgroupUniformLoad(&bcast[1]));
        // Within the slice: each thread's four elements, scanned; u placed in the scan's
        // total as it sits in the slice's mass (the two sums differ in their last bits).
        var mine = 0.0;
        for (var k = 0u; k < 4u; k++) {
            let i = g * SLICE + 4u * lid + k;
            if i < p.vocab {
                mine += probs[i];
            }
        }
        let own = wg_scan(lid, mine);
        let scanned = redf[WG - 1u];
        let slice_mass = bitcast<f32>(pget(mass_at(g)));
        let v = min((u - before) * (scanned / slice_mass), scanned * 0.99999994);
        workgroupBarrier();
        if lid == 0u {
            bcast[0] = pget(st(1u));
        }
        workgroupBarrier();
        if mine > 0.0 && v >= own.x && v < own.y {
            var acc = own.x;
            var pick = 0xFFFFFFFFu;
            for (var k = 0u; k < 4u; k++) {
                let i = g * SLICE + 4u * lid + k;
                if i < p.vocab && probs[i] > 0.0 {
                    pick = i;
                    acc += probs[i];
                    if v < acc {
                        break;
                    }
                }
            }
            bcast[0] = pick;
        }
        workgroupBarrier();
        chosen = bcast[0];
    }
    if lid == 0u {
        out[0] = chosen;
        out[1] = count;
        tokens[p.out_index] = chosen;
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>) {
    switch STAGE {
        case 0u: { penalty(lid); }
        case 1u: { slice_max(lid, wg.x); }
        case 2u: { max_combine(lid); }
        case 3u: { slice_hist(lid, wg.x); }
        case 4u: { select_bits(lid); }
        case 5u: { slice_probs(lid, wg.x); }
        case 6u: { slice_mass(lid, wg.x); }
        default: { draw(lid); }
    }
}
