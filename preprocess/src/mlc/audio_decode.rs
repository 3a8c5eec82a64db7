//! `audio_decode`: WAV → mono → the adapter's rate, `f32`, length checked.

use gpuport_manifest_core::mlc::AudioDecode;

use crate::audio::{ResampleError, WavError, check_rates, decode_wav, resample, resampled_len};

/// Why `audio_decode` failed.
#[derive(Debug, thiserror::Error)]
pub enum AudioDecodeError {
    /// The WAV file could not be decoded.
    #[error(transparent)]
    Wav(#[from] WavError),
    /// The rate conversion failed.
    #[error(transparent)]
    Resample(#[from] ResampleError),
    /// The processor asks for something other than mono at a rate that fits in 32 bits.
    #[error(
        "audio_decode wants {channels} channels at {sample_rate_hz} Hz; only mono at a 32-bit rate is supported"
    )]
    UnsupportedTarget {
        /// Declared channels.
        channels: u64,
        /// Declared rate.
        sample_rate_hz: u64,
    },
    /// Fewer samples than `min_samples` after resampling.
    #[error(
        "audio is too short: {samples} samples at {sample_rate_hz} Hz, the adapter needs at least {min_samples}"
    )]
    TooShort {
        /// Samples after resampling.
        samples: usize,
        /// The processor's rate.
        sample_rate_hz: u64,
        /// `min_samples`.
        min_samples: u64,
    },
    /// More samples than `max_samples` after resampling.
    #[error(
        "audio is too long: {samples} samples at {sample_rate_hz} Hz, the adapter takes at most {max_samples}"
    )]
    TooLong {
        /// Samples after resampling.
        samples: usize,
        /// The processor's rate.
        sample_rate_hz: u64,
        /// `max_samples`.
        max_samples: u64,
    },
}

/// Runs `audio_decode` on WAV bytes: decode (PCM 8/16/24/32-bit integer or 32-bit float, any
/// channels, any rate), mean of the channels, band-limited resampling to `sample_rate_hz` (see
/// [`crate::audio::resample`]), with `min_samples ≤ len ≤ max_samples` (checked on the
/// resampled length before resampling) or an error saying which. File and target rates must lie
/// in [`crate::audio::MIN_RATE_HZ`]`..=`[`crate::audio::MAX_RATE_HZ`].
pub fn audio_decode(bytes: &[u8], spec: &AudioDecode) -> Result<Vec<f32>, AudioDecodeError> {
    let unsupported = || AudioDecodeError::UnsupportedTarget {
        channels: spec.channels,
        sample_rate_hz: spec.sample_rate_hz,
    };
    let rate = u32::try_from(spec.sample_rate_hz).map_err(|_| unsupported())?;
    if spec.channels != 1 {
        return Err(unsupported());
    }
    let audio = decode_wav(bytes)?;
    check_rates(audio.sample_rate, rate)?;
    // The length is known before resampling: refuse before allocating (a file declaring 1 kHz
    // resampled to 16 kHz grows 16 times).
    let samples = resampled_len(audio.samples.len(), audio.sample_rate, rate);
    let len = samples as u64;
    if len < spec.min_samples {
        return Err(AudioDecodeError::TooShort {
            samples,
            sample_rate_hz: spec.sample_rate_hz,
            min_samples: spec.min_samples,
        });
    }
    if len > spec.max_samples {
        return Err(AudioDecodeError::TooLong {
            samples,
            sample_rate_hz: spec.sample_rate_hz,
            max_samples: spec.max_samples,
        });
    }
    Ok(resample(&audio.samples, audio.sample_rate, rate)?)
}
