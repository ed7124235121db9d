//! webtune-lab (being written).
