//! The GPU sampler against the CPU references: greedy, the kept set of top-k / top-p, the
//! repetition penalty (once per distinct id), and every draw of a run reproduced from the CPU
//! Philox stream over the kept probabilities.

#![allow(clippy::unwrap_used)]

use gpuport_testing as support;

use gpuport_kernels::sample::{SampleParams, draw_word, kept_reference, uniform};
use gpuport_runtime::{Elem, Gpu, Recorder, Tensor, ops};

/// Distinct, well-separated logits: a shuffled ramp over [-5, 5).
fn ramp(n: usize, seed: u64) -> Vec<f32> {
    let mut order: Vec<usize> = (0..n).collect();
    let r = support::random_f32(n, seed);
    order.sort_by(|a, b| r[*a].total_cmp(&r[*b]));
    let mut out = vec![0.0; n];
    for (rank, i) in order.into_iter().enumerate() {
        out[i] = -5.0 + 10.0 * rank as f32 / n as f32;
    }
    out
}

fn params(vocab: usize) -> SampleParams {
    SampleParams {
        vocab: vocab as u32,
        top_k: 0,
        n_recent: 0,
        draw: draw_word(7, 0),
        temperature: 1.0,
        top_p: 1.0,
        penalty: 1.0,
        recent_start: 0,
        out_index: 0,
        round: 0,
    }
}

/// Runs the sampler; returns (token, kept count, probs after the filters, logits after).
fn run(
    gpu: &Gpu,
    logits: &[f32],
    recent: &[u32],
    p: SampleParams,
) -> (u32, u32, Vec<f32>, Vec<f32>) {
    let n = logits.len();
    let lt = gpu.upload_f32(logits, &[n], "logits").unwrap();
    let pt = gpu.zeros_f32(&[n], "probs").unwrap();
    // The sequence buffer: the recent ids after one unrelated id, then the slot for the draw.
    let mut ids = vec![u32::MAX - 1];
    ids.extend_from_slice(recent);
    ids.push(u32::MAX);
    let p = SampleParams {
        recent_start: 1,
        out_index: ids.len() as u32 - 1,
        ..p
    };
    let rt = gpu
        .upload(
            bytemuck::cast_slice(&ids),
            Elem::U32,
            &[ids.len()],
            "tokens",
        )
        .unwrap();
    let out: Tensor = gpu.upload(&[0xFF; 8], Elem::U32, &[2], "out").unwrap();
    let words = gpuport_kernels::sample::scratch_words(n);
    let part = gpu.zeros_f32(&[words], "sampler partials").unwrap();
    let mut rec = Recorder::new(gpu);
    let call = ops::Sample {
        p,
        logits: &lt,
        probs: &pt,
        tokens: &rt,
        out: &out,
        part: &part,
    };
    ops::sample(gpu, &mut rec, call).unwrap();
    rec.submit().unwrap();
    let o = gpu.readback(&out).unwrap();
    let word = |i: usize| u32::from_le_bytes(o[4 * i..4 * i + 4].try_into().unwrap());
    let seq = gpu.readback(&rt).unwrap();
    let last = seq.len() - 4;
    assert_eq!(
        u32::from_le_bytes(seq[last..].try_into().unwrap()),
        word(0),
        "the sequence buffer gets the drawn id"
    );
    (
        word(0),
        word(1),
        gpu.readback_f32(&pt).unwrap(),
        gpu.readback_f32(&lt).unwrap(),
    )
}

#[test]
fn greedy_is_the_first_largest() {
    let Some(gpu) = support::gpu() else { return };
    let mut logits = ramp(5000, 1);
    logits[10] = 9.0;
    logits[4000] = 9.0;
    let (token, kept, _, _) = run(
        &gpu,
        &logits,
        &[],
        SampleParams {
            temperature: 0.0,
            ..params(5000)
        },
    );
    assert_eq!((token, kept), (10, 1));
}

#[test]
fn top_k_and_top_p_keep_exactly_the_reference_set() {
    let Some(gpu) = support::gpu() else { return };
    for (vocab, top_k, top_p, temperature) in [
        (1000, 50, 1.0, 0.8),
        (1000, 0, 0.9, 1.0),
        (49152, 40, 0.95, 0.7),
        (3000, 300, 0.5, 1.3),
        (17, 0, 1.0, 1.0),
    ] {
        let logits = ramp(vocab, vocab as u64 + u64::from(top_k));
        let p = SampleParams {
            top_k,
            top_p,
            temperature,
            ..params(vocab)
        };
        let (token, kept, probs, _) = run(&gpu, &logits, &[], p);
        let want = kept_reference(&logits, temperature, top_k, top_p);
        let got: Vec<u32> = probs
            .iter()
            .enumerate()
            .filter(|(_, v)| **v > 0.0)
            .map(|(i, _)| i as u32)
            .collect();
        assert_eq!(got, want, "vocab {vocab} top_k {top_k} top_p {top_p}");
        assert_eq!(kept as usize, want.len());
        assert!(want.contains(&token), "token {token} was filtered out");
    }
}

/// 64 draws each from one slice (300 logits, top-k 20) and across 5 slices (5,000 flat
/// logits, top-p 0.99): every draw is the CPU's inverse CDF of the kernel's uniform over the
/// kept probabilities in id order.
#[test]
fn every_draw_follows_the_philox_stream() {
    let Some(gpu) = support::gpu() else { return };
    for (vocab, top_k, top_p, temperature) in [(300, 20, 1.0, 1.0), (5000, 0, 0.99, 3.0)] {
        let logits = ramp(vocab, 3);
        let mut counts = vec![0u32; vocab];
        for step in 0..64u32 {
            let p = SampleParams {
                draw: draw_word(0x1_DEAD_BEEF, step),
                top_k,
                top_p,
                temperature,
                ..params(vocab)
            };
            let (token, _, probs, _) = run(&gpu, &logits, &[], p);
            // The kernel's uniform times the kept mass, inverse CDF in id order.
            let grand: f64 = probs.iter().map(|v| f64::from(*v)).sum();
            let u = f64::from(uniform(0x1_DEAD_BEEF, step)) * grand;
            let mut acc = 0.0;
            let want = probs.iter().position(|v| {
                acc += f64::from(*v);
                *v > 0.0 && u < acc
            });
            assert_eq!(Some(token as usize), want, "vocab {vocab} step {step}");
            counts[token as usize] += 1;
        }
        // More than one token was drawn: the counter really advances the stream.
        assert!(counts.iter().filter(|c| **c > 0).count() > 3);
        if vocab > 1024 {
            // Draws landed in more than one slice.
            let slices: std::collections::BTreeSet<usize> = counts
                .iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(i, _)| i / gpuport_kernels::sample::SLICE)
                .collect();
            assert!(slices.len() > 1, "{slices:?}");
        }
    }
}

#[test]
fn penalty_applies_once_per_distinct_recent_id() {
    let Some(gpu) = support::gpu() else { return };
    let logits = vec![2.0, -2.0, 1.0, 0.5];
    let p = SampleParams {
        n_recent: 4,
        penalty: 2.0,
        temperature: 0.0,
        ..params(4)
    };
    // Token 0 twice, 1 once, and an id past the vocabulary (ignored).
    let (token, _, _, after) = run(&gpu, &logits, &[0, 1, 0, 99], p);
    assert_eq!(after, [1.0, -4.0, 1.0, 0.5]);
    assert_eq!(token, 0, "ties go to the first index");
}
