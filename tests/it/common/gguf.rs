//! A GGUF file written for the serving tasks' tests: a header, metadata a reader must skip, and
//! tensor descriptions (no tensor data: the harness reads only the header).

use std::path::Path;

/// A GGUF file (version 3) with metadata of every kind a reader must skip (a string, an array
/// of strings, an array of numbers, a number) and `tensors`: (name, dimensions, ggml type).
pub fn gguf(path: &Path, tensors: &[(&str, &[u64], u32)]) {
    fn string(out: &mut Vec<u8>, s: &str) {
        out.extend((s.len() as u64).to_le_bytes());
        out.extend(s.as_bytes());
    }
    let mut out = b"GGUF".to_vec();
    out.extend(3u32.to_le_bytes());
    out.extend((tensors.len() as u64).to_le_bytes());
    out.extend(4u64.to_le_bytes());
    string(&mut out, "general.architecture");
    out.extend(8u32.to_le_bytes());
    string(&mut out, "qwen2");
    string(&mut out, "tokenizer.ggml.tokens");
    out.extend(9u32.to_le_bytes());
    out.extend(8u32.to_le_bytes());
    out.extend(3u64.to_le_bytes());
    for t in ["<s>", "a", "bc"] {
        string(&mut out, t);
    }
    string(&mut out, "tokenizer.ggml.scores");
    out.extend(9u32.to_le_bytes());
    out.extend(6u32.to_le_bytes());
    out.extend(3u64.to_le_bytes());
    out.extend([0u8; 12]);
    string(&mut out, "qwen2.block_count");
    out.extend(4u32.to_le_bytes());
    out.extend(1u32.to_le_bytes());
    let mut offset = 0u64;
    for (name, dims, kind) in tensors {
        string(&mut out, name);
        out.extend((dims.len() as u32).to_le_bytes());
        for d in *dims {
            out.extend(d.to_le_bytes());
        }
        out.extend(kind.to_le_bytes());
        out.extend(offset.to_le_bytes());
        offset += 1 << 16;
    }
    std::fs::write(path, out).unwrap();
}
