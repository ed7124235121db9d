//! The mail side of a lab Postfix run (`webtune lab run postfix`): acceptance (SMTP 250s)
//! and delivery (files in the Maildirs) apart, and the queue's peak and what a drain left,
//! from the result's `server.mail` section (`lab::servers::postfix`).

use webtune_model::server::MailSection;

/// Acceptance and delivery, apart.
pub fn mail_text(m: &MailSection) -> String {
    let mut text = format!(
        "\nMail: accepted {} (SMTP 250); delivered {} into the Maildirs ({} during the {:.1}s load: {:.1}/s)\n",
        m.accepted, m.delivered, m.delivered_in_load, m.load_s, m.delivered_per_s
    );
    let peak = m
        .samples
        .iter()
        .map(|s| s.incoming + s.active + s.deferred)
        .max()
        .unwrap_or(0);
    text.push_str(&format!(
        "Queue: peak {peak}; after a {:.1}s drain wait, left incoming {} active {} deferred {}\n",
        m.drain_s, m.left_incoming, m.left_active, m.left_deferred
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use webtune_model::server::MailSample;

    #[test]
    fn acceptance_and_delivery_are_said_apart_with_the_queue_left() {
        let m = MailSection {
            accepted: 40,
            delivered_in_load: 30,
            load_s: 2.0,
            delivered_per_s: 15.0,
            delivered: 38,
            drain_s: 1.5,
            left_incoming: 0,
            left_active: 2,
            left_deferred: 0,
            samples: vec![MailSample {
                t_s: 1.0,
                incoming: 3,
                active: 5,
                deferred: 1,
                delivered: 20,
            }],
        };
        let text = mail_text(&m);
        assert!(
            text.contains("accepted 40 (SMTP 250); delivered 38"),
            "{text}"
        );
        assert!(text.contains("(30 during the 2.0s load: 15.0/s)"), "{text}");
        assert!(text.contains("Queue: peak 9;"), "{text}");
        assert!(
            text.contains("left incoming 0 active 2 deferred 0"),
            "{text}"
        );
    }
}
