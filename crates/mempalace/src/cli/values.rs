//! Typed values of command-line flags: clap lists them in `--help`, refuses
//! anything else with the list of accepted values, and hands the commands
//! engine types. Old spellings stay accepted as hidden aliases.

use clap::ValueEnum;
use clap::builder::{PossibleValuesParser, TypedValueParser as _};
use mempalace_core::MemoryType;
use mempalace_core::layers::ResultLimit;
use mempalace_engine::Fusion;
use mempalace_mcp::registry::Profile;

/// `--fusion`: how keyword and vector matches are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum FusionArg {
    /// Keyword (BM25) and meaning (cosine) evidence weighted together (the default).
    #[default]
    Weighted,
    /// Reciprocal rank fusion of the keyword and vector rankings (k = 60).
    Rrf,
    /// Importance × recency × the better of similarity and graph match, plus agent affinity.
    #[value(name = "importance-recency", alias = "seed0")]
    ImportanceRecency,
}

impl From<FusionArg> for Fusion {
    fn from(value: FusionArg) -> Self {
        match value {
            FusionArg::Weighted => Fusion::Weighted,
            FusionArg::Rrf => Fusion::Rrf,
            FusionArg::ImportanceRecency => Fusion::Seed0,
        }
    }
}

impl FusionArg {
    /// The spelling on the command line (for reports).
    pub fn name(self) -> &'static str {
        match self {
            Self::Weighted => "weighted",
            Self::Rrf => "rrf",
            Self::ImportanceRecency => "importance-recency",
        }
    }
}

/// `--tools`: which MCP tool set a server offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ToolProfile {
    /// The Python MemPalace's `mempalace_*` tools (the default: what existing agent setups call).
    #[default]
    Mempalace,
    /// The `memory_*` tools.
    Memory,
    /// robotmem's tools (learn, recall, save_perception, …).
    Robotmem,
    /// Every tool.
    All,
}

impl From<ToolProfile> for Profile {
    fn from(value: ToolProfile) -> Self {
        match value {
            ToolProfile::Mempalace => Profile::Mempalace,
            ToolProfile::Memory => Profile::Memory,
            ToolProfile::Robotmem => Profile::Robotmem,
            ToolProfile::All => Profile::All,
        }
    }
}

/// `--type`: one of the memory types, listed from core's vocabulary.
pub fn memory_type() -> impl clap::builder::TypedValueParser<Value = MemoryType> {
    PossibleValuesParser::new(MemoryType::ALL.iter().map(|kind| kind.as_str()))
        .map(|text| text.parse::<MemoryType>().expect("clap admits only listed memory types"))
}

/// `--results`: a result limit as the engine accepts it (1–100).
pub fn result_limit(text: &str) -> Result<ResultLimit, String> {
    let value: i64 = text.trim().parse().map_err(|_| format!("{text:?} is not a number; give 1 to 100"))?;
    ResultLimit::new(value).map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Flags {
        #[arg(long, value_enum, default_value_t)]
        fusion: FusionArg,
        #[arg(long = "type", value_parser = memory_type())]
        memory_type: Option<MemoryType>,
    }

    #[test]
    fn old_and_new_spellings_parse_and_unknown_values_list_the_choices() {
        let parse = |args: &[&str]| Flags::try_parse_from(std::iter::once("x").chain(args.iter().copied()));
        assert_eq!(parse(&[]).unwrap().fusion, FusionArg::Weighted);
        assert_eq!(parse(&["--fusion", "importance-recency"]).unwrap().fusion, FusionArg::ImportanceRecency);
        assert_eq!(parse(&["--fusion", "seed0"]).unwrap().fusion, FusionArg::ImportanceRecency);
        let error = parse(&["--fusion", "nope"]).unwrap_err().to_string();
        assert!(
            error.contains("weighted") && error.contains("importance-recency") && !error.contains("seed0"),
            "{error}"
        );
        assert_eq!(parse(&["--type", "decision"]).unwrap().memory_type, Some(MemoryType::Decision));
        let error = parse(&["--type", "thought"]).unwrap_err().to_string();
        assert!(error.contains("preference") && error.contains("milestone"), "{error}");
    }
}

/// The Python MemPalace's write-routing flags of `mine` and `sweep`:
/// accepted, hidden, and without effect (every process writes a palace
/// safely here; there is no daemon to route to).
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct WriteRouting {
    /// Accepted for the Python MemPalace's write routing; every process writes safely here.
    #[arg(long, hide = true, conflicts_with = "direct")]
    daemon: bool,
    /// Accepted for the Python MemPalace's write routing (the only mode here).
    #[arg(long, hide = true)]
    direct: bool,
    /// Accepted for the Python MemPalace; run the command with `&`, or a scheduled job, instead.
    #[arg(long, hide = true)]
    background: bool,
}

impl WriteRouting {
    /// Says on stderr that `--daemon`/`--background` change nothing, when given.
    pub fn note_ignored(self) {
        if self.daemon || self.background {
            crate::output::note("--daemon/--background have no effect here: several processes write one palace safely");
        }
    }
}
