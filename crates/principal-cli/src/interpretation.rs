//! The interpretation figures' input from `describe`'s tables: the report and `describe
//! --figures` draw the same quantities FactoMineR's tables give, never recomputed.

use anyhow::{Result, bail};
use principal::describe::Description;
use principal_report::{Groups, Interpretation};

/// What a qualitative variable's figure needs, owned: its levels, each row's level, and the
/// levels' barycentres (rows of `quali_sup.coord`).
pub struct GroupParts {
    pub name: String,
    pub levels: Vec<String>,
    pub of_row: Vec<usize>,
    pub barycentres: principal::faer::Mat<f64>,
}

/// The groups of qualitative column `column` (its index among those described) with values
/// `values` (one per active row), from `description.quali_sup`.
pub fn group_parts(
    description: &Description,
    column: usize,
    name: &str,
    values: &[String],
) -> Result<GroupParts> {
    let Some(quali) = &description.quali_sup else {
        bail!("no qualitative variable was described");
    };
    let rows: Vec<usize> = (0..quali.categories.len())
        .filter(|&k| quali.categories[k].column == column)
        .collect();
    let levels: Vec<String> = rows
        .iter()
        .map(|&k| quali.categories[k].level.clone())
        .collect();
    let of_row = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            levels.iter().position(|l| l == v).ok_or_else(|| {
                anyhow::anyhow!("row {}: {name} = {v:?} is not among its categories", i + 1)
            })
        })
        .collect::<Result<Vec<usize>>>()?;
    let axes = quali.coord.ncols();
    let barycentres =
        principal::faer::Mat::from_fn(rows.len(), axes, |r, c| quali.coord[(rows[r], c)]);
    Ok(GroupParts {
        name: name.to_owned(),
        levels,
        of_row,
        barycentres,
    })
}

/// The figures' view of `description`: its first two axes, with the names of its rows.
pub fn interpretation<'a>(
    description: &'a Description,
    standardized: bool,
    variables: &'a [String],
    individuals: &'a [String],
    quantitative: &'a [String],
    groups: Option<&'a GroupParts>,
) -> Interpretation<'a> {
    Interpretation {
        standardized,
        eigenvalues: &description.eig.eigenvalue,
        percent: &description.eig.percent,
        variables,
        var_coord: description.var.coord.as_ref(),
        var_cor: description.var.cor.as_ref(),
        var_contrib: description.var.contrib.as_ref(),
        supplementary: description
            .quanti_sup
            .as_ref()
            .map(|q| (quantitative, q.cor.as_ref())),
        individuals,
        ind_coord: description.ind.coord.as_ref(),
        groups: groups.map(|g| Groups {
            name: &g.name,
            levels: &g.levels,
            of_row: &g.of_row,
            barycentres: g.barycentres.as_ref(),
        }),
    }
}
