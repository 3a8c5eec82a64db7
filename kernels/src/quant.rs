//! GGUF tensor element types and their block layouts, with the CPU reference dequantization.
//!
//! Layouts are ggml's (facts carried over, code written here): little-endian, blocks stored
//! back to back, each row of a tensor a whole number of blocks. Every multiply-add that the GPU
//! kernels perform as one `fma` is an explicit [`f32::mul_add`] here, so GPU and CPU round
//! identically and dequantization is bit-exact between them.

use half::f16;

pub use gpuport_gguf::GgmlType;

fn f16_at(b: &[u8], i: usize) -> f32 {
    f16::from_le_bytes([b[i], b[i + 1]]).to_f32()
}

/// The 6-bit scale and min of sub-block `j` (0..8) of a Q4_K/Q5_K block's 12 scale bytes.
pub fn k_scale_min(scales: &[u8], j: usize) -> (u8, u8) {
    if j < 4 {
        (scales[j] & 63, scales[j + 4] & 63)
    } else {
        let sc = (scales[j + 4] & 0x0F) | ((scales[j - 4] >> 6) << 4);
        let m = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
        (sc, m)
    }
}

/// Dequantizes one block of `ty` from `block` (exactly `ty.block_bytes()` long) into `out`
/// (exactly `ty.block_elems()` long).
pub fn dequantize_block(ty: GgmlType, block: &[u8], out: &mut [f32]) {
    debug_assert_eq!(block.len(), ty.block_bytes());
    debug_assert_eq!(out.len(), ty.block_elems());
    match ty {
        GgmlType::F32 => out[0] = f32::from_le_bytes([block[0], block[1], block[2], block[3]]),
        GgmlType::F16 => out[0] = f16_at(block, 0),
        GgmlType::Q4_0 => {
            let d = f16_at(block, 0);
            for j in 0..16 {
                let q = block[2 + j];
                out[j] = f32::from(q & 0x0F) - 8.0;
                out[j + 16] = f32::from(q >> 4) - 8.0;
            }
            out.iter_mut().for_each(|x| *x *= d);
        }
        GgmlType::Q4_1 => {
            let (d, m) = (f16_at(block, 0), f16_at(block, 2));
            for j in 0..16 {
                let q = block[4 + j];
                out[j] = f32::from(q & 0x0F).mul_add(d, m);
                out[j + 16] = f32::from(q >> 4).mul_add(d, m);
            }
        }
        GgmlType::Q5_0 | GgmlType::Q5_1 => {
            let (d, m, qh_at) = if ty == GgmlType::Q5_0 {
                (f16_at(block, 0), 0.0, 2)
            } else {
                (f16_at(block, 0), f16_at(block, 2), 4)
            };
            let qh = u32::from_le_bytes([
                block[qh_at],
                block[qh_at + 1],
                block[qh_at + 2],
                block[qh_at + 3],
            ]);
            for j in 0..16 {
                let q = block[qh_at + 4 + j];
                let lo = u32::from(q & 0x0F) | (((qh >> j) & 1) << 4);
                let hi = u32::from(q >> 4) | (((qh >> (j + 16)) & 1) << 4);
                if ty == GgmlType::Q5_0 {
                    out[j] = (lo as f32 - 16.0) * d;
                    out[j + 16] = (hi as f32 - 16.0) * d;
                } else {
                    out[j] = (lo as f32).mul_add(d, m);
                    out[j + 16] = (hi as f32).mul_add(d, m);
                }
            }
        }
        GgmlType::Q8_0 => {
            let d = f16_at(block, 0);
            for j in 0..32 {
                out[j] = f32::from(block[2 + j] as i8) * d;
            }
        }
        GgmlType::Q4K | GgmlType::Q5K => {
            let (d, dmin) = (f16_at(block, 0), f16_at(block, 2));
            let scales = &block[4..16];
            let (qh, qs) = if ty == GgmlType::Q5K {
                (Some(&block[16..48]), &block[48..176])
            } else {
                (None, &block[16..144])
            };
            for chunk in 0..4 {
                for half in 0..2 {
                    let sub = 2 * chunk + half;
                    let (sc, mn) = k_scale_min(scales, sub);
                    let scale = d * f32::from(sc);
                    let min = dmin * f32::from(mn);
                    for l in 0..32 {
                        let byte = qs[32 * chunk + l];
                        let mut q = u32::from(if half == 0 { byte & 0x0F } else { byte >> 4 });
                        if let Some(qh) = qh {
                            q |= u32::from((qh[l] >> sub) & 1) << 4;
                        }
                        out[32 * sub + l] = scale.mul_add(q as f32, -min);
                    }
                }
            }
        }
        GgmlType::Q6K => {
            let (ql, qh, sc) = (&block[0..128], &block[128..192], &block[192..208]);
            let d = f16_at(block, 208);
            for half in 0..2 {
                let (ql, qh, sc) = (&ql[64 * half..], &qh[32 * half..], &sc[8 * half..]);
                for l in 0..32 {
                    let is = l / 16;
                    let h = qh[l];
                    let q1 = i32::from((ql[l] & 0x0F) | ((h & 3) << 4)) - 32;
                    let q2 = i32::from((ql[l + 32] & 0x0F) | (((h >> 2) & 3) << 4)) - 32;
                    let q3 = i32::from((ql[l] >> 4) | (((h >> 4) & 3) << 4)) - 32;
                    let q4 = i32::from((ql[l + 32] >> 4) | (((h >> 6) & 3) << 4)) - 32;
                    let base = 128 * half;
                    for (k, q) in [q1, q2, q3, q4].into_iter().enumerate() {
                        let scale = d * f32::from(sc[is + 2 * k] as i8);
                        out[base + 32 * k + l] = scale * q as f32;
                    }
                }
            }
        }
    }
}

/// Dequantizes a whole tensor (`data` holds whole blocks) into f32.
pub fn dequantize(ty: GgmlType, data: &[u8]) -> Vec<f32> {
    let (eb, bb) = (ty.block_elems(), ty.block_bytes());
    let mut out = vec![0.0; data.len() / bb * eb];
    for (block, dst) in data.chunks_exact(bb).zip(out.chunks_exact_mut(eb)) {
        dequantize_block(ty, block, dst);
    }
    out
}

/// Blocks in a group of Q6_K's GPU layout ([`gpu_layout`]).
pub const Q6K_GROUP_BLOCKS: usize = 8;

/// Q6_K's fields in one block, in GGUF order: (offset, bytes) of ql, qh, scales and d; in the
/// GPU layout each is a plane of its group (the planes in this order).
const Q6K_FIELDS: [(usize, usize); 4] = [(0, 128), (128, 64), (192, 16), (208, 2)];

/// What the GPU layout XORs into every qh byte of Q6_K ([`gpu_layout`]): the high bit of each
/// 2-bit field, bit 5 of the 6-bit q — so a field holds q ^ 32's, and a kernel that places q
/// in the top six bits of a byte reads the int8 4 (q - 32) with no flip of its own.
pub const Q6K_QH_FLIP: u8 = 0xAA;

/// Bytes of a Q6_K group: eight blocks of 210 (the last field's end).
const Q6K_GROUP_BYTES: usize = Q6K_GROUP_BLOCKS * (Q6K_FIELDS[3].0 + Q6K_FIELDS[3].1);

/// The group of `ty`'s GPU layout ([`gpu_layout`]) in bytes: the GPU copy is whole groups, and
/// a binding of part of it starts on one. 1,680 for Q6_K (eight blocks); 1 for every type the
/// GPU holds as stored (a binding may start at any row).
pub fn gpu_group_bytes(ty: GgmlType) -> usize {
    match ty {
        GgmlType::Q6K => Q6K_GROUP_BYTES,
        _ => 1,
    }
}

/// Bytes of the GPU copy of `bytes` bytes of `ty` blocks: Q6_K's rounded up to whole groups.
pub fn gpu_layout_bytes(ty: GgmlType, bytes: usize) -> usize {
    bytes.next_multiple_of(gpu_group_bytes(ty))
}

/// `data` (whole blocks of `ty`) as the GPU holds it: every type as stored but Q6_K.
///
/// A Q6_K block is 210 bytes, so every other block of a row starts 2 bytes into a word and the
/// kernels read its quants a word at a time, joining halves. On NVIDIA that bound its int8 GEMV
/// at ~3.2 TB/s (0.71 of an H200's streaming ceiling): 32 lanes, each on its own 32-byte run,
/// touch 32 sectors per word loaded, nine loads for a run that two 16-byte loads would move
/// (docs/design/next-kernels.md, "Q6_K in groups"). Here the blocks go in groups of eight
/// (1,680 bytes, a multiple of 16), numbered through the whole tensor, each group's fields in
/// planes: the eight blocks' ql (8 × 128 bytes), then their qh (8 × 64), scales (8 × 16) and d
/// (8 × 2), the last group padded with zero blocks. Every block's ql and qh runs and scales
/// then start on 16 bytes, and a kernel finds block k of a group from its GGUF byte offset b
/// (relative to a group's start: the bound range must start on one) as block k = n % 8 of
/// group n / 8, n = b / 210 (`quant/q6_k_groups.wgsl`). The same bytes reordered but one change —
/// every qh byte XOR [`Q6K_QH_FLIP`], the top bit of each 2-bit field flipped, so that the int8
/// kernels' 4 (q - 32) is a mask and an OR a word (`q8dot/q6_k.wgsl`) — and at most seven zero
/// blocks after the last (zero in every plane: with d = 0 they decode to zeros either way).
pub fn gpu_layout(ty: GgmlType, data: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if gpu_group_bytes(ty) == 1 {
        return std::borrow::Cow::Borrowed(data);
    }
    let mut out = vec![0u8; gpu_layout_bytes(ty, data.len())];
    write_gpu_layout(ty, data, |at, bytes| {
        out[at..at + bytes.len()].copy_from_slice(bytes)
    });
    std::borrow::Cow::Owned(out)
}

/// [`gpu_layout`] handed out a group at a time: `put(offset, bytes)` with each group of the GPU
/// copy in order (a staging buffer takes them as they come, so an upload reorders its bytes
/// once). Types the GPU holds as stored: one call with all of `data`.
pub fn write_gpu_layout(ty: GgmlType, data: &[u8], mut put: impl FnMut(usize, &[u8])) {
    if ty != GgmlType::Q6K {
        put(0, data);
        return;
    }
    let bb = ty.block_bytes();
    debug_assert!(data.len().is_multiple_of(bb));
    let mut to = [0u8; Q6K_GROUP_BYTES];
    for (g, blocks) in data.chunks(Q6K_GROUP_BYTES).enumerate() {
        let mut plane = 0;
        for (at, len) in Q6K_FIELDS {
            for (k, block) in blocks.chunks_exact(bb).enumerate() {
                let field = &mut to[plane + k * len..plane + (k + 1) * len];
                field.copy_from_slice(&block[at..at + len]);
                if at == Q6K_FIELDS[1].0 {
                    field.iter_mut().for_each(|b| *b ^= Q6K_QH_FLIP);
                }
            }
            // A short last group's missing blocks: zeros.
            to[plane + blocks.len() / bb * len..plane + Q6K_GROUP_BLOCKS * len].fill(0);
            plane += Q6K_GROUP_BLOCKS * len;
        }
        put(g * Q6K_GROUP_BYTES, &to);
    }
}

/// Byte offsets of the f16 scale fields inside one block of `ty` (for generating valid data).
pub fn f16_fields(ty: GgmlType) -> &'static [usize] {
    match ty {
        GgmlType::F32 | GgmlType::F16 => &[],
        GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q8_0 => &[0],
        GgmlType::Q4_1 | GgmlType::Q5_1 | GgmlType::Q4K | GgmlType::Q5K => &[0, 2],
        GgmlType::Q6K => &[208],
    }
}

/// `blocks` blocks of `ty` with deterministic pseudo-random content: uniform quant bytes and
/// finite, model-sized scales (and finite values for f32/f16). For tests and benchmarks, whose
/// speed does not depend on the values.
pub fn random_blocks(ty: GgmlType, blocks: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        // xorshift64*: small, fast, good enough for test data.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let bb = ty.block_bytes();
    let mut out = vec![0u8; blocks * bb];
    for chunk in out.chunks_mut(8) {
        let r = next().to_le_bytes();
        chunk.copy_from_slice(&r[..chunk.len()]);
    }
    let mut small = move |scale: f32| ((next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * scale;
    for b in 0..blocks {
        let block = &mut out[b * bb..(b + 1) * bb];
        match ty {
            GgmlType::F32 => block.copy_from_slice(&small(4.0).to_le_bytes()),
            GgmlType::F16 => block.copy_from_slice(&f16::from_f32(small(4.0)).to_le_bytes()),
            _ => {
                for &at in f16_fields(ty) {
                    block[at..at + 2].copy_from_slice(&f16::from_f32(small(0.05)).to_le_bytes());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The GPU layout read back the way `quant/q6_k_groups.wgsl` addresses it: each field of
    /// block i at its plane's offset gives the block as stored, qh with its fields' high bits
    /// flipped.
    #[test]
    fn q6k_groups_hold_every_field_where_the_kernels_look() {
        let ty = GgmlType::Q6K;
        for blocks in [1, 7, 8, 9, 16, 21] {
            let data = random_blocks(ty, blocks, blocks as u64);
            let gpu = gpu_layout(ty, &data);
            assert_eq!(gpu.len(), blocks.div_ceil(8) * 1680);
            for (i, block) in data.chunks_exact(210).enumerate() {
                // The kernels' arithmetic on b = 210 i (quant/q6_k_groups.wgsl).
                let b = 210 * i;
                let k = b % 1680 / 210;
                let g = b - 210 * k;
                let planes = [(g + 128 * k, 0, 128), (g + 1024 + 64 * k, 128, 64)];
                let fields = [(g + 1536 + 16 * k, 192, 16), (g + 1664 + 2 * k, 208, 2)];
                for (to, at, len) in planes.into_iter().chain(fields) {
                    let flip = if at == 128 { Q6K_QH_FLIP } else { 0 };
                    let held: Vec<u8> = gpu[to..to + len].iter().map(|b| b ^ flip).collect();
                    assert_eq!(held, block[at..at + len], "block {i} of {blocks}");
                }
            }
            // The last group's padding blocks are zeros in every plane.
            let g = (blocks - 1) / 8 * 1680;
            for k in (blocks - 1) % 8 + 1..8 {
                let pad = [
                    (128 * k, 128),
                    (1024 + 64 * k, 64),
                    (1536 + 16 * k, 16),
                    (1664 + 2 * k, 2),
                ];
                for (to, len) in pad {
                    assert!(
                        gpu[g + to..g + to + len].iter().all(|&v| v == 0),
                        "padding {k}"
                    );
                }
            }
        }
        let q4 = random_blocks(GgmlType::Q4K, 3, 1);
        assert!(matches!(
            gpu_layout(GgmlType::Q4K, &q4),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
