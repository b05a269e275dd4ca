//! `principal align`: match a model's components to a reference model's (flip, reorder, or
//! rotate them), print the principal angles between the two subspaces, and save the aligned
//! model.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use principal::align::{AlignedModel, Alignment, align};
use principal_io::{SavedModel, load_model, save_model};
use serde_json::json;

use crate::select::show;
use crate::text::{self, sig};

#[derive(Debug, Args)]
pub struct AlignArgs {
    /// The model to align, written by `principal fit`.
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    /// The model to align it to: the same features, fitted with the same preprocessing.
    #[arg(long, value_name = "REF")]
    pub reference: PathBuf,
    /// Where to save the aligned model.
    #[arg(short, long, value_name = "ALIGNED")]
    pub output: PathBuf,
    /// Rotate the components within their subspace to best match the reference's
    /// (orthogonal Procrustes) instead of only flipping and reordering them. The rotated
    /// components are no longer eigenvectors: the codes become correlated and each
    /// explained_variance becomes the variance along the rotated component.
    #[arg(long)]
    pub rotate: bool,
    /// Print one JSON object (angles, matches, rotation) instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// A validated `align` request.
#[derive(Debug)]
pub struct AlignConfig {
    model: PathBuf,
    reference: PathBuf,
    output: PathBuf,
    alignment: Alignment,
    json: bool,
}

impl AlignConfig {
    pub fn new(args: AlignArgs) -> Self {
        AlignConfig {
            model: args.model,
            reference: args.reference,
            output: args.output,
            alignment: if args.rotate {
                Alignment::Rotate
            } else {
                Alignment::Match
            },
            json: args.json,
        }
    }
}

pub fn run(config: &AlignConfig) -> Result<()> {
    crate::models::require_pca::<AlignArgs>(&config.model, "align")?;
    crate::models::require_pca::<AlignArgs>(&config.reference, "align")?;
    let model = load_model(&config.model)?;
    let reference = load_model(&config.reference)?;
    let cannot = || {
        format!(
            "cannot align {} to {}",
            show(&config.model),
            show(&config.reference)
        )
    };
    check_names(&model, &reference).with_context(cannot)?;
    let aligned = align(&model.model, &reference.model, config.alignment).with_context(cannot)?;
    let names = model
        .feature_names
        .as_deref()
        .or(reference.feature_names.as_deref());
    save_model(&config.output, &aligned.model, names)?;
    let text = if config.json {
        let mut s = serde_json::to_string_pretty(&to_json(&aligned, config))?;
        s.push('\n');
        s
    } else {
        table(&aligned, config)
    };
    text::stdout(&text)
}

/// The two models' feature names, when both know them, must be the same in the same order.
fn check_names(model: &SavedModel, reference: &SavedModel) -> Result<()> {
    let (Some(ours), Some(theirs)) = (&model.feature_names, &reference.feature_names) else {
        return Ok(());
    };
    if ours.len() != theirs.len() {
        // The core names the counts.
        return Ok(());
    }
    if let Some(j) = (0..ours.len()).find(|&j| ours[j] != theirs[j]) {
        bail!(
            "feature {} is {:?} in the model but {:?} in the reference (features count from 1)",
            j + 1,
            ours[j],
            theirs[j]
        );
    }
    Ok(())
}

fn degrees(radians: &[f64]) -> Vec<f64> {
    radians.iter().map(|t| t.to_degrees()).collect()
}

fn to_json(aligned: &AlignedModel, config: &AlignConfig) -> serde_json::Value {
    let components: Vec<serde_json::Value> = aligned
        .matches
        .iter()
        .enumerate()
        .map(|(k, m)| {
            json!({
                "component": k + 1,
                "original": m.original + 1,
                "reference": m.reference.map(|j| j + 1),
                "flipped": m.flipped,
                "cosine": m.cosine,
                "explained_variance": aligned.model.explained_variance()[k],
            })
        })
        .collect();
    let rotation = aligned.rotation.as_ref().map(|r| {
        (0..r.nrows())
            .map(|i| (0..r.ncols()).map(|j| r[(i, j)]).collect::<Vec<f64>>())
            .collect::<Vec<_>>()
    });
    json!({
        "model": show(&config.model),
        "reference": show(&config.reference),
        "output": show(&config.output),
        "alignment": match config.alignment {
            Alignment::Match => "match",
            Alignment::Rotate => "rotate",
        },
        "basis": aligned.model.basis().name(),
        "principal_angles_degrees": degrees(&aligned.angles),
        "components": components,
        "rotation": rotation,
    })
}

fn table(aligned: &AlignedModel, config: &AlignConfig) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "aligned {} to {} ({}), saved to {}",
        show(&config.model),
        show(&config.reference),
        match config.alignment {
            Alignment::Match => "matched and flipped",
            Alignment::Rotate => "rotated: the components are no longer eigenvectors",
        },
        show(&config.output)
    );
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<10} {:>9} {:>10} {:>8} {:>12} {:>20}",
        "component", "original", "reference", "flipped", "cosine", "explained_variance"
    );
    for (k, m) in aligned.matches.iter().enumerate() {
        let original = match config.alignment {
            Alignment::Match => format!("pc{}", m.original + 1),
            Alignment::Rotate => "rotated".into(),
        };
        let _ = writeln!(
            s,
            "{:<10} {:>9} {:>10} {:>8} {:>12} {:>20}",
            format!("pc{}", k + 1),
            original,
            m.reference
                .map(|j| format!("pc{}", j + 1))
                .unwrap_or_else(|| "-".into()),
            if m.flipped { "yes" } else { "no" },
            format!("{:.6}", m.cosine),
            sig(aligned.model.explained_variance()[k], 9),
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "principal angles between the subspaces (degrees):");
    let angles: Vec<String> = degrees(&aligned.angles)
        .iter()
        .map(|a| format!("{a:.4}"))
        .collect();
    let _ = writeln!(s, "{}", angles.join(" "));
    s
}
