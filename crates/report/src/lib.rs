//! webtune-report (being written).
