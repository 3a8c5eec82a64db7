//! Attention kernels. Decode: one query row per head against the KV cache (GQA, sliding
//! window, optional logit soft cap), split over blocks of keys so that every key block is a
//! workgroup, then combined per head.

use bytemuck::{Pod, Zeroable};

use crate::kernel::{Family, KernelSpec};
use crate::source::Reduction;

/// The uniform block of `attn_decode.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct DecodeAttnParams {
    /// Query heads.
    pub heads: u32,
    /// KV heads (divides `heads`).
    pub kv_heads: u32,
    /// Elements per head.
    pub head_dim: u32,
    /// Valid cache positions, the current token's included.
    pub n_keys: u32,
    /// Positions the cache holds (`k`, `v` are `[max_ctx, kv_heads, head_dim]`).
    pub max_ctx: u32,
    /// Sliding window in positions (0 = none).
    pub window: u32,
    /// Score multiplier (usually 1/sqrt(head_dim)).
    pub scale: f32,
    /// Logit soft cap (0 = none).
    pub cap: f32,
    /// Key blocks per head (set by the launcher: `ceil(n_keys / WG)`).
    pub blocks: u32,
    /// Padding.
    pub pad: [u32; 3],
}

/// The uniform block of `kv_store.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct KvStoreParams {
    /// Elements to copy into each cache (`tokens * kv_heads * head_dim`).
    pub n: u32,
    /// Element offset of the first destination (`position * kv_heads * head_dim`).
    pub dst: u32,
    /// Workgroups along x.
    pub grid_x: u32,
    /// Padding.
    pub pad: u32,
}

/// The KV-append variant.
pub fn kv_store_spec(wg: u32) -> KernelSpec {
    KernelSpec {
        family: Family::KvStore,
        quant: None,
        reduction: None,
        constants: vec![("WG", wg)],
    }
}

/// The uniform block of `rope_store.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct RopeStoreParams {
    /// Query heads.
    pub heads: u32,
    /// KV heads.
    pub kv_heads: u32,
    /// Elements per head.
    pub head_dim: u32,
    /// Rotated elements per head (even, at most `head_dim`).
    pub rot_dims: u32,
    /// Frequency base.
    pub base: f32,
    /// Position scaling (1 = none).
    pub freq_scale: f32,
    /// The token's position.
    pub pos: u32,
    /// Element offset of the token's row in the caches (`pos * kv_heads * head_dim`).
    pub dst: u32,
    /// Workgroups along x (set by the launcher).
    pub grid_x: u32,
    /// Element offset of the queries in the `src` binding.
    pub q_src: u32,
    /// Element offset of the keys in the `src` binding.
    pub k_src: u32,
    /// Element offset of the values in the `vsrc` binding.
    pub v_src: u32,
}

/// The fused RoPE + KV-append variant.
pub fn rope_store_spec(neox: bool, wg: u32) -> KernelSpec {
    KernelSpec {
        family: Family::RopeStore,
        quant: None,
        reduction: None,
        constants: vec![("WG", wg), ("NEOX", u32::from(neox))],
    }
}

/// Allowed workgroup sizes.
pub const WG_VALUES: [u32; 3] = [64, 128, 256];

/// The decode-attention variant.
pub fn decode_spec(wg: u32, reduction: Reduction) -> KernelSpec {
    KernelSpec {
        family: Family::AttnDecode,
        quant: None,
        reduction: Some(reduction),
        constants: vec![("WG", wg)],
    }
}

/// The combining pass.
pub fn combine_spec(wg: u32) -> KernelSpec {
    KernelSpec {
        family: Family::AttnCombine,
        quant: None,
        reduction: None,
        constants: vec![("WG", wg)],
    }
}

/// CPU reference of `attn_decode.wgsl`.
pub fn decode_reference(p: &DecodeAttnParams, q: &[f32], k: &[f32], v: &[f32]) -> Vec<f32> {
    let (hd, kvn) = (p.head_dim as usize, p.kv_heads as usize);
    let group = (p.heads / p.kv_heads) as usize;
    let first = if p.window > 0 && p.n_keys > p.window {
        (p.n_keys - p.window) as usize
    } else {
        0
    };
    let mut out = vec![0.0f32; p.heads as usize * hd];
    for h in 0..p.heads as usize {
        let kvh = h / group;
        let qh = &q[h * hd..(h + 1) * hd];
        let scores: Vec<f64> = (first..p.n_keys as usize)
            .map(|j| {
                let kj = &k[(j * kvn + kvh) * hd..(j * kvn + kvh + 1) * hd];
                let s = qh
                    .iter()
                    .zip(kj)
                    .map(|(a, b)| f64::from(*a) * f64::from(*b))
                    .sum::<f64>()
                    * f64::from(p.scale);
                if p.cap > 0.0 {
                    f64::from(p.cap) * (s / f64::from(p.cap)).tanh()
                } else {
                    s
                }
            })
            .collect();
        let m = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = scores.iter().map(|s| (s - m).exp()).collect();
        let sum: f64 = e.iter().sum();
        for d in 0..hd {
            let acc: f64 = e
                .iter()
                .enumerate()
                .map(|(i, w)| w * f64::from(v[((first + i) * kvn + kvh) * hd + d]))
                .sum();
            out[h * hd + d] = (acc / sum) as f32;
        }
    }
    out
}
