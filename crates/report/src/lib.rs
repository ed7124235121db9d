//! webtune-report turns `RunResult`s into what people and programs read: the human text
//! summary, ab's, http_load's and postmark's output layouts, small-file (fs) results, JSON,
//! CSV, a self-contained HTML report with SVG plots, sweep tables and before → after
//! comparisons; and the pages of the search's values (`tune_html`: a tune's `TuneReport`;
//! `interleave_html`: a live comparison), which the search crate hands over and never draws.
//!
//! It measures nothing and does no network I/O; callers hand it results and write the
//! strings it returns where they like, or through `output` (the user's paths: checked before
//! a run, written atomically, a FIFO or device written through, stdout's closed pipe).
//! `saved` reads what was written back (capped, by its schema tag).

pub mod ab;
pub mod about;
pub mod capacity;
pub mod compare;
pub mod compare_figures;
pub mod compare_html;
pub mod compare_verdict;
pub mod csv;
pub mod dots;
pub mod format;
pub mod forum;
pub mod fs;
pub mod fs_device;
pub mod html;
pub mod http_load;
pub mod interleave_html;
pub mod journeys;
pub mod knee;
pub mod mail;
pub mod output;
pub mod postal;
pub mod postmark;
pub mod repeat;
pub mod saved;
pub mod server_plots;
pub mod server_summary;
pub mod smtp;
pub mod stats;
pub mod svg;
pub mod sweep;
pub mod sweep_verdict;
pub mod text;
mod text_parts;
pub mod timing;
pub mod tune_html;
pub mod units;
pub mod verdict_box;
pub mod verdicts;

pub use format::{render, Format};
pub use repeat::with_repeats;
pub use text::render_text;
