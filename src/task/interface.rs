//! `[interface]`: the object files a build makes of the editable sources, and the only global
//! symbols they may define. After every build each object is read (`sandbox::foreign_globals`)
//! and a definition outside the interface fails the candidate: linked into the bench, it would
//! replace the harness's own (its timer, its printing).

use super::files::globset;
use anyhow::{Result, bail};
use globset::GlobSet;
use sandbox::RelPath;
use serde::Deserialize;
use std::path::Path;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawInterface {
    objects: Vec<String>,
    exports: Vec<String>,
}

/// A task's declared interface.
#[derive(Debug, Clone)]
pub struct Interface {
    /// Objects the build makes of the editable files, relative to the tree.
    pub objects: Vec<RelPath>,
    /// The symbols (globs) those objects may define, as task.toml lists them.
    pub export_globs: Vec<String>,
    pub exports: GlobSet,
}

pub(super) fn parse(file: &Path, raw: RawInterface) -> Result<Interface> {
    let f = file.display();
    if raw.objects.is_empty() {
        bail!(
            "{f}: interface.objects is empty: name the objects the build makes of the editable files, e.g. [\"kernel.o\"]"
        );
    }
    if raw.exports.is_empty() {
        bail!(
            "{f}: interface.exports is empty: name the symbols the kernel's header declares, e.g. [\"gemm\"]"
        );
    }
    let objects = raw
        .objects
        .iter()
        .map(|o| RelPath::new(o).map_err(|e| anyhow::anyhow!("{f}: interface.objects: {e}")))
        .collect::<Result<Vec<_>>>()?;
    Ok(Interface {
        objects,
        exports: globset(file, "interface.exports", &raw.exports)?,
        export_globs: raw.exports,
    })
}

impl Interface {
    /// What is wrong with the objects a build left in `dir`: a missing object, one that cannot
    /// be read, or the symbols it defines outside the interface. `None` when all is well.
    pub fn violation(&self, dir: &Path) -> Option<String> {
        for object in &self.objects {
            let path = object.under(dir);
            if !path.is_file() {
                return Some(format!(
                    "the build made no {object} (the task's interface.objects)"
                ));
            }
            match sandbox::foreign_globals(&path, &self.exports) {
                Err(e) => return Some(e.to_string()),
                Ok(foreign) if !foreign.is_empty() => {
                    return Some(format!(
                        "{object} defines {} outside the task's interface ({}): a candidate may not define a symbol the harness could link in place of its own",
                        foreign.join(", "),
                        self.export_globs.join(", ")
                    ));
                }
                Ok(_) => {}
            }
        }
        None
    }
}
