//! MLC model package v1 processors: `image_decode`, `audio_decode`, and the split of adapter
//! output rows into prefill chunks.

mod audio_decode;
mod chunks;
mod image_decode;

pub use audio_decode::{AudioDecodeError, audio_decode};
pub use chunks::{ChunkError, prefill_chunks};
pub use image_decode::{ImageDecodeError, adapter_input_dtype, image_decode};
