//! Audio: WAV decoding (through `hound`), down-mix to mono and band-limited resampling (a
//! windowed sinc at exact output times).

mod resample;
mod wav;

pub use resample::{
    MAX_RATE_HZ, MIN_RATE_HZ, RESAMPLER, ResampleError, check_rates, resample, resampled_len,
};
pub use wav::{Audio, WavError, decode_wav};
