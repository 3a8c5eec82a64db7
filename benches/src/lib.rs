//! # gpuport-benches
//!
//! Criterion benchmarks that span gpuport crates (`cargo bench -p gpuport-benches`). Each one
//! measures a peer (Pillow, …) on the same input in the same run and prints ours ÷ peer, because a
//! bare time on a shared machine is not a result. This library holds what the benches share.

use std::time::{Duration, Instant};

/// Median wall time of `runs` calls of `f` (after one warm-up call).
pub fn median_time(runs: usize, mut f: impl FnMut()) -> Duration {
    f();
    let mut times: Vec<Duration> = (0..runs.max(1))
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

/// A deterministic test photo stand-in: gradients, a sharp diagonal pattern and noise from a
/// linear congruential generator, `width × height` interleaved RGB bytes. The Pillow side of a
/// bench reads the same bytes.
pub fn synthetic_rgb(width: usize, height: usize) -> Vec<u8> {
    let mut state: u32 = 0x1234_5678;
    let mut out = Vec::with_capacity(width * height * 3);
    for y in 0..height {
        for x in 0..width {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let noise = (state >> 27) as usize;
            let r = (x * 255 / width.max(1) + noise) % 256;
            let g = (y * 255 / height.max(1) + noise) % 256;
            let b = if (x + 2 * y) % 11 < 5 {
                240
            } else {
                10 + noise
            };
            out.extend_from_slice(&[r as u8, g as u8, b as u8]);
        }
    }
    out
}
