// Rotary position embedding, in place on x = [tokens, heads, head_dim]; token t has position
// pos_base + pos[t] (decode binds a zero and sets pos_base; prefill binds 0..n). Pair i (i < rot_dims / 2) rotates by theta = pos * freq_scale * base^(-2i / rot_dims):
// NEOX 0 rotates elements (2i, 2i + 1) (GGUF's "normal" llama layout), NEOX 1 rotates
// (i, i + rot_dims / 2). Dimensions past rot_dims are left alone.

struct Params {
    tokens: u32,
    heads: u32,
    head_dim: u32,
    rot_dims: u32,
    base: f32,
    freq_scale: f32,
    grid_x: u32,
    pos_base: u32,
}

override WG: u32 = 256u;
override NEOX: u32 = 0u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@group(0) @binding(2) var<storage, read> pos: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let half = p.rot_dims / 2u;
    let i = (wg.x + wg.y * p.grid_x) * WG + lid;
    if i >= p.tokens * p.heads * half {
        return;
    }
    let pair = i % half;
    let head = (i / half) % p.heads;
    let token = i / (half * p.heads);
    let base = (token * p.heads + head) * p.head_dim;
    let theta = f32(p.pos_base + pos[token]) * p.freq_scale * pow(p.base, -2.0 * f32(pair) / f32(p.rot_dims));
    var i0 = base + 2u * pair;
    var i1 = i0 + 1u;
    if NEOX == 1u {
        i0 = base + pair;
        i1 = base + pair + half;
    }
    let c = cos(theta);
    let s = sin(theta);
    let a = x[i0];
    let b = x[i1];
    x[i0] = a * c - b * s;
    x[i1] = a * s + b * c;
}
