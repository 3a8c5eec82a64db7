//! Dequantization to f32 on the GPU, one thread per element: bit-exact with
//! [`crate::quant::dequantize`].

use bytemuck::{Pod, Zeroable};

use crate::kernel::{Family, KernelSpec};
use crate::quant::GgmlType;

/// The uniform block of `dequant.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct DequantParams {
    /// Elements to write.
    pub elems: u32,
    /// Byte offset of the first unit in the weight binding.
    pub w_offset: u32,
    /// Workgroups along x.
    pub grid_x: u32,
    /// Padding.
    pub pad: u32,
}

/// Allowed workgroup sizes.
pub const WG_VALUES: [u32; 3] = [64, 128, 256];

/// The variant for `ty` with `wg` threads per workgroup.
pub fn spec(ty: GgmlType, wg: u32) -> KernelSpec {
    KernelSpec {
        family: Family::Dequant,
        quant: Some(ty),
        reduction: None,
        constants: vec![("WG", wg)],
    }
}
