//! WAV → mono `f32` in [−1, 1].

use std::io::Cursor;

use hound::{SampleFormat, WavReader};

/// Why a WAV file could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum WavError {
    /// Not a WAV file hound can read, or corrupt.
    #[error("cannot decode WAV: {0}")]
    Decode(#[from] hound::Error),
    /// A sample format other than PCM 8/16/24/32-bit integer or 32-bit float.
    #[error("unsupported WAV sample format: {bits}-bit {format}")]
    UnsupportedFormat {
        /// Bits per sample.
        bits: u16,
        /// `int` or `float`.
        format: &'static str,
    },
    /// The header says 0 channels or 0 Hz.
    #[error("WAV header has {channels} channels at {sample_rate} Hz")]
    BadHeader {
        /// Channels.
        channels: u16,
        /// Sample rate.
        sample_rate: u32,
    },
    /// The sample data ends inside a frame.
    #[error("WAV data holds {samples} samples, not a whole number of {channels}-channel frames")]
    PartialFrame {
        /// Samples read.
        samples: usize,
        /// Channels.
        channels: u16,
    },
}

/// Decoded mono audio.
#[derive(Debug, Clone, PartialEq)]
pub struct Audio {
    /// Samples in [−1, 1] (integer PCM divided by 2^(bits − 1)); each is the mean of the frame's
    /// channels.
    pub samples: Vec<f32>,
    /// Samples per second.
    pub sample_rate: u32,
}

/// Decodes a WAV file (PCM 8/16/24/32-bit integer or 32-bit float, any channel count and rate)
/// and down-mixes it to mono by the mean of the channels (computed in `f64`).
pub fn decode_wav(bytes: &[u8]) -> Result<Audio, WavError> {
    let mut reader = WavReader::new(Cursor::new(bytes))?;
    let spec = reader.spec();
    if spec.channels == 0 || spec.sample_rate == 0 {
        return Err(WavError::BadHeader {
            channels: spec.channels,
            sample_rate: spec.sample_rate,
        });
    }
    let interleaved: Vec<f64> = match (spec.sample_format, spec.bits_per_sample) {
        (SampleFormat::Int, bits @ (8 | 16 | 24 | 32)) => {
            let full_scale = f64::from(1u32 << (bits - 1));
            reader
                .samples::<i32>()
                .map(|s| s.map(|v| f64::from(v) / full_scale))
                .collect::<Result<_, _>>()?
        }
        (SampleFormat::Float, 32) => reader
            .samples::<f32>()
            .map(|s| s.map(f64::from))
            .collect::<Result<_, _>>()?,
        (format, bits) => {
            let format = if format == SampleFormat::Float {
                "float"
            } else {
                "int"
            };
            return Err(WavError::UnsupportedFormat { bits, format });
        }
    };
    let channels = usize::from(spec.channels);
    if !interleaved.len().is_multiple_of(channels) {
        return Err(WavError::PartialFrame {
            samples: interleaved.len(),
            channels: spec.channels,
        });
    }
    let samples = interleaved
        .chunks_exact(channels)
        .map(|frame| (frame.iter().sum::<f64>() / channels as f64) as f32)
        .collect();
    Ok(Audio {
        samples,
        sample_rate: spec.sample_rate,
    })
}
