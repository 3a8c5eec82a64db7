// One decode token's attention inputs in one dispatch: RoPE on the queries (read from `src` at
// element q_src, written to `q_out`) and the keys (read from `src` at k_src), and the rotated
// keys and the values (read from `vsrc` at v_src) appended to the token-major KV cache at
// element offset `dst`. `src` and `vsrc` may be one buffer (the projections' output) or two
// (keys and queries normalized apart from the values); both are only read. Pair i (i < rot_dims / 2) of a head rotates by
// theta = pos * freq_scale * base^(-2i / rot_dims), pairs (2i, 2i + 1) or, with NEOX,
// (i, i + rot_dims / 2). Threads: one per query pair, then one per key pair, then one per
// key/value element (values copied; key elements past rot_dims copied unrotated), then, when
// rot_dims < head_dim, one per query element (those past rot_dims copied unrotated).

struct Params {
    heads: u32,
    kv_heads: u32,
    head_dim: u32,
    rot_dims: u32,
    base: f32,
    freq_scale: f32,
    pos: u32,
    dst: u32,
    grid_x: u32,
    q_src: u32,
    k_src: u32,
    v_src: u32,
}

override WG: u32 = 256u;
override NEOX: u32 = 0u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read> vsrc: array<f32>;
@group(0) @binding(3) var<storage, read_write> q_out: array<f32>;
@group(0) @binding(4) var<storage, read_write> kc: array<f32>;
@group(0) @binding(5) var<storage, read_write> vc: array<f32>;

// Element indices of pair `pair` in head `head`.
fn pair_at(head: u32, pair: u32) -> vec2<u32> {
    let base = head * p.head_dim;
    if NEOX == 1u {
        return vec2<u32>(base + pair, base + pair + p.rot_dims / 2u);
    }
    return vec2<u32>(base + 2u * pair, base + 2u * pair + 1u);
}

fn angle(pair: u32) -> vec2<f32> {
    let theta = f32(p.pos) * p.freq_scale * pow(p.base, -2.0 * f32(pair) / f32(p.rot_dims));
    return vec2<f32>(cos(theta), sin(theta));
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wg.x + wg.y * p.grid_x) * WG + lid;
    let half = p.rot_dims / 2u;
    let nq = p.heads * half;
    let nk = p.kv_heads * half;
    let kv_dim = p.kv_heads * p.head_dim;
    if i < nq {
        let e = pair_at(i / half, i % half);
        let cs = angle(i % half);
        let a = src[p.q_src + e.x];
        let b = src[p.q_src + e.y];
        q_out[e.x] = a * cs.x - b * cs.y;
        q_out[e.y] = a * cs.y + b * cs.x;
    } else if i < nq + nk {
        let j = i - nq;
        let e = pair_at(j / half, j % half);
        let cs = angle(j % half);
        let a = src[p.k_src + e.x];
        let b = src[p.k_src + e.y];
        kc[p.dst + e.x] = a * cs.x - b * cs.y;
        kc[p.dst + e.y] = a * cs.y + b * cs.x;
    } else if i < nq + nk + kv_dim {
        let j = i - nq - nk;
        vc[p.dst + j] = vsrc[p.v_src + j];
        if j % p.head_dim >= p.rot_dims {
            kc[p.dst + j] = src[p.k_src + j];
        }
    } else if i < nq + nk + kv_dim + p.heads * p.head_dim {
        let j = i - nq - nk - kv_dim;
        if j % p.head_dim >= p.rot_dims {
            q_out[j] = src[p.q_src + j];
        }
    }
}
