//! `lab run fs` and `lab sweep fs` as a request: the file system's settings (checked, the
//! host-wide ones only with `host_sysctl`), made once, the workload run at each level on
//! it, and the file system gone afterwards on every path. The caller hears what a killed
//! run had left and this start put right (`reaped`).

use super::{run_workload, settings_for, RunningFs};
use crate::LabError;
use std::time::Duration;
use webtune_model::fs::{FsResult, FsSpec};
use webtune_model::StopToken;

/// A lab file system and how its workload is sampled.
#[derive(Debug, Clone)]
pub struct FsRequest {
    /// `NAME=VALUE` assignments (`lab params fs`).
    pub set: Vec<String>,
    /// The run may change host-wide sysctls (vm.dirty_*), put back at the end.
    pub host_sysctl: bool,
    /// Keep the private directory after the stop.
    pub keep: bool,
    /// The samples' period.
    pub interval: Duration,
}

impl FsRequest {
    fn start(&self, reaped: &mut dyn FnMut(&str)) -> Result<RunningFs, LabError> {
        let settings = settings_for(&self.set, self.host_sysctl)?;
        let fs = RunningFs::start(&settings, self.host_sysctl, self.keep)?;
        for line in fs.reaped() {
            reaped(line);
        }
        Ok(fs)
    }

    /// One run of `spec` on a file system made for it.
    pub fn run(
        &self,
        spec: &FsSpec,
        stop: &StopToken,
        reaped: &mut dyn FnMut(&str),
    ) -> Result<FsResult, LabError> {
        let fs = self.start(reaped)?;
        let result = run_workload(&fs, spec, stop, self.interval);
        let stopped = fs.stop();
        let result = result?;
        stopped?;
        Ok(result)
    }

    /// One file system, one run per spec (a sweep's levels), ending early (with the
    /// levels measured) when a stop is asked for.
    pub fn sweep(
        &self,
        specs: &[FsSpec],
        stop: &StopToken,
        reaped: &mut dyn FnMut(&str),
    ) -> Result<Vec<FsResult>, LabError> {
        let fs = self.start(reaped)?;
        let mut levels = Vec::new();
        let mut failure = None;
        for spec in specs {
            if stop.stop_requested() {
                break;
            }
            match run_workload(&fs, spec, stop, self.interval) {
                Ok(r) => levels.push(r),
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        fs.stop()?;
        match failure {
            Some(e) => Err(e),
            None => Ok(levels),
        }
    }
}
