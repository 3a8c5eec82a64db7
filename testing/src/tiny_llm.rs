//! A tiny random model for tests, written at test time with the project's GGUF writer: two
//! layers of width 256 (F32, Q8_0 and Q4_K tensors) as `llama` or `qwen2` (q, k, v biases),
//! and a 300-token SentencePiece vocabulary (`<unk>`, `<s>`, `</s>`, the 256 byte tokens,
//! 41 words) so that its ids decode to text, and a ChatML-style chat template
//! ([`CHAT_TEMPLATE`]) so that chat requests render. `llm/tests/llm_tiny.rs` checks it against
//! an f64 CPU forward pass; the engine, scheduler and server tests run it.

use std::collections::HashMap;

use gpuport_gguf::{GgufWriter, Value};
use gpuport_kernels::quant::{GgmlType, dequantize, random_blocks};

/// Hidden width.
pub const EMBD: usize = 256;
/// Feed-forward width.
pub const FF: usize = 512;
/// Query heads.
pub const HEADS: usize = 4;
/// Key/value heads.
pub const KV_HEADS: usize = 2;
/// Head width.
pub const HD: usize = 64;
/// Vocabulary: 3 control tokens, 256 byte tokens, 41 words.
pub const VOCAB: usize = 300;
/// Layers.
pub const LAYERS: usize = 2;
/// RMSNorm epsilon.
pub const EPS: f32 = 1e-5;
/// RoPE base.
pub const BASE: f32 = 10_000.0;
/// The end-of-sequence id (`</s>`).
pub const EOS: u32 = 2;
/// Its context length (the file's `context_length`).
pub const CONTEXT: usize = 64;

/// Its `tokenizer.chat_template`: ChatML turns (`<|im_start|>role\ncontent<|im_end|>\n`),
/// ending with the assistant's opener when `add_generation_prompt`. The vocabulary has no
/// `<|im_start|>` token, so the markers are spelled in byte tokens (12 per marker): a rendered
/// turn costs ~30 tokens plus its content.
pub const CHAT_TEMPLATE: &str = "{% for message in messages %}<|im_start|>{{ message['role'] }}\n\
{{ message['content'] }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

/// The vocabulary: (text, score, token type) — SentencePiece's `<unk>`/`<s>`/`</s>`, the
/// byte tokens `<0x00>`..`<0xFF>` (type 6), and the words `▁w0`..`▁w40`.
fn vocabulary() -> Vec<(String, f32, i32)> {
    let mut v = vec![
        ("<unk>".to_string(), 0.0, 2),
        ("<s>".to_string(), 0.0, 3),
        ("</s>".to_string(), 0.0, 3),
    ];
    v.extend((0..256).map(|b| (format!("<0x{b:02X}>"), 0.0, 6)));
    v.extend((0..VOCAB - 259).map(|i| (format!("\u{2581}w{i}"), -(i as f32), 1)));
    v
}

/// (name, rows, cols, type) of every tensor of the tiny model as architecture `arch` (`llama`,
/// or `qwen2`, which adds the q, k, v biases); weights are stored as the GGUF holds them.
pub fn tensors_of(arch: &str) -> Vec<(String, usize, usize, GgmlType)> {
    let mut t = vec![
        ("token_embd.weight".to_string(), VOCAB, EMBD, GgmlType::Q8_0),
        ("output_norm.weight".to_string(), 1, EMBD, GgmlType::F32),
        ("output.weight".to_string(), VOCAB, EMBD, GgmlType::F32),
    ];
    for i in 0..LAYERS {
        let b = |s: &str| format!("blk.{i}.{s}.weight");
        t.extend([
            (b("attn_norm"), 1, EMBD, GgmlType::F32),
            (b("attn_q"), HEADS * HD, EMBD, GgmlType::Q8_0),
            (b("attn_k"), KV_HEADS * HD, EMBD, GgmlType::Q8_0),
            (b("attn_v"), KV_HEADS * HD, EMBD, GgmlType::F32),
            (b("attn_output"), EMBD, HEADS * HD, GgmlType::Q4K),
            (b("ffn_norm"), 1, EMBD, GgmlType::F32),
            (b("ffn_gate"), FF, EMBD, GgmlType::Q4K),
            (b("ffn_up"), FF, EMBD, GgmlType::Q8_0),
            (b("ffn_down"), EMBD, FF, GgmlType::Q4K),
        ]);
        if arch == "qwen2" {
            let b = |s: &str| format!("blk.{i}.{s}.bias");
            t.extend([
                (b("attn_q"), 1, HEADS * HD, GgmlType::F32),
                (b("attn_k"), 1, KV_HEADS * HD, GgmlType::F32),
                (b("attn_v"), 1, KV_HEADS * HD, GgmlType::F32),
            ]);
        }
    }
    t
}

/// The model file and every tensor dequantized (row-major `[rows, cols]`).
pub fn build() -> (Vec<u8>, HashMap<String, Vec<f32>>) {
    build_as("llama")
}

/// [`build`] as architecture `name` (see [`tensors_of`]).
pub fn build_as(name: &str) -> (Vec<u8>, HashMap<String, Vec<f32>>) {
    let mut w = GgufWriter::new();
    let arch = |k: &str| format!("{name}.{k}");
    w.meta("general.architecture", Value::String(name.into()))
        .meta(&arch("block_count"), Value::U32(LAYERS as u32))
        .meta(&arch("context_length"), Value::U32(CONTEXT as u32))
        .meta(&arch("embedding_length"), Value::U32(EMBD as u32))
        .meta(&arch("feed_forward_length"), Value::U32(FF as u32))
        .meta(&arch("attention.head_count"), Value::U32(HEADS as u32))
        .meta(
            &arch("attention.head_count_kv"),
            Value::U32(KV_HEADS as u32),
        )
        .meta(&arch("rope.freq_base"), Value::F32(BASE))
        .meta(&arch("attention.layer_norm_rms_epsilon"), Value::F32(EPS))
        .meta(&arch("vocab_size"), Value::U32(VOCAB as u32));
    let vocab = vocabulary();
    w.meta("tokenizer.ggml.model", Value::String("llama".into()))
        .meta(
            "tokenizer.ggml.tokens",
            Value::Array(
                8,
                vocab.iter().map(|t| Value::String(t.0.clone())).collect(),
            ),
        )
        .meta(
            "tokenizer.ggml.scores",
            Value::Array(6, vocab.iter().map(|t| Value::F32(t.1)).collect()),
        )
        .meta(
            "tokenizer.ggml.token_type",
            Value::Array(5, vocab.iter().map(|t| Value::I32(t.2)).collect()),
        )
        .meta("tokenizer.ggml.bos_token_id", Value::U32(1))
        .meta("tokenizer.ggml.eos_token_id", Value::U32(EOS))
        .meta(
            "tokenizer.chat_template",
            Value::String(CHAT_TEMPLATE.into()),
        );
    let mut values = HashMap::new();
    for (i, (name, rows, cols, ty)) in tensors_of(name).into_iter().enumerate() {
        let elems = rows * cols;
        let data = if name.contains("norm") {
            // Norm weights near 1.
            let v: Vec<f32> = crate::random_f32(elems, 100 + i as u64)
                .iter()
                .map(|x| 1.0 + 0.2 * x)
                .collect();
            bytemuck::cast_slice(&v).to_vec()
        } else if ty == GgmlType::F32 {
            let v: Vec<f32> = crate::random_f32(elems, 100 + i as u64)
                .iter()
                .map(|x| 0.3 * x)
                .collect();
            bytemuck::cast_slice(&v).to_vec()
        } else {
            random_blocks(ty, elems / ty.block_elems(), 100 + i as u64)
        };
        values.insert(name.clone(), dequantize(ty, &data));
        let dims: Vec<u64> = if rows == 1 {
            vec![cols as u64]
        } else {
            vec![cols as u64, rows as u64]
        };
        w.tensor(&name, &dims, ty.ggml_id(), data);
    }
    (w.to_bytes(), values)
}
