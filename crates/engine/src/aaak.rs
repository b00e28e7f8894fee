//! AAAK summaries of drawers ([`mempalace_core::aaak`]), kept in each
//! drawer's context under `aaak`.
//!
//! The Python MemPalace stores them in a second ChromaDB collection
//! (closets) that boosts its searches. We have no such collection and no
//! search reads summaries, so a summary is kept where it is honest to keep
//! it: beside the verbatim text it summarises, as derived context that
//! `get --json` and exports show and that can be recomputed at any time.
//! The drawer's text, id, vector and place never change.

use mempalace_core::aaak::{Dialect, Place, Stats, stats};
use mempalace_core::{DrawerId, DrawerStatus};
use serde_json::{Map, Value};

use crate::drawers::DrawerUpdate;
use crate::error::EngineResult;
use crate::palace::Palace;

/// The context key a summary is kept under.
pub const AAAK_KEY: &str = "aaak";

/// One drawer's summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The drawer.
    pub id: DrawerId,
    /// Its wing.
    pub wing: String,
    /// Its room.
    pub room: String,
    /// Its source file, if any.
    pub source_file: Option<String>,
    /// The AAAK text.
    pub aaak: String,
    /// Sizes before and after.
    pub stats: Stats,
    /// Whether the drawer's kept summary was written (new or different).
    pub stored: bool,
}

impl Palace {
    /// Summarises every visible drawer (of one wing) in AAAK, in id order;
    /// with `store`, keeps each summary in its drawer's context (a drawer
    /// whose kept summary is already the same is left alone).
    pub fn compress_drawers(&self, wing: Option<&str>, dialect: &Dialect, store: bool) -> EngineResult<Vec<Summary>> {
        let mut summaries = Vec::new();
        self.each_drawer(wing, &mut |drawer| {
            if drawer.status != DrawerStatus::Active {
                return Ok(());
            }
            let place = Place {
                source_file: drawer.source_file.as_deref().unwrap_or(""),
                wing: drawer.wing.as_str(),
                room: drawer.room.as_str(),
                date: drawer.content_date.as_deref().unwrap_or(""),
            };
            let aaak = dialect.compress(drawer.content.as_str(), &place);
            let kept = drawer.context.get(AAAK_KEY).and_then(Value::as_str);
            summaries.push(Summary {
                id: drawer.id.clone(),
                wing: drawer.wing.to_string(),
                room: drawer.room.to_string(),
                source_file: drawer.source_file.clone(),
                stats: stats(drawer.content.as_str(), &aaak),
                stored: store && kept != Some(aaak.as_str()),
                aaak,
            });
            Ok(())
        })?;
        for summary in summaries.iter().filter(|s| s.stored) {
            let mut context = Map::new();
            context.insert(AAAK_KEY.into(), Value::String(summary.aaak.clone()));
            self.update_drawer(&summary.id, DrawerUpdate { context, ..DrawerUpdate::default() })?;
        }
        Ok(summaries)
    }
}
