// Second pass of split decode attention: for each head, out = sum_b exp(m_b - M) o_b /
// sum_b exp(m_b - M) l_b over its key blocks (M the largest m_b). A block without keys wrote
// m = -3e38, l = 0, o = 0, so its weight underflows to 0 and no branch is needed.
//
// Workgroup (head, chunk of CW columns). The max and the denominator are workgroup reductions
// over the head's blocks (each workgroup of a head repeats them: a few dozen loads); then thread
// (column c, block group g) sums its share of the blocks for column c, every load independent
// of the last, and the groups' sums meet in workgroup memory. Chunks give a decode step's few
// heads enough workgroups to keep the loads short.

//!include attn_params.wgsl

override WG: u32 = 128u;
const CW: u32 = 32u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> part: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

var<workgroup> sums: array<f32, 256>;

//!include wgreduce

@compute @workgroup_size(WG)
fn main(l: Lanes) {
    let h = l.wg.x;
    let hd = p.head_dim;
    let stride = part_stride();
    let hb = h * p.blocks * stride;
    var mx = -3.0e38;
    for (var b = l.lid; b < p.blocks; b += WG) {
        mx = max(mx, part[hb + b * stride + hd]);
    }
    let big = wg_max(l, mx);
    var den = 0.0;
    for (var b = l.lid; b < p.blocks; b += WG) {
        let base = hb + b * stride;
        den += exp(part[base + hd] - big) * part[base + hd + 1u];
    }
    let denom = wg_sum(l, den);
    let groups = WG / CW;
    let c = l.lid % CW;
    let g = l.lid / CW;
    let d = l.wg.y * CW + c;
    var o = 0.0;
    if d < hd {
        for (var b = g; b < p.blocks; b += groups) {
            let base = hb + b * stride;
            o += exp(part[base + hd] - big) * part[base + d];
        }
    }
    sums[l.lid] = o;
    workgroupBarrier();
    if g == 0u && d < hd {
        var total = 0.0;
        for (var gg = 0u; gg < groups; gg++) {
            total += sums[gg * CW + c];
        }
        out[h * hd + d] = total / denom;
    }
}
