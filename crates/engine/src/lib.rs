//! webtune-engine (being written).
