//! Audio: WAV decoding (through `hound`), down-mix to mono and band-limited resampling (a
//! windowed sinc at exact output times).

mod resample;
mod wav;

pub use resample::{RESAMPLER, ResampleError, resample, resampled_len};
pub use wav::{Audio, WavError, decode_wav};
