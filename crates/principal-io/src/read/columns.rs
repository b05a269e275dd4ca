//! Columns: a selection (`columns`, `exclude`) resolved against a file's width and header, and
//! how a column is named in messages and in the hints they give.

use std::path::Path;

use crate::error::{Column, IoError, Result};
use crate::read::options::{ColumnSelector, ReadOptions};

/// Resolves `columns` and `exclude` against a file of `width` columns (with header `names`
/// when it has one) into the 0-based indices to keep, in order.
pub(crate) fn resolve_columns(
    path: &Path,
    width: usize,
    names: Option<&[String]>,
    options: &ReadOptions,
) -> Result<Vec<usize>> {
    let index_of = |sel: &ColumnSelector| -> Result<usize> {
        match sel {
            ColumnSelector::Index(i) if *i < width => Ok(*i),
            ColumnSelector::Index(i) => Err(IoError::ColumnOutOfRange {
                path: path.to_owned(),
                index: *i,
                count: width,
            }),
            ColumnSelector::Name(name) => {
                let Some(names) = names else {
                    return Err(IoError::NoHeader {
                        path: path.to_owned(),
                        name: name.clone(),
                    });
                };
                let mut hits = names
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| *n == name)
                    .map(|(i, _)| i);
                match (hits.next(), hits.next()) {
                    (Some(i), None) => Ok(i),
                    (Some(first), Some(second)) => Err(IoError::AmbiguousColumn {
                        path: path.to_owned(),
                        name: name.clone(),
                        first: first + 1,
                        second: second + 1,
                    }),
                    (None, _) => Err(IoError::UnknownColumn {
                        path: path.to_owned(),
                        name: name.clone(),
                        available: names.to_vec(),
                    }),
                }
            }
        }
    };
    let mut kept: Vec<usize> = match &options.columns {
        Some(selection) => {
            let mut kept = Vec::with_capacity(selection.len());
            for sel in selection {
                let i = index_of(sel)?;
                if kept.contains(&i) {
                    return Err(IoError::DuplicateColumn {
                        path: path.to_owned(),
                        column: column_label(i, names),
                    });
                }
                kept.push(i);
            }
            kept
        }
        None => (0..width).collect(),
    };
    let mut excluded = Vec::with_capacity(options.exclude.len());
    for sel in &options.exclude {
        excluded.push(index_of(sel)?);
    }
    kept.retain(|i| !excluded.contains(i));
    if kept.is_empty() {
        return Err(IoError::NoColumns {
            path: path.to_owned(),
            available: width,
        });
    }
    Ok(kept)
}

/// The message label of 0-based column `i`.
pub(crate) fn column_label(i: usize, names: Option<&[String]>) -> Column {
    Column {
        number: i + 1,
        name: names.and_then(|n| n.get(i)).cloned(),
    }
}

/// `name` quoted for a POSIX shell when it needs it.
pub(crate) fn shell_word(name: &str) -> String {
    let plain = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.,:/+@%".contains(&b));
    if plain {
        name.to_owned()
    } else {
        format!("'{}'", name.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_are_quoted_only_when_a_shell_would_split_or_expand_them() {
        for plain in [
            "species", "x1", "a.b", "col-2", "p/q", "k:v", "a,b", "50%", "u@h",
        ] {
            assert_eq!(shell_word(plain), plain);
        }
        assert_eq!(shell_word("my label"), "'my label'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("$HOME"), "'$HOME'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }

    #[test]
    fn column_labels_count_from_one_and_carry_the_header_name() {
        let names = ["a".to_owned(), "b".to_owned()];
        assert_eq!(
            column_label(1, Some(&names)).to_string(),
            "column 2 (\"b\")"
        );
        assert_eq!(column_label(1, None).to_string(), "column 2");
        // A header shorter than the row (ragged input) leaves the name out.
        assert_eq!(column_label(5, Some(&names)).to_string(), "column 6");
    }
}
