//! Streaming UTF-8: bytes arrive token by token and a character may span tokens (byte-fallback
//! and byte-level BPE split emoji and CJK across several). Complete characters are emitted at
//! once; an incomplete tail waits for the next bytes; bytes that can never form a character
//! become U+FFFD.

/// A push decoder from bytes to text.
#[derive(Debug, Default)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// An empty stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `bytes`; returns the text that is now complete.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    out.push_str(std::str::from_utf8(&self.pending[..valid]).unwrap_or_default());
                    match e.error_len() {
                        // An invalid sequence: replace it and go on.
                        Some(bad) => {
                            out.push('\u{FFFD}');
                            self.pending.drain(..valid + bad);
                        }
                        // An incomplete character at the end: keep it for later.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                    }
                }
            }
        }
    }

    /// Ends the stream: an incomplete tail becomes U+FFFD.
    pub fn finish(&mut self) -> String {
        let out = if self.pending.is_empty() {
            String::new()
        } else {
            "\u{FFFD}".to_string()
        };
        self.pending.clear();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::Utf8Stream;

    #[test]
    fn characters_split_across_pushes_come_out_whole() {
        let text = "a€😀b";
        let bytes = text.as_bytes();
        for cut in 0..=bytes.len() {
            let mut s = Utf8Stream::new();
            let mut out = s.push(&bytes[..cut]);
            assert!(text.starts_with(&out));
            out.push_str(&s.push(&bytes[cut..]));
            out.push_str(&s.finish());
            assert_eq!(out, text);
        }
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        let mut s = Utf8Stream::new();
        assert_eq!(s.push(b"a\xffb"), "a\u{FFFD}b");
        assert_eq!(s.push(b"\xe2\x82"), "");
        assert_eq!(s.finish(), "\u{FFFD}");
    }
}
