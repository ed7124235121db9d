//! The verdict a report opens with, as a value (issue 39): the answer, the interval it holds
//! within, and what to do. Here, below both, so the search (`webtune-search`) can say its
//! verdict without depending on the report renderer (issue 36 item 2); `webtune-report`'s
//! `verdict_box` draws it as HTML. The text form is three plain lines, so it lives with
//! the value.

/// Whether the answer is good news, bad news or a plain statement (the box's border).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Good,
    Neutral,
    Bad,
}

/// The answer, its interval and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerdictBox {
    /// One sentence: the answer to the question the report was run for.
    pub answer: String,
    /// The interval (or noise) the answer holds within, labelled with what it is; None when
    /// the report has none (say so in `answer`).
    pub interval: Option<String>,
    /// What to do about it.
    pub action: String,
    pub tone: Tone,
}

impl VerdictBox {
    /// The box as the first lines of a text report.
    pub fn text(&self) -> String {
        let mut out = format!("Verdict: {}\n", self.answer);
        if let Some(interval) = &self.interval {
            out.push_str(&format!("  {interval}\n"));
        }
        out.push_str(&format!("  What to do: {}\n", self.action));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_says_answer_interval_and_action_in_that_order() {
        let v = VerdictBox {
            answer: "keep the default".into(),
            interval: Some("winner / default 0.97 … 1.04 (95% CI)".into()),
            action: "leave the config as it is".into(),
            tone: Tone::Neutral,
        };
        assert_eq!(
            v.text(),
            "Verdict: keep the default\n  winner / default 0.97 … 1.04 (95% CI)\n  What to do: leave the config as it is\n"
        );
    }
}
