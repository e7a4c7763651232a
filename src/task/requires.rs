//! What a task needs of the machine (`requires` in task.toml): an NVIDIA GPU, `nvcc`, `vllm`. Checked
//! before anything runs, so a GPU task on a laptop stops at once with what is missing, and the
//! GPU's device nodes, which the sandbox's private /dev otherwise hides, are named for binding.

use crate::measure::text_enum::text_enum;
use std::path::{Path, PathBuf};

text_enum! {
    /// Something a task needs of the machine it runs on.
    pub enum Requirement {
        NvidiaGpu = "nvidia-gpu",
        Nvcc = "nvcc",
        /// vLLM's command-line tool (`vllm serve`), the user's installation.
        Vllm = "vllm",
    }
}

/// The control node every NVIDIA driver creates.
const NVIDIA_CONTROL: &str = "/dev/nvidiactl";

/// Why this machine lacks `r`, or `None` when it has it.
fn lacks(r: Requirement, path_var: &str, dev: &Path) -> Option<String> {
    let on_path = |bin: &str| {
        path_var
            .split(':')
            .any(|d| Path::new(d).join(bin).is_file())
    };
    match r {
        Requirement::NvidiaGpu => {
            let control = dev.join(
                Path::new(NVIDIA_CONTROL)
                    .strip_prefix("/dev")
                    .unwrap_or(Path::new("nvidiactl")),
            );
            (!control.exists()).then(|| format!("an NVIDIA GPU (no {})", control.display()))
        }
        Requirement::Nvcc => (!on_path("nvcc")).then(|| "nvcc (not on PATH)".to_string()),
        Requirement::Vllm => (!on_path("vllm")).then(|| "vllm (not on PATH)".to_string()),
    }
}

/// Everything of `requires` this machine lacks, each with the reason, looking for devices under
/// `dev` (`/dev` outside tests).
pub fn missing(requires: &[Requirement], path_var: &str, dev: &Path) -> Vec<String> {
    requires
        .iter()
        .filter_map(|r| lacks(*r, path_var, dev))
        .collect()
}

/// The device nodes a task that needs an NVIDIA GPU must see: `/dev/nvidia*` (the GPUs, the
/// control node, uvm, modeset), `/dev/nvidia-caps` and `/dev/dri` where present.
pub fn gpu_devices(dev: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dev) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("nvidia") || name == "dri"
        })
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_what_is_missing_and_finds_gpu_nodes() {
        let dev = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let all = [Requirement::NvidiaGpu, Requirement::Nvcc, Requirement::Vllm];
        let lacking = missing(&all, "/nonexistent", dev.path());
        assert_eq!(lacking.len(), 3, "{lacking:?}");
        assert!(lacking[0].starts_with("an NVIDIA GPU (no "), "{lacking:?}");
        assert_eq!(lacking[1], "nvcc (not on PATH)");
        assert_eq!(lacking[2], "vllm (not on PATH)");
        for node in ["nvidiactl", "nvidia0", "nvidia-uvm", "null"] {
            std::fs::write(dev.path().join(node), "").unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::create_dir(dev.path().join("dri")).unwrap_or_else(|e| panic!("{e}"));
        assert!(missing(&[Requirement::NvidiaGpu], "", dev.path()).is_empty());
        let nodes: Vec<String> = gpu_devices(dev.path())
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        assert_eq!(nodes, ["dri", "nvidia-uvm", "nvidia0", "nvidiactl"]);
    }
}
