//! webtune-serve (being written).
