//! SentencePiece-style BPE by scores (GGUF `tokenizer.ggml.model = "llama"`): spaces become
//! U+2581, characters merge pairwise by the score of the merged piece (highest first, leftmost
//! on ties), and a piece outside the vocabulary falls back to `<0xXX>` byte tokens.

use std::collections::BinaryHeap;

/// The word-boundary marker that stands for a space.
pub(crate) const SPACE: char = '\u{2581}';

#[derive(PartialEq)]
struct Bigram {
    score: f32,
    left: usize,
    right: usize,
    size: usize,
}

impl Eq for Bigram {}

impl Ord for Bigram {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        // Highest score first; leftmost first on ties.
        self.score
            .total_cmp(&o.score)
            .then_with(|| o.left.cmp(&self.left))
    }
}

impl PartialOrd for Bigram {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

/// Encodes raw text (no special tokens): `lookup` maps piece text to id, `score` gives an
/// id's score, `byte` the id of a byte's `<0xXX>` token.
pub(crate) fn encode(
    text: &str,
    lookup: &impl Fn(&str) -> Option<u32>,
    score: &impl Fn(u32) -> f32,
    byte: &impl Fn(u8) -> Option<u32>,
    out: &mut Vec<u32>,
) {
    let escaped: String = text
        .chars()
        .map(|c| if c == ' ' { SPACE } else { c })
        .collect();
    // Symbols are byte ranges of `escaped`; merged-away symbols have length 0.
    let mut start: Vec<usize> = escaped.char_indices().map(|(i, _)| i).collect();
    let n = start.len();
    if n == 0 {
        return;
    }
    start.push(escaped.len());
    let mut len: Vec<usize> = (0..n).map(|i| start[i + 1] - start[i]).collect();
    let mut prev: Vec<Option<usize>> = (0..n).map(|i| i.checked_sub(1)).collect();
    let mut next: Vec<Option<usize>> = (0..n).map(|i| (i + 1 < n).then_some(i + 1)).collect();
    let mut heap = BinaryHeap::new();
    let text_of = |i: usize, len: &[usize]| &escaped[start[i]..start[i] + len[i]];
    let try_add =
        |l: Option<usize>, r: Option<usize>, len: &[usize], heap: &mut BinaryHeap<Bigram>| {
            let (Some(l), Some(r)) = (l, r) else { return };
            let piece = &escaped[start[l]..start[l] + len[l] + len[r]];
            if let Some(id) = lookup(piece) {
                heap.push(Bigram {
                    score: score(id),
                    left: l,
                    right: r,
                    size: piece.len(),
                });
            }
        };
    for i in 1..n {
        try_add(Some(i - 1), Some(i), &len, &mut heap);
    }
    while let Some(b) = heap.pop() {
        let (l, r) = (b.left, b.right);
        if len[l] == 0 || len[r] == 0 || len[l] + len[r] != b.size {
            continue;
        }
        len[l] += len[r];
        len[r] = 0;
        next[l] = next[r];
        if let Some(nr) = next[r] {
            prev[nr] = Some(l);
        }
        try_add(prev[l], Some(l), &len, &mut heap);
        try_add(Some(l), next[l], &len, &mut heap);
    }
    // Every merged piece is in the vocabulary (only such pairs are queued); a single character
    // that is not becomes its UTF-8 bytes' `<0xXX>` tokens.
    let mut i = Some(0);
    while let Some(s) = i {
        let piece = text_of(s, &len);
        match lookup(piece) {
            Some(id) => out.push(id),
            None => out.extend(piece.bytes().filter_map(byte)),
        }
        i = next[s];
    }
}
