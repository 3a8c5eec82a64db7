// Preparing a token's attention inputs (shared by decode attention and the prefill
// preparation pass): one head vector of the projections' output loaded into workgroup memory,
// normalized (optional per-head RMSNorm: Gemma's QK-norm), and read back rotated (RoPE, pair
// layout NEOX). The including kernel declares `p` (attn_params.wgsl), `qkv`, `nw`, WG, NEOX
// and includes a workgroup reduction.

var<workgroup> head: array<f32, 256>;

// Loads one head vector from qkv[base..] into `head`, normalized with the
// weights at nw[w0..] when a norm is set. Called by the whole workgroup.
fn load_head(l: Lanes, base: u32, w0: u32) {
    var sq = 0.0;
    for (var d = l.lid; d < p.head_dim; d += WG) {
        let x = qkv[base + d];
        head[d] = x;
        sq += x * x;
    }
    let total = wg_sum(l, sq);
    if p.norm > 0u {
        let inv = inverseSqrt(total / f32(p.head_dim) + p.eps);
        for (var d = l.lid; d < p.head_dim; d += WG) {
            var w = nw[w0 + d];
            if p.norm == 2u {
                w += 1.0;
            }
            head[d] *= inv * w;
        }
    }
    workgroupBarrier();
}

// Element d of `head` after RoPE at position `pos`.
fn rotated(d: u32, pos: u32) -> f32 {
    if d >= p.rot_dims {
        return head[d];
    }
    let half = p.rot_dims / 2u;
    var i: u32;
    var a: u32;
    var b: u32;
    var second: bool;
    if NEOX == 1u {
        i = d % half;
        a = d - select(0u, half, d >= half);
        b = a + half;
        second = d >= half;
    } else {
        i = d / 2u;
        a = d & ~1u;
        b = a + 1u;
        second = (d & 1u) == 1u;
    }
    let theta = f32(pos) * p.freq_scale * pow(p.rope_base, -2.0 * f32(i) / f32(p.rot_dims));
    let c = cos(theta);
    let s = sin(theta);
    if second {
        return head[a] * s + head[b] * c;
    }
    return head[a] * c - head[b] * s;
}
