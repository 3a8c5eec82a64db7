//! The streaming-read kernel: how fast this adapter reads memory, the ceiling every
//! bandwidth-bound kernel is measured against.

use bytemuck::{Pod, Zeroable};

use crate::kernel::{Family, KernelSpec};

/// The uniform block of `stream.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct StreamParams {
    /// `vec4<u32>` words to read.
    pub words: u32,
    /// Threads in the grid.
    pub threads: u32,
    /// Padding.
    pub pad: [u32; 2],
}

/// Allowed workgroup sizes.
pub const WG_VALUES: [u32; 4] = [64, 128, 256, 512];

/// The variant with `wg` threads per workgroup.
pub fn spec(wg: u32) -> KernelSpec {
    KernelSpec {
        family: Family::Stream,
        quant: None,
        reduction: None,
        constants: vec![("WG", wg)],
    }
}
