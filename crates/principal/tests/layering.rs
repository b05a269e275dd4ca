//! The crate's layering, enforced: imports flow one way, downwards, so there are no module
//! cycles.
//!
//! Every source file of `crates/principal/src` is a module with a place in [`LAYERS`], listed
//! bottom to top. A module may use only modules of lower layers (its own items aside), always
//! by a `crate::` path to the module that defines the item (`crate::moments::chunk::…`, never
//! the crate root's re-exports, which are for users, nor `super::`). Test code
//! (`#[cfg(test)]` items) is exempt: tests are leaves that nothing imports, and may use any
//! module. The test fails naming the file and the import that breaks the order.
//!
//! `cargo test --release -p principal --test layering -- --nocapture` prints the module graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, bottom to top. Inside a folder: its leaves first, its `mod.rs` where it sits in
/// the folder's own order (a door above its parts, or a base below them).
const LAYERS: &[&[&str]] = &[
    // What everything may use: the error type and the options.
    &["error", "options"],
    // Choosing the number of components, the rules that read a spectrum: what a choice
    // records, then the rules (Gavish–Donoho on the Marchenko–Pastur median).
    &["choose::choice", "choose::marchenko_pastur"],
    &["choose::rules", "choose::evidence", "choose::threshold"],
    // The element types (f32, f64) and chunks of them.
    &["real"],
    // Re-readable sources; the leaves of the numeric kernels.
    &["data", "kernel::simd", "kernel::parallel", "kernel::bytes"],
    // Several processes: the collective operations and the agreement before each reduction.
    &[
        "kernel::scan",
        "kernel::blocks",
        "kernel::products",
        "collective",
    ],
    &["kernel"],
    // Streaming moments: buffers and Chan's update, then one file per path, then the choice,
    // then the accumulator.
    &["moments::workspace", "moments::merge"],
    &["moments::integer", "moments::float", "moments::columns"],
    &["moments::bytes"],
    &["moments::ordered"],
    &["moments::chunk"],
    &["moments"],
    // Centring and scaling from moments or data.
    &["preprocess"],
    // Parallel analysis: permuted copies of data in memory.
    &["choose::parallel"],
    // The solvers: the problems and the shared eigensolver, then one file per solver.
    &["solver"],
    &[
        "solver::iterative",
        "solver::covariance",
        "solver::gram",
        "solver::svd",
    ],
    &[
        "solver::randomized",
        "solver::power",
        "solver::em",
        "solver::missing",
    ],
    // The model; auto's plan; nearest neighbours among codes (recognition).
    &["model", "plan", "neighbours"],
    // Probabilistic PCA on the model: the Gaussian model, then the door.
    &["probabilistic::gaussian"],
    &["probabilistic::sampling", "probabilistic::observed"],
    &["probabilistic"],
    // Cross-validation's folds and their held-out likelihoods, under a fold's model.
    &["choose::held_out"],
    // Parameters, then fitting them.
    &["params"],
    &["fit"],
    // Every criterion side by side, from one fit.
    &["choose"],
    // The crate root: re-exports only.
    &["crate"],
];

#[test]
fn imports_flow_down_the_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let layer_of: BTreeMap<&str, usize> = LAYERS
        .iter()
        .enumerate()
        .flat_map(|(layer, modules)| modules.iter().map(move |m| (*m, layer)))
        .collect();
    let files = source_files(&src);
    let mut problems = Vec::new();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let found: BTreeSet<String> = files.iter().map(|f| module_of(&src, f)).collect();
    for module in layer_of.keys() {
        if !found.contains(*module) {
            problems.push(format!("{module} is in LAYERS but has no source file"));
        }
    }
    for file in &files {
        let module = module_of(&src, file);
        let shown = file.strip_prefix(&src).unwrap().display().to_string();
        let Some(&own) = layer_of.get(module.as_str()) else {
            problems.push(format!(
                "src/{shown}: module {module} has no place in LAYERS"
            ));
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap();
        let code = without_tests(&code_only(&text));
        let uses = graph.entry(module.clone()).or_default();
        for path in crate_paths(&code) {
            let written = path.join("::");
            if path[0] == "super" || path[0] == "self" {
                problems.push(format!(
                    "src/{shown}: `{written}`: use a crate:: path, so that the dependency shows"
                ));
                continue;
            }
            let target = resolve(&path[1..], &layer_of);
            let Some(target) = target else {
                problems.push(format!(
                    "src/{shown}: `{written}` goes through the crate root; name the module \
                     that defines it"
                ));
                continue;
            };
            if target == module {
                continue;
            }
            uses.insert(target.clone());
            if layer_of[target.as_str()] >= own {
                problems.push(format!(
                    "src/{shown}: `{written}`: {module} (layer {own}) may not use {target} \
                     (layer {})",
                    layer_of[target.as_str()]
                ));
            }
        }
    }
    println!("principal's modules, top layer first (each with the modules it uses):");
    for (layer, modules) in LAYERS.iter().enumerate().rev() {
        for module in *modules {
            let uses = graph.get(*module).cloned().unwrap_or_default();
            let uses: Vec<String> = uses.into_iter().collect();
            println!("  {layer:>2}  {module:<20} → {}", uses.join(", "));
        }
    }
    assert!(
        problems.is_empty(),
        "the layering is broken:\n  {}",
        problems.join("\n  ")
    );
}

/// The checker itself: a cycle (two modules using each other) and an import through the root
/// are caught; comments, strings and test code are not read as imports.
#[test]
fn the_checker_sees_upward_imports_and_ignores_comments_and_tests() {
    let code = code_only(
        "use crate::moments::chunk::piece; // crate::fit::x\n\
         let s = \"crate::model::y\";\n\
         #[cfg(test)]\nmod tests { use crate::fit::FitX; }\n\
         fn f() { crate::solver::{iterative::gaussian, svd}::x(); }\n\
         use crate::{error::PcaError, real::Real};\n\
         const C: char = '{';\n",
    );
    let paths: Vec<String> = crate_paths(&without_tests(&code))
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(
        paths,
        [
            "crate::moments::chunk::piece",
            "crate::solver::iterative::gaussian",
            "crate::solver::svd",
            "crate::error::PcaError",
            "crate::real::Real",
        ]
    );
    let layer_of: BTreeMap<&str, usize> = [("moments", 1), ("moments::chunk", 0)]
        .into_iter()
        .collect();
    let to = |p: &[&str]| {
        let p: Vec<String> = p.iter().map(|s| s.to_string()).collect();
        resolve(&p, &layer_of)
    };
    assert_eq!(
        to(&["moments", "chunk", "x"]).as_deref(),
        Some("moments::chunk")
    );
    assert_eq!(
        to(&["moments", "MomentAccumulator"]).as_deref(),
        Some("moments")
    );
    assert_eq!(to(&["MomentAccumulator"]), None);
}

/// Every `.rs` file under `dir`, sorted.
fn source_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(source_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// `lib.rs` → `crate`, `a/mod.rs` → `a`, `a/b.rs` → `a::b`.
fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts == ["lib"] {
        return "crate".into();
    }
    parts.join("::")
}

/// The declared module a path (after `crate::`) lands in: its longest prefix in the table;
/// `None` when even its first segment is not a module (an item re-exported at the root).
fn resolve(path: &[String], layer_of: &BTreeMap<&str, usize>) -> Option<String> {
    (1..=path.len())
        .rev()
        .map(|len| path[..len].join("::"))
        .find(|prefix| layer_of.contains_key(prefix.as_str()))
}

/// The source with comments, and the contents of string and character literals, blanked.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && is_raw_string(&chars, i) {
            let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
            i += 2 + hashes;
            let closing: String = std::iter::once('"')
                .chain("#".repeat(hashes).chars())
                .collect();
            while i < chars.len() && !chars[i..].iter().collect::<String>().starts_with(&closing) {
                i += 1;
            }
            i += closing.len();
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && is_char_literal(&chars, i) {
            i += 1;
            while chars[i] != '\'' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Whether `r` at `i` opens a raw string (`r"…"`, `r#"…"#`) rather than ending an identifier.
fn is_raw_string(chars: &[char], i: usize) -> bool {
    let starts_word = i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
    let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
    starts_word && chars.get(i + 1 + hashes) == Some(&'"')
}

/// Whether `'` at `i` opens a character literal (`'x'`, `'\n'`) rather than a lifetime.
fn is_char_literal(chars: &[char], i: usize) -> bool {
    matches!(
        (chars.get(i + 1), chars.get(i + 2)),
        (Some('\\'), _) | (Some(_), Some('\''))
    )
}

/// `code` without the items marked `#[cfg(test)]`.
fn without_tests(code: &str) -> String {
    let marker = "#[cfg(test)]";
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find(marker) {
        out.push_str(&rest[..at]);
        let item = &rest[at + marker.len()..];
        // The item ends at its first `;` outside braces, or where its first brace closes.
        let mut depth = 0usize;
        let mut end = item.len();
        for (k, c) in item.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = k + 1;
                    break;
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// Every path that starts with `crate::`, `super::` or `self::`, with use-trees
/// (`crate::a::{b, c::d}`) expanded into one path per leaf.
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let tokens = tokens(code);
    let mut paths = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let starts = matches!(tokens[i].as_str(), "crate" | "super" | "self")
            && tokens.get(i + 1).is_some_and(|t| t == "::")
            && (i == 0 || tokens[i - 1] != "::");
        if starts {
            let mut prefix = vec![tokens[i].clone()];
            i = use_tree(&tokens, i + 2, &mut prefix, &mut paths);
        } else {
            i += 1;
        }
    }
    paths
}

/// Reads a use-tree at `tokens[i]` after `prefix::`; pushes its leaves; returns where it ends.
fn use_tree(
    tokens: &[String],
    mut i: usize,
    prefix: &mut Vec<String>,
    paths: &mut Vec<Vec<String>>,
) -> usize {
    let depth = prefix.len();
    loop {
        match tokens.get(i).map(String::as_str) {
            Some("{") => {
                i += 1;
                loop {
                    i = use_tree(tokens, i, prefix, paths);
                    match tokens.get(i).map(String::as_str) {
                        Some(",") => i += 1,
                        Some("}") => {
                            i += 1;
                            break;
                        }
                        _ => break,
                    }
                    if tokens.get(i).is_some_and(|t| t == "}") {
                        i += 1;
                        break;
                    }
                }
                prefix.truncate(depth);
                return i;
            }
            Some(word) if is_identifier(word) || word == "*" => {
                if word != "self" && word != "*" {
                    prefix.push(word.to_string());
                }
                i += 1;
                if tokens.get(i).is_some_and(|t| t == "::") {
                    i += 1;
                    continue;
                }
                if tokens.get(i).is_some_and(|t| t == "as") {
                    i += 2;
                }
                paths.push(prefix.clone());
                prefix.truncate(depth);
                return i;
            }
            _ => {
                if prefix.len() > 1 {
                    paths.push(prefix.clone());
                }
                prefix.truncate(depth);
                return i;
            }
        }
    }
}

fn is_identifier(word: &str) -> bool {
    word.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && word.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// Identifiers, `::` and single punctuation characters.
fn tokens(code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            tokens.push("::".into());
            i += 2;
        } else {
            if !c.is_whitespace() {
                tokens.push(c.to_string());
            }
            i += 1;
        }
    }
    tokens
}
