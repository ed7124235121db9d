//! The search's benchmark suite, kept out of the search library (issue 36 item 2): synthetic
//! servers with known optima that judge the samplers and the study. The named servers
//! (`suite_servers`, in `suite`'s form) and the seeded generated family (`surfaces`) are data
//! a Python port reads too; `suite_run` runs seeded studies on them and reads the pick at
//! several budgets; `synthetic` is the older single five-parameter server (also compiled into
//! the search crate's own unit tests, see its header). Only examples (`examples/`: suite,
//! family, halving, synthetic, decision_speed and the Python ports) and tests use this crate;
//! the binary never depends on it, and it never starts a process or loads a server.

pub mod suite;
pub mod suite_run;
pub mod suite_servers;
pub mod surfaces;
pub mod synthetic;

#[cfg(test)]
mod synthetic_tests;

#[cfg(test)]
mod tests {
    /// The header's promise, kept by the crate graph: the binary does not depend on the
    /// benchmarks (a dev-dependency for a test is allowed).
    #[test]
    fn the_binary_does_not_depend_on_the_benchmarks() {
        let manifest = include_str!("../../webtune/Cargo.toml");
        let deps = manifest
            .split("[dependencies]")
            .nth(1)
            .and_then(|rest| rest.split("\n[").next())
            .expect("a [dependencies] table");
        assert!(!deps.contains("search-bench"), "{deps}");
    }
}
