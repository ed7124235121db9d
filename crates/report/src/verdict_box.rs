//! The verdict box every report opens with (issue 39: the tune's "keep the default" came
//! after a climbing curve and a 30-row table): the answer, the interval it holds within,
//! and what to do, in that order, before any chart or table. As k6's end-of-test summary
//! leads with its thresholds' pass/fail and Optuna's dashboards with the best trial, the
//! reader gets the decision first and the evidence after. One shape for HTML (a bordered
//! box at the top of the page, drawn here) and text (three labelled lines). The value and its
//! text are `webtune_model::verdict`, so the search can state its verdict without this crate.

use crate::svg::escape;
pub use webtune_model::verdict::{Tone, VerdictBox};

/// The box drawn as HTML (a trait because the value lives in `webtune-model`).
pub trait VerdictHtml {
    /// The box as the first element of an HTML body (`id="verdict"`).
    fn html(&self) -> String;
}

impl VerdictHtml for VerdictBox {
    fn html(&self) -> String {
        let class = match self.tone {
            Tone::Good => "v-good",
            Tone::Neutral => "v-neutral",
            Tone::Bad => "v-bad",
        };
        let mut out = format!(
            "<div id=\"verdict\" class=\"verdict {class}\">\n<p class=\"answer\"><strong>{}</strong></p>\n",
            escape(&self.answer)
        );
        if let Some(interval) = &self.interval {
            out.push_str(&format!("<p class=\"interval\">{}</p>\n", escape(interval)));
        }
        out.push_str(&format!(
            "<p class=\"action\">What to do: {}</p>\n</div>\n",
            escape(&self.action)
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_box_says_answer_interval_and_action_in_that_order() {
        let v = VerdictBox {
            answer: "keep the default".into(),
            interval: Some("winner / default 0.97 … 1.04 (95% CI)".into()),
            action: "leave the config as it is".into(),
            tone: Tone::Neutral,
        };
        let html = v.html();
        let (a, i, w) = (
            html.find("keep the default").unwrap(),
            html.find("0.97").unwrap(),
            html.find("What to do").unwrap(),
        );
        assert!(a < i && i < w, "{html}");
        assert!(html.starts_with("<div id=\"verdict\" class=\"verdict v-neutral\">"));
        assert_eq!(
            v.text(),
            "Verdict: keep the default\n  winner / default 0.97 … 1.04 (95% CI)\n  What to do: leave the config as it is\n"
        );
    }
}
