// Second pass of split decode attention: for each head, out = sum_b exp(m_b - M) o_b /
// sum_b exp(m_b - M) l_b over its key blocks (M the largest m_b); blocks without keys have
// l = 0 and drop out.

//!include attn_params.wgsl

override WG: u32 = 128u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> part: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let h = wg.x;
    let stride = p.head_dim + 2u;
    let hb = h * p.blocks * stride;
    var big = -3.0e38;
    for (var b = 0u; b < p.blocks; b++) {
        if part[hb + b * stride + p.head_dim + 1u] > 0.0 {
            big = max(big, part[hb + b * stride + p.head_dim]);
        }
    }
    var denom = 0.0;
    for (var b = 0u; b < p.blocks; b++) {
        let lb = part[hb + b * stride + p.head_dim + 1u];
        if lb > 0.0 {
            denom += exp(part[hb + b * stride + p.head_dim] - big) * lb;
        }
    }
    for (var d = lid; d < p.head_dim; d += WG) {
        var o = 0.0;
        for (var b = 0u; b < p.blocks; b++) {
            let base = hb + b * stride;
            if part[base + p.head_dim + 1u] > 0.0 {
                o += exp(part[base + p.head_dim] - big) * part[base + d];
            }
        }
        out[h * p.head_dim + d] = o / denom;
    }
}
