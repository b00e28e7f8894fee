//! Projects mode: which files of a project tree are mined.
//!
//! Docs first: Markdown, reStructuredText, AsciiDoc, Org and text; YAML
//! and TOML; a few well-known JSON manifests; shell scripts; Dockerfiles,
//! Makefiles, Justfiles; license, notice, readme and changelog files.
//! Source code only with `include_code`. Never: lockfiles, VCS and
//! dependency folders, build output, caches, binaries, files over 10 MB.
//! `.gitignore` files (nested ones too, and `.ignore`) are honoured unless
//! switched off; paths listed as `include_ignored` are mined anyway.

use std::path::{Path, PathBuf};

/// Largest file mined.
pub const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

const DOC_EXTENSIONS: &[&str] = &[
    "md", "mdx", "markdown", "rst", "adoc", "asciidoc", "org", "txt", "yaml", "yml", "toml", "sh", "bash", "zsh",
    "fish",
];
const JSON_MANIFESTS: &[&str] =
    &["package.json", "composer.json", "tsconfig.json", "deno.json", "manifest.json", "app.json"];
const PLAIN_NAMES: &[&str] = &["dockerfile", "makefile", "gnumakefile", "justfile", "containerfile", "procfile"];
const NAME_PREFIXES: &[&str] =
    &["license", "licence", "notice", "copying", "readme", "changelog", "authors", "contributing"];
const CODE_EXTENSIONS: &[&str] = &[
    "rs", "py", "js", "mjs", "cjs", "ts", "tsx", "jsx", "go", "java", "kt", "kts", "scala", "c", "h", "cc", "cpp",
    "hpp", "cs", "rb", "php", "swift", "m", "mm", "lua", "sql", "css", "scss", "sass", "less", "html", "vue", "svelte",
    "ex", "exs", "erl", "hs", "ml", "clj", "dart", "r", "jl", "zig", "nim", "pl", "ps1", "bat", "proto", "graphql",
    "tf",
];
const LOCKFILES: &[&str] = &[
    "cargo.lock",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "poetry.lock",
    "pipfile.lock",
    "go.sum",
    "composer.lock",
    "gemfile.lock",
    "bun.lockb",
    "uv.lock",
    "flake.lock",
    "mix.lock",
    "pubspec.lock",
];
/// Folders never entered.
pub const SKIPPED_DIRS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    "env",
    "node_modules",
    "target",
    "__pycache__",
    "build",
    "dist",
    "out",
    ".next",
    ".nuxt",
    ".cache",
    "coverage",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
    ".gradle",
    ".idea",
    ".vscode",
    "vendor",
    ".terraform",
];

/// How a file is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A document: mined by default.
    Doc,
    /// Source code: mined with `include_code`.
    Code,
    /// Never mined.
    Skip,
}

/// What a file is, by its name.
pub fn kind(path: &Path) -> Kind {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("").to_lowercase();
    if LOCKFILES.contains(&name.as_str())
        || name.ends_with(".lock")
        || mempalace_core::project::CONFIG_FILE_NAMES.contains(&name.as_str())
    {
        return Kind::Skip;
    }
    if JSON_MANIFESTS.contains(&name.as_str())
        || PLAIN_NAMES.iter().any(|p| name == *p || name.starts_with(&format!("{p}.")))
        || NAME_PREFIXES
            .iter()
            .any(|p| name == *p || name.starts_with(&format!("{p}.")) || name.starts_with(&format!("{p}-")))
    {
        return Kind::Doc;
    }
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_lowercase();
    if DOC_EXTENSIONS.contains(&extension.as_str()) {
        Kind::Doc
    } else if CODE_EXTENSIONS.contains(&extension.as_str()) {
        Kind::Code
    } else {
        Kind::Skip
    }
}

/// How to walk.
#[derive(Debug, Clone, Default)]
pub struct WalkOptions {
    /// Honour `.gitignore` / `.ignore` files.
    pub gitignore: bool,
    /// Mine these paths even when ignored.
    pub include_ignored: Vec<PathBuf>,
    /// Mine source code too.
    pub include_code: bool,
    /// Leave out paths matching these gitignore-style patterns (the
    /// project's `exclude_patterns`), relative to the project.
    pub exclude: Vec<String>,
}

/// The files to mine under `root`, sorted; an error when an exclude
/// pattern is not valid gitignore syntax.
pub fn walk(root: &Path, options: &WalkOptions) -> Result<Vec<PathBuf>, String> {
    let wanted = |path: &Path| match kind(path) {
        Kind::Doc => true,
        Kind::Code => options.include_code,
        Kind::Skip => false,
    };
    let build = |start: &Path, gitignore: bool| {
        let mut builder = ignore::WalkBuilder::new(start);
        builder
            .hidden(true)
            .git_ignore(gitignore)
            .git_exclude(gitignore)
            .ignore(gitignore)
            .git_global(false)
            .parents(gitignore)
            .require_git(false)
            .filter_entry(|entry| {
                let name = entry.file_name().to_str().unwrap_or("");
                !(entry.file_type().is_some_and(|t| t.is_dir()) && entry.depth() > 0 && SKIPPED_DIRS.contains(&name))
            });
        builder.build()
    };
    let mut excluded = ignore::gitignore::GitignoreBuilder::new(root);
    for pattern in &options.exclude {
        excluded.add_line(None, pattern).map_err(|error| {
            format!("exclude_patterns: {pattern:?} is not a gitignore pattern ({error}); fix it in mempalace.yaml")
        })?;
    }
    let excluded = excluded.build().map_err(|error| format!("exclude_patterns: {error}"))?;
    let mut files: Vec<PathBuf> = Vec::new();
    let mut collect = |start: &Path, gitignore: bool| {
        for entry in build(start, gitignore).filter_map(Result::ok) {
            let path = entry.path();
            let small = entry.metadata().is_ok_and(|m| m.is_file() && m.len() <= MAX_FILE_BYTES);
            let left_out = path.starts_with(root) && excluded.matched_path_or_any_parents(path, false).is_ignore();
            if small && wanted(path) && !left_out && !files.iter().any(|f| f == path) {
                files.push(path.to_path_buf());
            }
        }
    };
    collect(root, options.gitignore);
    for extra in &options.include_ignored {
        collect(&root.join(extra), false);
    }
    files.sort();
    Ok(files)
}

/// The project root of a file: the deepest folder above it holding `.git`
/// or a `.gitignore` (how `sync` scopes a file it was not told the project
/// of), if any.
pub fn project_root(file: &Path) -> Option<PathBuf> {
    file.ancestors()
        .skip(1)
        .find(|dir| dir.join(".git").exists() || dir.join(".gitignore").is_file())
        .map(Path::to_path_buf)
}

/// Whether the `.gitignore` and `.ignore` files from `root` down to the
/// file's folder exclude `file` (or a folder above it), the deepest file's
/// rule winning as in git. `file` must lie under `root`.
pub fn ignored_by_git(root: &Path, file: &Path) -> bool {
    let Ok(relative) = file.strip_prefix(root) else { return false };
    let mut folders = vec![root.to_path_buf()];
    let parts: Vec<_> = relative.components().collect();
    for part in parts.iter().take(parts.len().saturating_sub(1)) {
        let next = folders.last().expect("the root is there").join(part);
        folders.push(next);
    }
    for folder in folders.iter().rev() {
        let mut builder = ignore::gitignore::GitignoreBuilder::new(folder);
        for name in [".gitignore", ".ignore"] {
            let candidate = folder.join(name);
            if candidate.is_file() {
                let _ = builder.add(candidate);
            }
        }
        let Ok(matcher) = builder.build() else { continue };
        match matcher.matched_path_or_any_parents(file, false) {
            ignore::Match::Ignore(_) => return true,
            ignore::Match::Whitelist(_) => return false,
            ignore::Match::None => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitignore_rules_from_the_root_down_decide() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("docs/drafts")).unwrap();
        std::fs::create_dir_all(root.join("secret")).unwrap();
        std::fs::write(root.join(".gitignore"), "secret/\n*.log\n").unwrap();
        std::fs::write(root.join("docs/.gitignore"), "draft.md\n").unwrap();
        for file in ["README.md", "docs/draft.md", "docs/guide.md", "secret/keys.md", "run.log", "docs/drafts/a.md"] {
            std::fs::write(root.join(file), "x").unwrap();
        }
        assert!(!ignored_by_git(root, &root.join("README.md")));
        assert!(ignored_by_git(root, &root.join("docs/draft.md")));
        assert!(!ignored_by_git(root, &root.join("docs/guide.md")));
        assert!(ignored_by_git(root, &root.join("secret/keys.md")));
        assert!(ignored_by_git(root, &root.join("run.log")));
        assert!(!ignored_by_git(root, &root.join("docs/drafts/a.md")));
        assert_eq!(project_root(&root.join("docs/guide.md")).as_deref(), Some(root.join("docs").as_path()));
    }

    #[test]
    fn docs_first() {
        for doc in [
            "README.md",
            "docs/guide.rst",
            "LICENSE",
            "Dockerfile",
            "Makefile",
            "deploy.sh",
            "package.json",
            "conf.yaml",
        ] {
            assert_eq!(kind(Path::new(doc)), Kind::Doc, "{doc}");
        }
        for code in ["src/main.rs", "app.py", "index.tsx"] {
            assert_eq!(kind(Path::new(code)), Kind::Code, "{code}");
        }
        for skip in
            ["Cargo.lock", "package-lock.json", "image.png", "data.bin", "random.json", "mempalace.yaml", "mempal.yml"]
        {
            assert_eq!(kind(Path::new(skip)), Kind::Skip, "{skip}");
        }
    }
}
