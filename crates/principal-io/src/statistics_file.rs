//! Statistics files: the mergeable moments of part of a data set (count, mean, centred
//! cross-products), so that parts accumulated anywhere — Slurm array tasks, Spark or Dask
//! tasks, a shell loop — combine into the model one pass over all of them would give.
//!
//! A safetensors file, like a model file. Tensors (F64, little-endian, row-major): `mean`
//! `[D]`, `scatter` `[D, D]` (`Σ (x − μ)(x − μ)ᵀ`, symmetric). Metadata (strings): `format` =
//! `principal-statistics`, `format_version`, `n_samples`, `n_features`, `standardize` (whether
//! the model to be fitted standardizes: parts must agree), `precision` (`full` or `mixed`,
//! the arithmetic of the products of f32 data), `feature_names` (JSON list, when known),
//! `principal_version`.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use faer::Mat;
use principal::{MomentAccumulator, MomentParts, Moments, Precision, Scaling};
use safetensors::tensor::SafeTensors;

use crate::error::{IoError, Result};
use crate::model_file::{f64_tensor, serialize_tensors};
use crate::write::write_atomically;

/// The version of the statistics file layout this crate writes and reads.
pub const STATISTICS_FORMAT_VERSION: u32 = 1;
const FORMAT: &str = "principal-statistics";

/// The moments of part of a data set, as a statistics file holds them.
#[derive(Clone, Debug, PartialEq)]
pub struct Statistics {
    /// Count, mean and centred cross-products.
    pub moments: Moments,
    /// Whether the model to be fitted from them standardizes ([`Scaling::Standardize`]).
    pub scaling: Scaling,
    /// Names of the features, when the data had a header.
    pub feature_names: Option<Vec<String>>,
}

/// Saves `statistics` to `path`, atomically.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use principal::{faer::mat, MomentAccumulator, Scaling};
/// use principal_io::{load_statistics, merge_statistics, save_statistics, Statistics};
///
/// let x = mat![[1.0, 2.0], [3.0, 5.0], [5.0, 11.0], [0.0, 1.0]];
/// let mut paths = Vec::new();
/// for (k, rows) in [(0, 2), (2, 2)] {
///     let mut acc = MomentAccumulator::new(2);
///     acc.push(x.subrows(k, rows))?;
///     let part = Statistics { moments: acc.finish()?, scaling: Scaling::Centre, feature_names: None };
///     let path = dir.path().join(format!("part-{k}.stats"));
///     save_statistics(&path, &part)?;
///     paths.push(path);
/// }
/// let merged = merge_statistics(&paths)?;
/// assert_eq!(merged.moments.n_samples(), 4);
/// assert!((merged.moments.mean()[1] - 4.75).abs() < 1e-12);
/// assert_eq!(load_statistics(&paths[0])?.moments.n_samples(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn save_statistics(path: &Path, statistics: &Statistics) -> Result<()> {
    let moments = &statistics.moments;
    let d = moments.n_features();
    let names = statistics.feature_names.as_deref();
    IoError::check_name_count(path, names, d)?;
    let scatter = moments.scatter();
    let data: Vec<(&str, Vec<usize>, Vec<u8>)> = vec![
        (
            "mean",
            vec![d],
            moments
                .mean()
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
        ),
        (
            "scatter",
            vec![d, d],
            (0..d)
                .flat_map(|i| (0..d).map(move |j| scatter[(i, j)]))
                .flat_map(f64::to_le_bytes)
                .collect(),
        ),
    ];
    let mut meta: HashMap<String, String> = [
        ("format", FORMAT.to_owned()),
        ("format_version", STATISTICS_FORMAT_VERSION.to_string()),
        ("n_samples", moments.n_samples().to_string()),
        ("n_features", d.to_string()),
        (
            "standardize",
            (statistics.scaling == Scaling::Standardize).to_string(),
        ),
        ("precision", moments.precision().name().to_owned()),
        ("principal_version", env!("CARGO_PKG_VERSION").to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    if let Some(names) = names {
        meta.insert(
            "feature_names".into(),
            serde_json::to_string(names).unwrap_or_default(),
        );
    }
    let bytes = serialize_tensors(path, &data, meta)?;
    write_atomically(path, |w| w.write_all(&bytes))
}

/// Loads a statistics file written by [`save_statistics`], checking its format, version, every
/// tensor's type and shape, and the moments themselves ([`Moments::from_parts`]).
pub fn load_statistics(path: &Path) -> Result<Statistics> {
    let bytes = fs::read(path).map_err(|source| IoError::Open {
        path: path.to_owned(),
        source,
    })?;
    let not_statistics = |detail: String| IoError::NotStatistics {
        path: path.to_owned(),
        detail,
    };
    let (_, header) = SafeTensors::read_metadata(&bytes)
        .map_err(|e| not_statistics(format!("not a safetensors file: {e}")))?;
    let meta = header.metadata().clone().unwrap_or_default();
    match meta.get("format") {
        Some(f) if f == FORMAT => {}
        Some(f) => {
            return Err(not_statistics(format!(
                "its format is {f:?}, not {FORMAT:?}"
            )));
        }
        None => {
            return Err(not_statistics(
                "a safetensors file without the principal format tag".into(),
            ));
        }
    }
    let Some(version) = meta.get("format_version") else {
        return Err(not_statistics(
            "the metadata has no \"format_version\"".into(),
        ));
    };
    if *version != STATISTICS_FORMAT_VERSION.to_string() {
        return Err(IoError::StatisticsVersion {
            path: path.to_owned(),
            found: version.clone(),
            supported: STATISTICS_FORMAT_VERSION,
        });
    }
    let tensors = SafeTensors::deserialize(&bytes)
        .map_err(|e| not_statistics(format!("damaged tensors: {e}")))?;
    let scalar = |key: &str| -> Result<&str> {
        meta.get(key)
            .map(String::as_str)
            .ok_or_else(|| not_statistics(format!("the metadata has no {key:?}")))
    };
    let number = |key: &str| -> Result<usize> {
        let text = scalar(key)?;
        text.parse()
            .map_err(|_| not_statistics(format!("metadata {key:?} = {text:?} is not a count")))
    };
    let n_samples = number("n_samples")?;
    let d = number("n_features")?;
    let scaling = match scalar("standardize")? {
        "true" => Scaling::Standardize,
        "false" => Scaling::Centre,
        other => {
            return Err(not_statistics(format!(
                "metadata \"standardize\" = {other:?} is neither true nor false"
            )));
        }
    };
    let precision: Precision = scalar("precision")?
        .parse()
        .map_err(|e| not_statistics(format!("metadata \"precision\": {e}")))?;
    let feature_names: Option<Vec<String>> = match meta.get("feature_names") {
        None => None,
        Some(text) => {
            let names: Vec<String> = serde_json::from_str(text).map_err(|e| {
                not_statistics(format!(
                    "metadata \"feature_names\" is not a JSON list of strings: {e}"
                ))
            })?;
            if names.len() != d {
                return Err(not_statistics(format!(
                    "{} feature names for {d} features",
                    names.len()
                )));
            }
            Some(names)
        }
    };
    let mean = f64_tensor(&tensors, "mean", &[d]).map_err(not_statistics)?;
    let flat = f64_tensor(&tensors, "scatter", &[d, d]).map_err(not_statistics)?;
    let scatter = Mat::from_fn(d, d, |i, j| flat[i * d + j]);
    let moments = Moments::from_parts(MomentParts {
        n_samples,
        mean,
        scatter,
        precision,
    })
    .map_err(|source| IoError::InvalidStatistics {
        path: path.to_owned(),
        source,
    })?;
    Ok(Statistics {
        moments,
        scaling,
        feature_names,
    })
}

/// Loads and merges the statistics files `paths` (Chan's pairwise update, in the given order):
/// the moments of all their rows together. Parts must have the same number of features, the
/// same feature names (when both have names) and the same standardization; each file's
/// version and contents are checked as by [`load_statistics`].
pub fn merge_statistics(paths: &[PathBuf]) -> Result<Statistics> {
    let Some((first_path, rest)) = paths.split_first() else {
        return Err(IoError::NoInput);
    };
    let first = load_statistics(first_path)?;
    let mut acc = MomentAccumulator::from(first.moments);
    for path in rest {
        let part = load_statistics(path)?;
        let mismatch = |detail: String| {
            Err(IoError::StatisticsMismatch {
                path: path.clone(),
                first: first_path.clone(),
                detail,
            })
        };
        let d = acc.n_features();
        if part.moments.n_features() != d {
            return mismatch(format!(
                "it has {} features, the first has {d}",
                part.moments.n_features()
            ));
        }
        if let (Some(a), Some(b)) = (&first.feature_names, &part.feature_names)
            && let Some(j) = (0..d).find(|&j| a[j] != b[j])
        {
            return mismatch(format!(
                "its feature {} is {:?} where the first has {:?}",
                j + 1,
                b[j],
                a[j]
            ));
        }
        if part.scaling != first.scaling {
            let says = |s: Scaling| match s {
                Scaling::Standardize => "standardized",
                _ => "centred only",
            };
            return mismatch(format!(
                "it is {} where the first is {}; compute every part with the same --standardize",
                says(part.scaling),
                says(first.scaling)
            ));
        }
        acc.merge(MomentAccumulator::from(part.moments))
            .map_err(|source| IoError::InvalidStatistics {
                path: path.clone(),
                source,
            })?;
    }
    let moments = acc.finish().map_err(|source| IoError::InvalidStatistics {
        path: first_path.clone(),
        source,
    })?;
    Ok(Statistics {
        moments,
        scaling: first.scaling,
        feature_names: first.feature_names,
    })
}

#[cfg(test)]
mod tests {
    use principal::faer::MatRef;
    use tempfile::TempDir;

    use super::*;

    fn stats(x: MatRef<'_, f64>, scaling: Scaling, names: Option<&[&str]>) -> Statistics {
        let mut acc = MomentAccumulator::new(x.ncols());
        acc.push(x).unwrap();
        Statistics {
            moments: acc.finish().unwrap(),
            scaling,
            feature_names: names.map(|n| n.iter().map(|s| s.to_string()).collect()),
        }
    }

    fn data() -> Mat<f64> {
        Mat::from_fn(50, 3, |i, j| {
            1e6 + ((i * 7 + j * 3) % 11) as f64 * (j + 1) as f64 + (i as f64).sin()
        })
    }

    #[test]
    fn saved_statistics_load_back_bit_for_bit() {
        let dir = TempDir::new().unwrap();
        let x = data();
        for (scaling, names) in [
            (Scaling::Centre, None),
            (Scaling::Standardize, Some(&["a", "b", "c"][..])),
        ] {
            let s = stats(x.as_ref(), scaling, names);
            let path = dir.path().join("p.stats");
            save_statistics(&path, &s).unwrap();
            assert_eq!(load_statistics(&path).unwrap(), s);
            // The same statistics give the same bytes.
            let first = fs::read(&path).unwrap();
            save_statistics(&path, &s).unwrap();
            assert_eq!(fs::read(&path).unwrap(), first);
        }
    }

    #[test]
    fn merged_parts_equal_the_whole() {
        let dir = TempDir::new().unwrap();
        let x = data();
        let whole = stats(x.as_ref(), Scaling::Centre, None).moments;
        for cuts in [vec![0, 50], vec![0, 1, 50], vec![0, 13, 14, 40, 50]] {
            let paths: Vec<PathBuf> = cuts
                .windows(2)
                .enumerate()
                .map(|(k, w)| {
                    let path = dir.path().join(format!("{k}.stats"));
                    let part = stats(x.subrows(w[0], w[1] - w[0]), Scaling::Centre, None);
                    save_statistics(&path, &part).unwrap();
                    path
                })
                .collect();
            let merged = merge_statistics(&paths).unwrap().moments;
            assert_eq!(merged.n_samples(), 50);
            for i in 0..3 {
                assert!((merged.mean()[i] - whole.mean()[i]).abs() <= 1e-15 * 1e6);
                for j in 0..3 {
                    let s = whole.scatter();
                    let scale = (s[(i, i)] * s[(j, j)]).sqrt();
                    let e = (merged.scatter()[(i, j)] - s[(i, j)]).abs();
                    assert!(e <= 1e-9 * scale, "{cuts:?} ({i}, {j}): {e} of {scale}");
                }
            }
        }
    }

    /// Issue 24: parts whose counts add past the largest count were added with wrapping
    /// (2⁶⁴ − 1 and 25 samples merged into 24); the merge now names the part and the counts.
    #[test]
    fn counts_that_add_past_the_largest_are_refused() {
        let dir = TempDir::new().unwrap();
        let x = data();
        let save = |name: &str, n_samples: usize| {
            let mut parts = stats(x.as_ref(), Scaling::Centre, None)
                .moments
                .into_parts();
            parts.n_samples = n_samples;
            let s = Statistics {
                moments: Moments::from_parts(parts).unwrap(),
                scaling: Scaling::Centre,
                feature_names: None,
            };
            let path = dir.path().join(name);
            save_statistics(&path, &s).unwrap();
            path
        };
        let (max, half, small) = (
            save("max", usize::MAX),
            save("half", 1 << 63),
            save("25", 25),
        );
        let cases = [
            (vec![max.clone(), small.clone()], &small, usize::MAX, 25),
            (vec![small.clone(), max.clone()], &max, 25, usize::MAX),
            (
                vec![half.clone(), half.clone(), small.clone()],
                &half,
                1 << 63,
                1 << 63,
            ),
        ];
        for (paths, culprit, left, right) in cases {
            let e = merge_statistics(&paths).unwrap_err().to_string();
            assert_eq!(
                e,
                format!(
                    "statistics file {}: the sample counts {left} and {right} add up to more \
                     than 18446744073709551615, the largest count",
                    culprit.display()
                )
            );
        }
        // Up to the largest count, they merge.
        let merged = merge_statistics(&[save("rest", usize::MAX - 25), small]).unwrap();
        assert_eq!(merged.moments.n_samples(), usize::MAX);
    }

    #[test]
    fn parts_that_do_not_belong_together_are_refused() {
        let dir = TempDir::new().unwrap();
        let x = data();
        let save = |name: &str, s: &Statistics| {
            let path = dir.path().join(name);
            save_statistics(&path, s).unwrap();
            path
        };
        let a = save(
            "a.stats",
            &stats(x.as_ref(), Scaling::Centre, Some(&["a", "b", "c"])),
        );
        let two = save("two.stats", &stats(x.subcols(0, 2), Scaling::Centre, None));
        let renamed = save(
            "renamed.stats",
            &stats(x.as_ref(), Scaling::Centre, Some(&["a", "x", "c"])),
        );
        let standardized = save("std.stats", &stats(x.as_ref(), Scaling::Standardize, None));
        let err = |paths: &[PathBuf]| merge_statistics(paths).unwrap_err().to_string();
        let prefix = |p: &Path| {
            format!(
                "statistics file {} cannot be merged with {}: ",
                p.display(),
                a.display()
            )
        };
        assert_eq!(
            err(&[a.clone(), two.clone()]),
            prefix(&two) + "it has 2 features, the first has 3"
        );
        assert_eq!(
            err(&[a.clone(), renamed.clone()]),
            prefix(&renamed) + "its feature 2 is \"x\" where the first has \"b\""
        );
        assert_eq!(
            err(&[a.clone(), standardized.clone()]),
            prefix(&standardized)
                + "it is standardized where the first is centred only; compute every part \
                   with the same --standardize"
        );
        // Another version, another format, a damaged scatter matrix, not a file of ours.
        let bytes = fs::read(&a).unwrap();
        // Replaces `from` by `to` (of the same length, so the header's length stays right).
        let edit = |from: &str, to: &str, name: &str| {
            assert_eq!(from.len(), to.len());
            let at = bytes
                .windows(from.len())
                .position(|w| w == from.as_bytes())
                .unwrap();
            let mut out = bytes.clone();
            out[at..at + to.len()].copy_from_slice(to.as_bytes());
            let path = dir.path().join(name);
            fs::write(&path, out).unwrap();
            path
        };
        let v2 = edit(
            "\"format_version\":\"1\"",
            "\"format_version\":\"2\"",
            "v2.stats",
        );
        assert_eq!(
            err(&[a.clone(), v2.clone()]),
            format!(
                "statistics file {} has format version 2; this principal reads version 1",
                v2.display()
            )
        );
        let model = edit("principal-statistics", "principal-pcaXXXXXXX", "m.stats");
        assert!(err(&[model]).contains("its format is \"principal-pcaXXXXXXX\""));
        let garbage = dir.path().join("g.stats");
        fs::write(&garbage, b"not at all").unwrap();
        assert!(err(&[garbage]).contains("is not a principal statistics file"));
        let mut damaged = bytes.clone();
        let n = damaged.len();
        // The last value is scatter (2, 2): make it negative.
        damaged[n - 1] ^= 0x80;
        let path = dir.path().join("d.stats");
        fs::write(&path, damaged).unwrap();
        let e = load_statistics(&path).unwrap_err().to_string();
        assert!(
            e.contains("inconsistent moments: scatter (2, 2) is negative"),
            "{e}"
        );
    }
}
