//! The layering checker that every crate's `tests/layering.rs` runs over its own `src`
//! (principal's, and principal-cli's and principal-report's, which include this file by path).
//!
//! Every source file is a module with a place in the crate's table of layers, listed bottom to
//! top. A module may use only modules of lower layers (its own items aside), always by a
//! `crate::` path to the module that defines the item (never the crate root's re-exports, which
//! are for users, nor `super::` or `self::`), or by a path through a module it declares itself
//! (`mod figure; pub use figure::Figure;`), which must then be a lower layer too. Test code
//! (`#[cfg(test)]` items) is exempt: tests are leaves that nothing imports, and may use any
//! module. A failure names the file and the import that breaks the order.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Checks the modules of the crate whose sources are in `src` against `layers` (bottom to
/// top), printing the module graph (seen with `--nocapture`); panics listing every problem.
pub fn assert_layered(crate_name: &str, src: &Path, layers: &[&[&str]]) {
    let layer_of: BTreeMap<&str, usize> = layers
        .iter()
        .enumerate()
        .flat_map(|(layer, modules)| modules.iter().map(move |m| (*m, layer)))
        .collect();
    let files = source_files(src);
    let mut problems = Vec::new();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let found: BTreeSet<String> = files.iter().map(|f| module_of(src, f)).collect();
    for module in layer_of.keys() {
        if !found.contains(*module) {
            problems.push(format!("{module} is in LAYERS but has no source file"));
        }
    }
    for file in &files {
        let module = module_of(src, file);
        let shown = file.strip_prefix(src).unwrap().display().to_string();
        let Some(&own) = layer_of.get(module.as_str()) else {
            problems.push(format!(
                "src/{shown}: module {module} has no place in LAYERS"
            ));
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap();
        let code = without_tests(&code_only(&text));
        let children = child_modules(&code);
        let uses = graph.entry(module.clone()).or_default();
        for path in crate_paths(&code, &children) {
            let written = path.join("::");
            if path[0] == "super" || path[0] == "self" {
                problems.push(format!(
                    "src/{shown}: `{written}`: use a crate:: path, so that the dependency shows"
                ));
                continue;
            }
            // A path through a declared child module starts at this module.
            let from_root: Vec<String> = if path[0] == "crate" {
                path[1..].to_vec()
            } else if module == "crate" {
                path.clone()
            } else {
                module
                    .split("::")
                    .map(String::from)
                    .chain(path.clone())
                    .collect()
            };
            let Some(target) = resolve(&from_root, &layer_of) else {
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
    println!("{crate_name}'s modules, top layer first (each with the modules it uses):");
    for (layer, modules) in layers.iter().enumerate().rev() {
        for module in *modules {
            let uses = graph.get(*module).cloned().unwrap_or_default();
            let uses: Vec<String> = uses.into_iter().collect();
            println!("  {layer:>2}  {module:<24} → {}", uses.join(", "));
        }
    }
    assert!(
        problems.is_empty(),
        "{crate_name}'s layering is broken:\n  {}",
        problems.join("\n  ")
    );
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

/// `lib.rs` and `main.rs` → `crate`, `a/mod.rs` → `a`, `a/b.rs` → `a::b`.
fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts == ["lib"] || parts == ["main"] {
        return "crate".into();
    }
    parts.join("::")
}

/// The declared module a path (after `crate::`) lands in: its longest prefix in the table;
/// `None` when even its first segment is not a module (an item re-exported at the root).
pub fn resolve(path: &[String], layer_of: &BTreeMap<&str, usize>) -> Option<String> {
    (1..=path.len())
        .rev()
        .map(|len| path[..len].join("::"))
        .find(|prefix| layer_of.contains_key(prefix.as_str()))
}

/// The source with comments, and the contents of string and character literals, blanked.
pub fn code_only(text: &str) -> String {
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
pub fn without_tests(code: &str) -> String {
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

/// Every path that starts with `crate::`, `super::`, `self::` or one of `children` (the
/// modules the file declares), with use-trees (`crate::a::{b, c::d}`) expanded into one path
/// per leaf.
pub fn crate_paths(code: &str, children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let tokens = tokens(code);
    let mut paths = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let word = tokens[i].as_str();
        let starts = (matches!(word, "crate" | "super" | "self") || children.contains(word))
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

/// The modules a file declares in other files (`mod a;`, `pub(crate) mod b;`).
pub fn child_modules(code: &str) -> BTreeSet<String> {
    let tokens = tokens(code);
    tokens
        .windows(3)
        .filter(|w| w[0] == "mod" && is_identifier(&w[1]) && w[2] == ";")
        .map(|w| w[1].clone())
        .collect()
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
