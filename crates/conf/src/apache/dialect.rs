//! Which Apache the tree is written for, from the directives it uses: 2.4 (IncludeOptional,
//! MaxRequestWorkers, `Require all`, a loaded MPM module…) or 2.2 (MaxClients,
//! NameVirtualHost, LockFile, `Order`…). A 2.4 signal wins (2.4 still takes MaxClients and,
//! with mod_access_compat, `Order`); with neither, 2.4 is assumed and said so. A patch writer
//! names directives by the version (`name_for`): 2.2 does not know MaxRequestWorkers.

use crate::config::Directive;
use serde::Serialize;

/// The two Apache versions whose directive names differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum ApacheVersion {
    #[serde(rename = "2.2")]
    V22,
    #[default]
    #[serde(rename = "2.4")]
    V24,
}

/// The version a tree is written for, and why.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct ApacheDialect {
    pub version: ApacheVersion,
    /// The directive that says so, `NAME at FILE:LINE`, or why it is assumed.
    pub why: String,
    /// Nothing in the tree says: the version is assumed.
    pub assumed: bool,
}

/// 2.4's names for what 2.2 named otherwise.
const RENAMED: &[(&str, &str)] = &[
    ("MaxRequestWorkers", "MaxClients"),
    ("MaxConnectionsPerChild", "MaxRequestsPerChild"),
];

impl ApacheVersion {
    /// The name this version knows a directive by, given its 2.4 name
    /// (`MaxRequestWorkers` → `MaxClients` on 2.2).
    pub fn name_for(self, name_24: &str) -> &str {
        match self {
            ApacheVersion::V24 => name_24,
            ApacheVersion::V22 => RENAMED
                .iter()
                .find(|(new, _)| new.eq_ignore_ascii_case(name_24))
                .map_or(name_24, |(_, old)| old),
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            ApacheVersion::V22 => "Apache 2.2",
            ApacheVersion::V24 => "Apache 2.4",
        }
    }
}

impl std::fmt::Display for ApacheDialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.assumed {
            write!(f, "{} assumed ({})", self.version.label(), self.why)
        } else {
            write!(f, "{} ({})", self.version.label(), self.why)
        }
    }
}

/// Directives only 2.4 knows, and LoadModule identifiers only 2.4 has.
const ONLY_24: &[&str] = &[
    "MaxRequestWorkers",
    "MaxConnectionsPerChild",
    "IncludeOptional",
    "Mutex",
    "Define",
    "ErrorLogFormat",
    "GlobalLog",
    "AsyncRequestWorkerFactor",
    "Protocols",
];
const MODULES_24: &[&str] = &[
    "mpm_prefork_module",
    "mpm_worker_module",
    "mpm_event_module",
    "unixd_module",
    "authz_core_module",
    "access_compat_module",
    "slotmem_shm_module",
    "socache_shmcb_module",
];
/// Directives 2.4 removed (or only keeps for compatibility).
const ONLY_22: &[&str] = &[
    "NameVirtualHost",
    "LockFile",
    "DefaultType",
    "AcceptMutex",
    "MaxClients",
    "MaxRequestsPerChild",
    "Order",
];
const MODULES_22: &[&str] = &[
    "authz_default_module",
    "authn_alias_module",
    "mem_cache_module",
];

/// The version the directives read say.
pub(super) fn detect(directives: &[Directive]) -> ApacheDialect {
    let is = |d: &Directive, names: &[&str]| names.iter().any(|n| d.name.eq_ignore_ascii_case(n));
    let module = |d: &Directive, ids: &[&str]| {
        d.name.eq_ignore_ascii_case("LoadModule") && ids.iter().any(|m| d.value() == *m)
    };
    let require_all = |d: &Directive| {
        d.name.eq_ignore_ascii_case("Require")
            && matches!(d.value().to_ascii_lowercase().as_str(), "all")
    };
    let said = |d: &Directive| {
        let what = if d.name.eq_ignore_ascii_case("LoadModule")
            || d.name.eq_ignore_ascii_case("Require")
        {
            format!("{} {}", d.name, d.value())
        } else {
            d.name.clone()
        };
        format!("{what} at {}", d.at())
    };
    if let Some(d) = directives
        .iter()
        .find(|d| is(d, ONLY_24) || module(d, MODULES_24) || require_all(d))
    {
        return ApacheDialect {
            version: ApacheVersion::V24,
            why: said(d),
            assumed: false,
        };
    }
    if let Some(d) = directives
        .iter()
        .find(|d| is(d, ONLY_22) || module(d, MODULES_22))
    {
        return ApacheDialect {
            version: ApacheVersion::V22,
            why: said(d),
            assumed: false,
        };
    }
    ApacheDialect {
        version: ApacheVersion::V24,
        why: "no directive of the tree tells 2.2 from 2.4".into(),
        assumed: true,
    }
}
