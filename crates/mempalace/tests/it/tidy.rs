//! Repository hygiene that a reviewer should not have to check by hand
//! (STYLE §9): every Rust file opens with a `//!` doc saying what it is for.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable source tree") {
        let path = entry.expect("directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !matches!(name, "target" | ".git" | "node_modules" | ".venv") {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_rust_file_opens_with_a_module_doc() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &mut files);
    assert!(files.len() > 20, "found only {} files", files.len());
    let missing: Vec<String> = files
        .iter()
        .filter(|path| {
            let text = std::fs::read_to_string(path).expect("readable file");
            !text.trim_start().starts_with("//!")
        })
        .map(|path| path.strip_prefix(&root).unwrap_or(path).display().to_string())
        .collect();
    assert!(missing.is_empty(), "files without a `//!` module doc: {missing:?}");
}

/// docs/llm.md shows each job's prompt exactly as it is sent.
#[test]
fn the_documented_prompts_are_the_ones_sent() {
    use mempalace_core::prompts::{CLASSIFY_SYSTEM, CONFLICT_SYSTEM, DREAM_SYSTEM, EXTRACT_SYSTEM, SUMMARIZE_SYSTEM};
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = std::fs::read_to_string(root.join("docs/llm.md")).expect("docs/llm.md");
    for (name, prompt) in [
        ("classify", CLASSIFY_SYSTEM),
        ("conflict", CONFLICT_SYSTEM),
        ("extract", EXTRACT_SYSTEM),
        ("summarize", SUMMARIZE_SYSTEM),
        ("dream", DREAM_SYSTEM),
    ] {
        assert!(
            doc.contains(&format!("```text\n{prompt}\n```")),
            "docs/llm.md does not show the {name} prompt as sent"
        );
    }
}
