//! Which effects the model search's surrogate fits: one per declared value of every parameter
//! and, for the parameter that selects among algorithms, one per value of every other parameter
//! under each of its values. A parameter selects among algorithms when its values fix others
//! through the constraints (matmul-c's register tiles fix ROWS and BLOCK_N): the same block size
//! can then help one algorithm and hurt another, which one additive effect cannot say (in the
//! spirit of TPE's tree-structured, conditional spaces). A parameter an algorithm fixes has no
//! main effect under it.

use crate::Params;
use crate::search::space::ParamSpace;

/// A block of effects, one per value of `param`, that applies to every assignment or, for a
/// branch, only to those whose parameter `under.0` takes its `under.1`-th value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Group {
    pub(crate) param: usize,
    pub(crate) under: Option<(usize, usize)>,
    /// Its columns: `offset..offset + size`.
    pub(crate) offset: usize,
    pub(crate) size: usize,
}

#[derive(Debug, Clone)]
pub(crate) struct Features {
    /// The main effects first, one group per parameter in the space's order (so `groups[i]` is
    /// parameter `i`'s), then the groups under each branch.
    pub(crate) groups: Vec<Group>,
    pub(crate) dim: usize,
    /// (value of the algorithm choice, parameter): a parameter its constraints fix under that
    /// value. Its main effect does not apply there: the value is the algorithm's, not a choice,
    /// so a poor algorithm must not make it look poor elsewhere (the register tiles fix
    /// `BLOCK_N=0`, the best block size of i-k-j on decode).
    fixed: Vec<(usize, usize)>,
    /// The parameter taken as the algorithm choice: the one the branch groups are under.
    choice: Option<usize>,
}

/// Index of every parameter's value in `p`, in the space's order.
pub(crate) fn indices(space: &ParamSpace, p: &Params) -> Vec<usize> {
    space
        .values
        .iter()
        .map(|(k, vals)| {
            p.get(k)
                .and_then(|v| vals.iter().position(|x| x == v))
                .unwrap_or(0)
        })
        .collect()
}

/// Under each value of the algorithm choice (its index), the other parameters' indices and
/// those of the ones it fixes.
type Branches = Vec<(usize, Vec<usize>, Vec<usize>)>;

/// How many distinct values parameter `y` takes among `rows`.
fn distinct(rows: &[&Vec<usize>], y: usize) -> usize {
    let mut seen: Vec<usize> = rows.iter().map(|r| r[y]).collect();
    seen.sort_unstable();
    seen.dedup();
    seen.len()
}

/// The parameter whose values fix the most other parameters (that vary elsewhere) to a single
/// value, with, for each of its values, the other parameters that vary in the space. A fixed one
/// keeps its group under the branch (one column, an effect of the branch itself), so every
/// branch has as many effects as the others and none is favoured by the surrogate's bonuses.
fn algorithm_choice(space: &ParamSpace, valid: &[Params]) -> Option<(usize, Branches)> {
    let valid: Vec<Vec<usize>> = valid.iter().map(|p| indices(space, p)).collect();
    let all: Vec<&Vec<usize>> = valid.iter().collect();
    let n = space.values.len();
    let sizes: Vec<usize> = space.values.values().map(Vec::len).collect();
    let varies: Vec<bool> = (0..n).map(|y| distinct(&all, y) > 1).collect();
    let mut best: Option<(usize, usize, Branches)> = None;
    for x in 0..n {
        let others: Vec<usize> = (0..n).filter(|y| *y != x && varies[*y]).collect();
        let mut fixed = vec![false; n];
        let mut branches = Vec::new();
        for b in 0..sizes[x] {
            let rows: Vec<&Vec<usize>> = valid.iter().filter(|r| r[x] == b).collect();
            if rows.is_empty() {
                continue;
            }
            let here: Vec<usize> = others
                .iter()
                .copied()
                .filter(|&y| distinct(&rows, y) == 1)
                .collect();
            for &y in &here {
                fixed[y] = true;
            }
            branches.push((b, others.clone(), here));
        }
        let score = fixed.iter().filter(|f| **f).count();
        if score > 0 && best.as_ref().is_none_or(|(s, _, _)| score > *s) {
            best = Some((score, x, branches));
        }
    }
    best.map(|(_, x, branches)| (x, branches))
}

impl Features {
    /// The effects for `space`, given every valid assignment where the space is small enough to
    /// enumerate (else one effect per declared value only).
    pub(crate) fn new(space: &ParamSpace, valid: Option<&[Params]>) -> Self {
        let sizes: Vec<usize> = space.values.values().map(Vec::len).collect();
        let mut groups: Vec<Group> = Vec::new();
        let mut dim = 0;
        for (param, size) in sizes.iter().enumerate() {
            groups.push(Group {
                param,
                under: None,
                offset: dim,
                size: *size,
            });
            dim += size;
        }
        let mut fixed = Vec::new();
        if let Some((x, branches)) = valid.and_then(|v| algorithm_choice(space, v)) {
            for (b, others, here) in branches {
                fixed.extend(here.into_iter().map(|y| (b, y)));
                for param in others {
                    groups.push(Group {
                        param,
                        under: Some((x, b)),
                        offset: dim,
                        size: sizes[param],
                    });
                    dim += sizes[param];
                }
            }
        }
        let choice = groups.iter().find_map(|g| g.under.map(|(x, _)| x));
        Features {
            groups,
            dim,
            fixed,
            choice,
        }
    }

    /// The parameter taken as the algorithm choice, if any.
    pub(crate) fn choice(&self) -> Option<usize> {
        self.choice
    }

    /// The groups that apply to an assignment (given as `indices`), each with its column.
    pub(crate) fn columns<'a>(
        &'a self,
        at: &'a [usize],
    ) -> impl Iterator<Item = (&'a Group, usize)> + 'a {
        let branch = self.choice().map(|x| at[x]);
        self.groups
            .iter()
            .filter(move |g| match g.under {
                Some((x, b)) => at[x] == b,
                None => branch.is_none_or(|b| !self.fixed.contains(&(b, g.param))),
            })
            .map(|g| (g, g.offset + at[g.param]))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::Value;
    use std::collections::BTreeMap;

    /// ALGO in 0..algos, BLOCK in 0..4 and ROWS in 1..4, under `constraints`.
    pub(crate) fn space(algos: i64, constraints: &[(&str, &str)]) -> ParamSpace {
        let values = BTreeMap::from([
            ("ALGO".to_string(), (0..algos).map(Value::from).collect()),
            ("BLOCK".to_string(), (0..4).map(Value::from).collect()),
            ("ROWS".to_string(), (1..4).map(Value::from).collect()),
        ]);
        let constraints = constraints
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ParamSpace::new(values, &constraints).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_parameter_that_fixes_others_gets_effects_per_branch() {
        // ALGO 2 fixes ROWS (ROWS fixes nothing: 1 and 3 leave ALGO 0 or 1).
        let s = space(3, &[("tiles", "ALGO != 2 || ROWS == 2")]);
        let f = Features::new(&s, Some(&s.all_valid()));
        let branches: Vec<_> = f.groups.iter().filter_map(|g| g.under).collect();
        assert!(branches.iter().all(|(x, _)| *x == 0), "{branches:?}");
        // Under each ALGO: BLOCK and ROWS.
        assert_eq!(branches.len(), 6);
        assert_eq!(f.dim, 3 + 4 + 3 + 3 * (4 + 3));
        let at = [2, 1, 1];
        let cols: Vec<usize> = f.columns(&at).map(|(_, c)| c).collect();
        assert_eq!(
            cols.len(),
            4,
            "ALGO's and BLOCK's main effects, BLOCK and ROWS under ALGO 2 (ALGO 2 fixes ROWS, \
             so ROWS's main effect does not apply)"
        );
        let rows_main = f.groups[2].offset + 1;
        assert!(!cols.contains(&rows_main), "{cols:?}");
        // Two assignments that differ only in ALGO share no branch column, and under ALGO 1,
        // where ROWS is chosen, its main effect applies.
        let other: Vec<usize> = f.columns(&[1, 1, 1]).map(|(_, c)| c).collect();
        assert_eq!(other.len(), 5);
        assert!(other.contains(&rows_main), "{other:?}");
        assert_eq!(other.iter().filter(|c| cols.contains(c)).count(), 1);
        let mut unique = cols.clone();
        unique.dedup();
        assert_eq!(unique, cols);
    }

    #[test]
    fn without_such_constraints_the_effects_are_additive() {
        let s = space(3, &[("small", "BLOCK + ROWS < 7")]);
        let f = Features::new(&s, Some(&s.all_valid()));
        assert!(f.groups.iter().all(|g| g.under.is_none()));
        assert_eq!(f.dim, 10);
        // Nor where the space is too large to enumerate.
        let tiles = space(3, &[("tiles", "ALGO != 2 || ROWS == 2")]);
        assert_eq!(Features::new(&tiles, None).dim, 10);
    }
}
