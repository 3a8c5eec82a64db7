// Second pass of split decode attention: for each head, out = sum_b exp(m_b - M) o_b /
// sum_b exp(m_b - M) l_b over its key blocks (M the largest m_b). A block without keys wrote
// m = -3e38, l = 0, o = 0, so its weight underflows to 0 and no branch is needed.
//
// One workgroup per head. The max and the denominator are workgroup reductions over the
// blocks; then thread (column d, block group g) sums its share of the blocks for column d
// (every load independent of the last) and the groups' sums meet in workgroup memory.

//!include attn_params.wgsl

override WG: u32 = 128u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> part: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

var<workgroup> sums: array<f32, 256>;

//!include wgreduce

@compute @workgroup_size(WG)
fn main(l: Lanes) {
    let h = l.wg.x;
    let hd = p.head_dim;
    let stride = hd + 2u;
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
    // Block groups: WG / hd of them when a head fits the workgroup, else one, with each
    // thread taking columns d, d + WG, ...
    let groups = max(WG / hd, 1u);
    let g = l.lid / hd;
    var acc = 0.0;
    for (var d = l.lid % hd; d < hd; d += WG) {
        var o = 0.0;
        if g < groups {
            for (var b = g; b < p.blocks; b += groups) {
                let base = hb + b * stride;
                o += exp(part[base + hd] - big) * part[base + d];
            }
        }
        if groups == 1u && g == 0u {
            out[h * hd + d] = o / denom;
        }
        acc = o;
    }
    if groups > 1u {
        sums[l.lid] = acc;
        workgroupBarrier();
        if g == 0u {
            var total = 0.0;
            for (var gg = 0u; gg < groups; gg++) {
                total += sums[gg * hd + l.lid];
            }
            out[h * hd + l.lid] = total / denom;
        }
    }
}
