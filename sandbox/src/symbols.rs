//! The global symbols an object file defines, read from its ELF symbol table. A candidate's
//! object may define only the task's declared interface: any other global or weak definition
//! (`clock_gettime`, `printf`, `main`) would replace the harness's own when the bench is linked,
//! and with it the timer or the figures the bench prints.

use crate::SandboxError;
use globset::GlobSet;
use object::{Object, ObjectSymbol};
use std::path::Path;

/// Largest object file read: a compiled kernel is far smaller.
const MAX_OBJECT_BYTES: u64 = 256 << 20;

/// The global and weak symbols `object` defines (common symbols included), sorted, each once.
pub fn defined_globals(object: &Path) -> Result<Vec<String>, SandboxError> {
    let what = || format!("reading {}", object.display());
    let len = std::fs::metadata(object)
        .map_err(|e| SandboxError::io(what(), e))?
        .len();
    if len > MAX_OBJECT_BYTES {
        return Err(SandboxError::BadObject {
            path: object.display().to_string(),
            why: format!("{len} bytes, over the {MAX_OBJECT_BYTES} byte cap"),
        });
    }
    let bytes = std::fs::read(object).map_err(|e| SandboxError::io(what(), e))?;
    let file = object::File::parse(&*bytes).map_err(|e| SandboxError::BadObject {
        path: object.display().to_string(),
        why: e.to_string(),
    })?;
    let mut names: Vec<String> = file
        .symbols()
        .filter(|s| s.is_global() && (s.is_definition() || s.is_common()))
        .filter_map(|s| s.name().ok().map(str::to_string))
        .filter(|n| !n.is_empty())
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

/// The symbols `object` defines that `interface` does not name.
pub fn foreign_globals(object: &Path, interface: &GlobSet) -> Result<Vec<String>, SandboxError> {
    Ok(defined_globals(object)?
        .into_iter()
        .filter(|n| !interface.is_match(n))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile(source: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let c = dir.path().join("k.c");
        let o = dir.path().join("k.o");
        std::fs::write(&c, source).unwrap_or_else(|e| panic!("{e}"));
        let status = std::process::Command::new("cc")
            .args(["-c", "-O2"])
            .arg(&c)
            .arg("-o")
            .arg(&o)
            .status()
            .unwrap_or_else(|e| panic!("cc: {e}"));
        assert!(status.success());
        (dir, o)
    }

    #[test]
    fn a_definition_outside_the_interface_is_named_and_statics_are_not() {
        let (_dir, o) = compile(
            "#include <time.h>\n\
             static int helper(int x) { return x + 1; }\n\
             int table[4];\n\
             __attribute__((weak)) int printf(const char *f, ...) { (void)f; return 0; }\n\
             int clock_gettime(clockid_t c, struct timespec *t) { (void)c; t->tv_sec = helper(0); t->tv_nsec = 0; return 0; }\n\
             void gemm(void) { table[0] = helper(1); }\n",
        );
        let all = defined_globals(&o).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(all, ["clock_gettime", "gemm", "printf", "table"]);
        let mut b = globset::GlobSetBuilder::new();
        b.add(globset::Glob::new("gemm").unwrap_or_else(|e| panic!("{e}")));
        let interface = b.build().unwrap_or_else(|e| panic!("{e}"));
        let foreign = foreign_globals(&o, &interface).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(foreign, ["clock_gettime", "printf", "table"]);
    }

    #[test]
    fn a_file_that_is_no_object_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let p = dir.path().join("kernel.o");
        std::fs::write(&p, "not an object").unwrap_or_else(|e| panic!("{e}"));
        let err = defined_globals(&p).err().map(|e| e.to_string());
        assert!(
            err.as_deref().is_some_and(|e| e.contains("kernel.o")),
            "{err:?}"
        );
    }
}
