//! Splitting an adapter's output rows to fit the prefill chunk size.

use std::ops::Range;

/// Why rows could not be split.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChunkError {
    /// A prefill chunk size of 0.
    #[error("prefill chunk size must be at least 1")]
    ZeroChunk,
}

/// Splits `rows` adapter output rows (embeddings) into consecutive ranges that fit prefill
/// chunks of `chunk_size` positions, when `used` positions of the current chunk are already taken
/// (by prompt tokens before the span). The first range fills the rest of the current chunk (or
/// starts a new one when it is full); each later range is a whole chunk; the last may be shorter.
/// The ranges cover `0..rows` in order; `rows == 0` gives none.
pub fn prefill_chunks(
    rows: usize,
    chunk_size: usize,
    used: usize,
) -> Result<Vec<Range<usize>>, ChunkError> {
    if chunk_size == 0 {
        return Err(ChunkError::ZeroChunk);
    }
    let mut room = chunk_size - used % chunk_size;
    let mut out = Vec::with_capacity(rows / chunk_size + 2);
    let mut start = 0;
    while start < rows {
        let end = (start + room).min(rows);
        out.push(start..end);
        start = end;
        room = chunk_size;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_fill_the_current_chunk_then_whole_chunks() {
        assert_eq!(
            prefill_chunks(576, 256, 0).unwrap(),
            [0..256, 256..512, 512..576]
        );
        assert_eq!(
            prefill_chunks(576, 256, 100).unwrap(),
            [0..156, 156..412, 412..576]
        );
        assert_eq!(prefill_chunks(10, 256, 256).unwrap(), vec![0..10usize]);
        assert_eq!(prefill_chunks(0, 8, 3).unwrap(), Vec::<Range<usize>>::new());
        assert_eq!(prefill_chunks(3, 0, 0), Err(ChunkError::ZeroChunk));
    }
}
