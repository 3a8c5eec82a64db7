// Second pass of split decode attention: for each head, out = sum_b exp(m_b - M) o_b /
// sum_b exp(m_b - M) l_b over its key blocks (M the largest m_b). A block without keys wrote
// m = -3e38, l = 0, o = 0, so its weight underflows to 0 and no branch is needed.
//
// Workgroup (head, chunk of CW columns). The max and the denominator are workgroup reductions
// over the head's blocks (each workgroup of a head repeats them: a few dozen loads); then thread
// (column c, block group g) sums its share of the blocks for column c, every load independent
// of the last, and the groups' sums meet in workgroup memory. Chunks give a decode step's few
// heads enough workgroups to keep the loads short.
//
// BLOCKS 1 (head_dim a multiple of CW): a chunk is one 32-value block of the output row, which
// goes out as the int8 block gemv_q8.wgsl reads (12 words, q8_grid.wgsl's grid) instead of
// f32: the output projection's int8 input in this dispatch, the same numbers as the f32 row
// quantized apart.

//!include attn_params.wgsl

override WG: u32 = 128u;
override BLOCKS: u32 = 0u;
const CW: u32 = 32u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> part: array<f32>;
// f32 results as their bits, so that BLOCKS 1 can store packed int8 words.
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

var<workgroup> sums: array<f32, 256>;

//!include wgreduce
//!include q8_grid.wgsl

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
    var value = 0.0;
    if g == 0u && d < hd {
        var total = 0.0;
        for (var gg = 0u; gg < groups; gg++) {
            total += sums[gg * CW + c];
        }
        value = total / denom;
        if BLOCKS == 0u {
            out[h * hd + d] = bitcast<u32>(value);
        }
    }
    if BLOCKS == 1u {
        write_block(l.lid, (h * hd + l.wg.y * CW) / CW, value);
    }
}

// BLOCKS 1: the chunk's values (thread c of group 0 holds column c) as int8 block `b` of the
// output row: eight threads each pack four quants, the first also writes the scale and the
// scale times the quants' sum.
fn write_block(lid: u32, b: u32, value: f32) {
    workgroupBarrier();
    if lid < CW {
        sums[lid] = value;
    }
    workgroupBarrier();
    if lid >= CW / 4u {
        return;
    }
    var amax = 0.0;
    for (var k = 0u; k < CW / 4u; k++) {
        let a = abs(chunk4(k));
        amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
    }
    let d = q8_scale(amax);
    out[12u * b + lid] = pack4xI8Clamp(q8_quants(chunk4(lid), d));
    if lid == 0u {
        var sum = 0.0;
        for (var k = 0u; k < CW / 4u; k++) {
            let q = q8_quants(chunk4(k), d);
            sum += f32(q.x + q.y + q.z + q.w);
        }
        out[12u * b + 8u] = bitcast<u32>(d);
        out[12u * b + 9u] = bitcast<u32>(d * sum);
        out[12u * b + 10u] = 0u;
        out[12u * b + 11u] = 0u;
    }
}

fn chunk4(k: u32) -> vec4<f32> {
    return vec4<f32>(sums[4u * k], sums[4u * k + 1u], sums[4u * k + 2u], sums[4u * k + 3u]);
}
