//! GPU token sampling (`sample.wgsl`): repetition penalty, temperature, top-k, top-p and an
//! inverse-CDF draw with a Philox4x32-10 uniform, as a chain of stages over slices of the
//! vocabulary ([`stages`]); greedy at temperature 0. The CPU side holds the reference RNG and
//! the reference filters.

use bytemuck::{Pod, Zeroable};

use crate::kernel::{Family, KernelSpec};

/// The uniform block of `sample.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct SampleParams {
    /// Vocabulary size (logits length).
    pub vocab: u32,
    /// Keep the k largest logits (0 = off).
    pub top_k: u32,
    /// Recent ids to penalize: `tokens[recent_start..recent_start + n_recent]`.
    pub n_recent: u32,
    /// The draw's random word: [`draw_word`] of the row's seed and the index of the token
    /// being sampled (its 24 high bits are the uniform).
    pub draw: u32,
    /// Temperature (≤ 0: greedy).
    pub temperature: f32,
    /// Nucleus mass to keep (≥ 1: off).
    pub top_p: f32,
    /// Repetition penalty (1 = off).
    pub penalty: f32,
    /// Index in `tokens` of the first recent id.
    pub recent_start: u32,
    /// Index in `tokens` that receives the chosen id.
    pub out_index: u32,
    /// The radix stages: the round (0-3), plus [`TOP_P_ROUND`] for the top-p select (set per
    /// stage by [`stages`]).
    pub round: u32,
}

/// Logits per slice (one workgroup each in the slice stages).
pub const SLICE: usize = 1024;

/// Added to [`SampleParams::round`] in the top-p select's rounds.
pub const TOP_P_ROUND: u32 = 16;

/// One stage of the sampler (`STAGE` in `sample.wgsl`, which describes them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    /// Repetition penalty (one workgroup).
    Penalty = 0,
    /// Each slice's largest logit.
    Max = 1,
    /// The largest logit; greedy ends here.
    MaxCombine = 2,
    /// Each slice's radix histogram.
    Hist = 3,
    /// The next 8 bits of a threshold (one workgroup).
    Select = 4,
    /// Probabilities and their slice sums.
    Probs = 5,
    /// Top-p cut; each slice's kept mass.
    Mass = 6,
    /// The draw (one workgroup).
    Draw = 7,
}

impl Stage {
    /// Every stage.
    pub const ALL: [Stage; 8] = [
        Stage::Penalty,
        Stage::Max,
        Stage::MaxCombine,
        Stage::Hist,
        Stage::Select,
        Stage::Probs,
        Stage::Mass,
        Stage::Draw,
    ];

    /// Whether the stage runs one workgroup per slice (else one workgroup).
    pub fn per_slice(self) -> bool {
        matches!(self, Stage::Max | Stage::Hist | Stage::Probs | Stage::Mass)
    }
}

/// The sampler's stages for `p`, in order, each with the `round` its parameters carry: the
/// penalty when set, the maximum, then for temperature > 0 the top-k select (when on), the
/// probabilities, the top-p select (when on), the mass and the draw.
pub fn stages(p: &SampleParams) -> Vec<(Stage, u32)> {
    let mut out = Vec::new();
    if p.penalty != 1.0 && p.n_recent > 0 {
        out.push((Stage::Penalty, 0));
    }
    out.extend([(Stage::Max, 0), (Stage::MaxCombine, 0)]);
    if p.temperature <= 0.0 {
        return out;
    }
    let radix = |out: &mut Vec<(Stage, u32)>, base: u32| {
        for round in 0..4 {
            out.extend([(Stage::Hist, base + round), (Stage::Select, base + round)]);
        }
    };
    if p.top_k > 0 && p.top_k < p.vocab {
        radix(&mut out, 0);
    }
    out.push((Stage::Probs, 0));
    if p.top_p < 1.0 {
        radix(&mut out, TOP_P_ROUND);
    }
    out.extend([(Stage::Mass, 0), (Stage::Draw, 0)]);
    out
}

/// Words of the partials-and-state scratch for a vocabulary of `vocab`: eight rounds' 256-bin
/// histograms, five partial words per slice, then the state.
pub fn scratch_words(vocab: usize) -> usize {
    8 * 256 + vocab.div_ceil(SLICE) * 5 + 8
}

/// The variant of `stage`.
pub fn spec(stage: Stage) -> KernelSpec {
    KernelSpec {
        family: Family::Sample,
        quant: None,
        reduction: None,
        constants: vec![("STAGE", stage as u32)],
    }
}

/// Philox4x32-10 (Salmon, Moraes, Dror, Shaw 2011; Random123's constants and round schedule).
pub fn philox4x32(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let (mut c, mut k) = (counter, key);
    for round in 0..10 {
        if round > 0 {
            k[0] = k[0].wrapping_add(0x9E37_79B9);
            k[1] = k[1].wrapping_add(0xBB67_AE85);
        }
        let a = u64::from(0xD251_1F53u32) * u64::from(c[0]);
        let b = u64::from(0xCD9E_8D57u32) * u64::from(c[2]);
        c = [
            (b >> 32) as u32 ^ c[1] ^ k[0],
            b as u32,
            (a >> 32) as u32 ^ c[3] ^ k[1],
            a as u32,
        ];
    }
    c
}

/// The random word of the draw at `step` for `seed` ([`SampleParams::draw`]): the first
/// word of Philox4x32-10 at counter `(step, 0, 0, 0)` under key `seed`.
pub fn draw_word(seed: u64, step: u32) -> u32 {
    philox4x32([step, 0, 0, 0], [seed as u32, (seed >> 32) as u32])[0]
}

/// The uniform in `[0, 1)` the sampler draws at `step` for `seed` (the 24 high bits of
/// [`draw_word`]).
pub fn uniform(seed: u64, step: u32) -> f32 {
    (draw_word(seed, step) >> 8) as f32 * (1.0 / 16_777_216.0)
}

/// The ids the filters keep, by the definitions the kernel implements (exact arithmetic):
/// the `top_k` largest logits (ties at the threshold kept), then the smallest set of the
/// largest probabilities whose mass reaches `top_p`.
pub fn kept_reference(logits: &[f32], temperature: f32, top_k: u32, top_p: f32) -> Vec<u32> {
    let mut order: Vec<usize> = (0..logits.len()).collect();
    order.sort_by(|a, b| logits[*b].total_cmp(&logits[*a]).then(a.cmp(b)));
    let k = if top_k == 0 || top_k as usize >= logits.len() {
        logits.len()
    } else {
        top_k as usize
    };
    let kth = logits[order[k - 1]];
    let survivors: Vec<usize> = order.into_iter().filter(|i| logits[*i] >= kth).collect();
    let max = f64::from(logits[survivors[0]]);
    let e: Vec<f64> = survivors
        .iter()
        .map(|i| ((f64::from(logits[*i]) - max) / f64::from(temperature)).exp())
        .collect();
    let total: f64 = e.iter().sum();
    // The shortest head (by probability) whose mass reaches top_p; ties with its last kept.
    let mut cut = f64::NEG_INFINITY;
    if top_p < 1.0 {
        let target = f64::from(top_p) * total;
        let mut mass = 0.0;
        for w in &e {
            mass += w;
            if mass >= target {
                cut = *w;
                break;
            }
        }
    }
    let mut kept: Vec<u32> = survivors
        .iter()
        .zip(&e)
        .filter(|(_, w)| **w >= cut)
        .map(|(i, _)| *i as u32)
        .collect();
    kept.sort_unstable();
    kept
}

#[cfg(test)]
mod tests {
    use super::philox4x32;

    #[test]
    fn philox_known_answers() {
        // Random123's kat_vectors for philox4x32_10.
        assert_eq!(
            philox4x32([0; 4], [0; 2]),
            [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
        );
        assert_eq!(
            philox4x32([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
        );
        assert_eq!(
            philox4x32(
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0]
            ),
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
        );
    }
}
