//! The forum database's parameters as the lab's commands name them: MariaDB's own
//! (`servers::mariadb`, where their ranges, defaults and rendering live) under the `db.`
//! prefix, which sends a `--set` to the database instead of the web stack.

use crate::params::{parse_assignment, ParamSpec, Settings};
use crate::servers::{mariadb::MariaDb, ServerType};
use crate::LabError;

/// The prefix that sends a `--set` to the database instead of the web stack.
pub const PREFIX: &str = crate::vocab::DB_PREFIX;

/// Every database parameter, with its `db.` name.
pub fn parameters() -> Vec<ParamSpec> {
    MariaDb
        .parameters()
        .into_iter()
        .map(|spec| spec.prefixed(PREFIX))
        .collect()
}

/// The `--set` assignments split into the web stack's and the database's (`db.*`).
pub fn split_assignments(assignments: &[String]) -> (Vec<String>, Vec<String>) {
    assignments
        .iter()
        .cloned()
        .partition(|a| !a.trim_start().starts_with(PREFIX))
}

/// Validate `db.NAME=VALUE` assignments: unknown names and bad values are refused with the
/// range, and combinations the server would quietly ignore are refused too.
pub fn settings_for(assignments: &[String]) -> Result<Settings, LabError> {
    let pairs: Vec<(String, String)> = assignments
        .iter()
        .map(|a| parse_assignment(a))
        .collect::<Result<_, _>>()?;
    let settings = Settings::from_assignments("mariadb", &parameters(), &pairs)?;
    MariaDb.check_settings(PREFIX, &settings)?;
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_bad_values_and_quiet_combinations() {
        assert!(settings_for(&["db.max_connections=5".into()])
            .unwrap_err()
            .to_string()
            .contains("10..=100000"));
        assert!(settings_for(&["db.innodb_buffer_pool_size=1G".into()]).is_err());
        assert!(settings_for(&["db.nonsense=1".into()]).is_err());
        let err = settings_for(&[
            "db.query_cache_type=ON".into(),
            "db.query_cache_size=0".into(),
        ])
        .unwrap_err();
        assert!(err.to_string().contains("db.query_cache_size"), "{err}");
        assert!(settings_for(&["db.thread_pool_size=4".into()]).is_err());
        settings_for(&[
            "db.thread_handling=pool-of-threads".into(),
            "db.thread_pool_size=4".into(),
        ])
        .unwrap();
    }

    #[test]
    fn splits_database_assignments() {
        let (web, db) = split_assignments(&[
            "MaxRequestWorkers=4".into(),
            "db.max_connections=300".into(),
        ]);
        assert_eq!(web, vec!["MaxRequestWorkers=4".to_string()]);
        assert_eq!(db, vec!["db.max_connections=300".to_string()]);
    }
}
