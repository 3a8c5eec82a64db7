//! The streaming-read launch (`gpuport_kernels::stream`): the bandwidth ceiling.

use gpuport_kernels::stream;

use super::launch;
use crate::device::Gpu;
use crate::error::GpuError;
use crate::recorder::Recorder;
use crate::tensor::Tensor;

/// Records one streaming read of `src` with `groups` workgroups of `wg` threads.
pub fn stream_read(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    src: &Tensor,
    sink: &Tensor,
    wg: u32,
    groups: u32,
) -> Result<(), GpuError> {
    let p = stream::StreamParams {
        words: (src.bytes / 16) as u32,
        threads: wg * groups,
        pad: [0; 2],
    };
    if sink.bytes < 4 * u64::from(p.threads) {
        return Err(GpuError::Shape("stream sink smaller than the grid".into()));
    }
    launch(gpu, rec, &stream::spec(wg), &p, &[src, sink], (groups, 1))
}
