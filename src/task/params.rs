//! `[params]` of task.toml: the declared parameter space, its constraints, and the editable
//! file an assignment is rendered into.

use anyhow::{Result, bail};
use globset::GlobSet;
use sandbox::{ParamFormat, RelPath};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The task's parameter space and where an assignment goes.
#[derive(Debug, Clone)]
pub struct ParamsSpec {
    pub values: BTreeMap<String, Vec<Value>>,
    pub constraints: BTreeMap<String, String>,
    pub file: RelPath,
    pub format: ParamFormat,
}

/// Parses and checks `[params]`: every name an identifier, every list non-empty, the
/// constraints valid expressions, the rendered file editable.
pub(super) fn parse_params(
    file: &Path,
    editable: &GlobSet,
    mut table: toml::Table,
) -> Result<ParamsSpec> {
    let f = file.display();
    let render = match table.remove("render") {
        Some(toml::Value::Table(t)) => t,
        _ => bail!(
            "{f}: [params.render] is missing: add file = \"params.h\" (and format = \"c-define\", \"json\" or \"env\")"
        ),
    };
    let constraints = match table.remove("constraints") {
        None => BTreeMap::new(),
        Some(toml::Value::Table(t)) => t
            .into_iter()
            .map(|(k, v)| match v {
                toml::Value::String(s) => Ok((k, s)),
                _ => bail!("{f}: params.constraints.{k}: expected an expression string like \"A * B <= 4096\""),
            })
            .collect::<Result<_>>()?,
        Some(_) => bail!("{f}: params.constraints must be a table of name = \"expression\""),
    };
    let file_name = match render.get("file") {
        Some(toml::Value::String(s)) => s.clone(),
        _ => bail!("{f}: params.render.file is missing: name the file an assignment is written to"),
    };
    let format_name = match render.get("format") {
        None => "c-define".to_string(),
        Some(toml::Value::String(s)) => s.clone(),
        Some(_) => bail!("{f}: params.render.format must be a string"),
    };
    let format = ParamFormat::parse(&format_name)
        .ok_or_else(|| anyhow::anyhow!("{f}: params.render.format = {format_name:?}: expected \"c-define\", \"json\" or \"env\""))?;
    let rel =
        RelPath::new(&file_name).map_err(|e| anyhow::anyhow!("{f}: params.render.file: {e}"))?;
    if !editable.is_match(rel.as_str()) {
        bail!("{f}: params.render.file = {file_name:?} is not editable: add it to files.editable");
    }
    let mut values = BTreeMap::new();
    for (k, v) in table {
        if !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            || k.starts_with(|c: char| c.is_ascii_digit())
        {
            bail!("{f}: params.{k}: parameter names are identifiers (letters, digits, '_')");
        }
        let toml::Value::Array(items) = v else {
            bail!("{f}: params.{k}: expected a list of values, e.g. {k} = [16, 32, 64]");
        };
        if items.is_empty() {
            bail!("{f}: params.{k}: the list of values is empty");
        }
        let vals = items
            .into_iter()
            .map(|i| match i {
                toml::Value::Integer(n) => Ok(Value::from(n)),
                toml::Value::Float(x) => Ok(Value::from(x)),
                toml::Value::Boolean(b) => Ok(Value::from(b)),
                toml::Value::String(s) => Ok(Value::from(s)),
                other => bail!("{f}: params.{k}: {other} is not a number, string or boolean"),
            })
            .collect::<Result<Vec<_>>>()?;
        values.insert(k, vals);
    }
    if values.is_empty() {
        bail!("{f}: [params] declares no parameters");
    }
    proposers::ParamSpace::new(values.clone(), &constraints)
        .map_err(|e| anyhow::anyhow!("{f}: {e}"))?;
    Ok(ParamsSpec {
        values,
        constraints,
        file: rel,
        format,
    })
}
