//! Render one result in a format (`Format`'s names live in `webtune-model`, where the
//! command-line grammar reads them).

pub use webtune_model::format::{Format, UnknownFormat};
use webtune_model::RunResult;

/// Render one result in a format, with each layout's default options.
pub fn render(result: &RunResult, format: Format) -> String {
    match format {
        Format::Text => crate::text::render_text(result),
        Format::Ab => crate::ab::render_ab(result, &crate::ab::AbLayout::default()),
        Format::HttpLoad => crate::http_load::render_http_load(result),
        Format::Json => {
            let mut json = result.to_json_pretty();
            json.push('\n');
            json
        }
        Format::Csv => crate::csv::render_csv(&[result]),
        Format::Html => crate::html::render_html(result),
    }
}
